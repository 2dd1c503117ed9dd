"""Metadata filters on real stores: an embedded Chroma folder (crag's own search, both halves of the hybrid)
and Qdrant in local mode on disk (LangChain's QdrantVectorStore), directly, as a retriever and under
HybridRetriever. Word-vector embeddings (`tests.fakes`): what is checked is the filter, not the ranking."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from crag import HybridRetriever, resources
from crag.search import keywords
from crag.search.store import open_store, retrieve
from crag.settings import Context
from tests.fakes import WordEmbeddings

# Bob's chunk holds the question's rare word: BM25 ranks it first for anyone, so a filter that only reached
# the embedding's half would leak it
CHUNKS = {
    "a1": ("Alice keeps her tax notes in the blue folder.", {"owner": "alice", "year": 2024, "draft": False}),
    "a2": ("Alice's garden has tomatoes and beans.", {"owner": "alice", "year": 2023, "draft": True}),
    "b1": ("The zq7 archive holds Bob's tax returns.", {"owner": "bob", "year": 2024, "draft": False}),
    "b2": ("Bob's tax notes mention the zq7 code twice: zq7.", {"owner": "bob", "year": 2022, "draft": False}),
}
QUESTION = "Where are the zq7 tax notes?"


def documents() -> list[Document]:
    return [
        Document(text, metadata={"title": "", "source": f"{key}.txt", "score": 0.5, **meta}, id=key)
        for key, (text, meta) in CHUNKS.items()
    ]


def owners(found: list[Document]) -> set[str]:
    return {d.metadata["owner"] for d in found}


@pytest.fixture
def chroma(tmp_path):
    keywords._INDEXES.clear()
    store = open_store(persist_dir=tmp_path / "db", collection="notes", embedder=WordEmbeddings())
    store.add_documents(documents(), ids=list(CHUNKS))
    yield store
    keywords._INDEXES.clear()


@pytest.mark.parametrize("search", ["hybrid", "dense"])
def test_chroma_returns_only_the_filters_chunks_in_both_halves(chroma, search):
    assert "bob" in owners(retrieve(chroma, QUESTION, k=2, search=search))  # unfiltered, Bob's come first
    mine = retrieve(chroma, QUESTION, k=4, search=search, wanted={"owner": "alice"})
    assert owners(mine) == {"alice"} and len(mine) == 2
    assert [d.id for d in retrieve(chroma, QUESTION, k=4, search=search, wanted={"owner": "bob", "year": [2022]})] == [
        "b2"
    ]
    assert retrieve(chroma, QUESTION, k=4, search=search, wanted={"owner": "carol"}) == []
    assert {d.id for d in retrieve(chroma, QUESTION, k=4, search=search, wanted={"draft": True})} == {"a2"}


def test_the_context_filter_reaches_the_chroma_collection(tmp_path, chroma):
    ctx = Context(chroma_dir=str(tmp_path / "db"), collection="notes", embeddings=WordEmbeddings(), k=4)
    assert "bob" in owners(resources.retrieve(ctx, QUESTION))
    ctx.filter = {"owner": "alice"}
    assert owners(resources.retrieve(ctx, QUESTION)) == {"alice"}


@pytest.fixture
def qdrant(tmp_path):
    from langchain_qdrant import QdrantVectorStore

    store = QdrantVectorStore.from_documents(
        documents(), WordEmbeddings(), path=str(tmp_path / "qdrant"), collection_name="notes", ids=None
    )
    yield store
    store.client.close()


def test_qdrant_on_disk_searches_with_the_filter_as_a_store_and_as_a_retriever(qdrant):
    for source in (qdrant, qdrant.as_retriever(search_kwargs={"k": 4})):
        ctx = Context(retriever=source, k=4)
        assert owners(resources.retrieve(ctx, QUESTION)) == {"alice", "bob"}
        ctx.filter = {"owner": "alice"}
        assert owners(resources.retrieve(ctx, QUESTION)) == {"alice"}
        ctx.filter = {"owner": ["bob", "carol"], "year": [2022, 2023], "draft": False, "score": 0.5}
        assert [d.page_content for d in resources.retrieve(ctx, QUESTION)] == [CHUNKS["b2"][0]]
        ctx.filter = {"draft": [True, "no"]}
        assert [d.page_content for d in resources.retrieve(ctx, QUESTION)] == [CHUNKS["a2"][0]]


def test_hybrid_retriever_over_qdrant_keeps_bm25_to_the_filter(qdrant):
    hybrid = HybridRetriever(documents=documents(), retriever=qdrant, k=4)
    assert owners(hybrid.invoke(QUESTION, k=1)) == {"bob"}  # the rare word wins unfiltered
    assert owners(hybrid.invoke(QUESTION, filter={"owner": "alice"})) == {"alice"}
    ctx = Context(retriever=hybrid, filter={"owner": "alice"}, k=4)
    assert owners(resources.retrieve(ctx, QUESTION)) == {"alice"}
