"""`HybridRetriever` on fakes: BM25 finds what only the words give away, the other ranking what only the
embedding does, fused; `k` and the filter at construction and per call, in both halves."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from pydantic import ValidationError

from crag import HybridRetriever
from tests.fakes import ListRetriever, WordEmbeddings

DOCS = [
    Document(
        page_content="Use --porcelain for output scripts can parse.", metadata={"title": "git status", "team": "a"}
    ),
    Document(page_content="Anna Berg painted the sea near Stockholm.", metadata={"title": "Anna Berg", "team": "a"}),
    Document(page_content="The porcelain of Meissen is famous.", metadata={"title": "Meissen", "team": "b"}),
    Document(page_content="Carl Dahl plays football in Oslo.", metadata={"title": "Carl Dahl", "team": "b"}),
]


class Only(ListRetriever):
    """The other ranking, as a retriever that always returns its list (BM25 must add the rest)."""


def hybrid(**kwargs) -> HybridRetriever:
    return HybridRetriever(documents=DOCS, retriever=Only(documents=[DOCS[1]]), **kwargs)


def test_bm25_adds_what_the_other_ranking_missed_and_both_come_first():
    found = hybrid(k=4).invoke("porcelain painted")
    texts = [d.page_content for d in found]
    assert texts[0] == DOCS[1].page_content  # in both rankings
    assert set(texts[1:]) == {DOCS[0].page_content, DOCS[2].page_content}  # BM25's, sharing "porcelain"


def test_k_at_construction_and_per_call():
    assert len(hybrid(k=1).invoke("porcelain painted")) == 1
    assert len(hybrid(k=1).invoke("porcelain painted", k=2)) == 2


def test_the_filter_keeps_both_halves_to_matching_documents():
    team_b = hybrid(k=4, filter={"team": "b"}).invoke("porcelain painted")
    assert [d.page_content for d in team_b] == [DOCS[2].page_content]  # Anna (team a) dropped from the other half
    per_call = hybrid(k=4).invoke("porcelain painted", filter={"team": "a"})
    assert {d.metadata["team"] for d in per_call} == {"a"}
    assert hybrid(k=4, filter={"team": "a"}).invoke("porcelain", filter={"team": "b"}) == []  # ANDed: nothing


def test_a_vector_store_gets_the_filter_in_its_search():
    store = InMemoryVectorStore.from_documents(DOCS, WordEmbeddings())
    found = HybridRetriever(documents=DOCS, retriever=store, k=4, filter={"team": ["b"]}).invoke("Anna Berg sea")
    assert found and {d.metadata["team"] for d in found} == {"b"}


def test_bad_arguments_are_refused_saying_why():
    with pytest.raises(ValidationError, match="a name is 1-64"):
        hybrid(filter={"$or": 1})
    with pytest.raises(ValidationError, match="LangChain retriever or vector store"):
        HybridRetriever(documents=DOCS, retriever="chroma")
    with pytest.raises(ValueError, match="a list holds"):
        hybrid().invoke("x", filter={"team": []})
    assert HybridRetriever(documents=[], retriever=Only(documents=[DOCS[1]])).invoke("porcelain") == [DOCS[1]]
