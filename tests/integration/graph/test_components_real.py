"""The components on the shipped evaluator, the way an app uses them: a reranker inside LangChain's
ContextualCompressionRetriever, and CRAG's correction around a retriever over Chroma on disk."""

from __future__ import annotations

import pytest
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.documents import Document

from crag.components import CRAGCompressor, CRAGRetriever
from crag.indexing.pipeline import ingest
from crag.search.store import open_store
from crag.settings import Context
from tests.fakes import ListRetriever

PASSAGES = {
    "Ada Lovelace": "Ada Lovelace was an English mathematician and writer, known for her work on the Analytical Engine.",
    "Oslo": "Oslo is the capital and most populous city of Norway, at the head of the Oslofjord.",
    "Photosynthesis": "Photosynthesis is the process by which plants turn light, water and carbon dioxide into sugar.",
}


def test_the_shipped_evaluator_reranks_inside_contextual_compression():
    documents = [Document(page_content=text, metadata={"title": title}) for title, text in PASSAGES.items()]
    retriever = ContextualCompressionRetriever(
        base_compressor=CRAGCompressor(keep="all"), base_retriever=ListRetriever(documents=documents[::-1])
    )
    found = retriever.invoke("What was Ada Lovelace's occupation?")
    assert found[0].metadata["title"] == "Ada Lovelace" and found[0].metadata["crag_label"] != "incorrect"
    order = [d.metadata["selection_score"] for d in found]  # the evaluator's, shifted by each one's standing
    assert order == sorted(order, reverse=True)
    assert all(-1 <= d.metadata["relevance_score"] <= 1 and -1 <= d.metadata["selection_score"] <= 1 for d in found)
    assert found[-1].metadata["crag_label"] == "incorrect"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("kb")
    for title, text in PASSAGES.items():
        (root / f"{title}.txt").write_text(text)
    store = open_store(persist_dir=root / "db", collection="components")
    ingest([root], store, progress=False)
    return store


def test_the_retriever_corrects_a_chroma_retriever(store):
    corrected = CRAGRetriever(retriever=store.as_retriever(search_kwargs={"k": 3}), context=Context(web_backend="none"))
    found = corrected.invoke("What was Ada Lovelace's occupation?")
    assert found and found[0].metadata["crag_action"] in ("correct", "ambiguous")
    assert "mathematician" in " ".join(d.page_content for d in found)
    assert {d.metadata["title"] for d in found} == {"Ada Lovelace"}
    assert found[0].metadata["source"].endswith("Ada Lovelace.txt")
