"""`HybridRetriever`: BM25 keywords over your documents and any LangChain retriever or vector store, fused by
reciprocal rank (`crag.fusion`), as crag's own Chroma search fuses them (`crag.search.store`).

Why not LangChain's `EnsembleRetriever` (langchain-classic) with a `BM25Retriever`: that one calls its
retrievers without the call's arguments, so neither `k` nor a metadata filter reaches them, and it returns
the union of their results rather than `k`; its BM25Retriever needs langchain-community and rank_bm25, and
cannot be filtered. This one ranks with bm25s (already crag's), takes `k` and `filter` at construction and
per call (`invoke(query, k=3, filter={"lang": "en"})`), and filters both halves: BM25 ranks only the
documents that match, the other half gets the filter in its own store's words (`crag.search.filters`).
"""

from __future__ import annotations

import sys
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore, VectorStoreRetriever
from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from crag.fusion import best, fuse
from crag.search import filters
from crag.search.filters import Filter
from crag.text import terms

FETCH = 2  # documents asked of each half per document returned, so that fusion has two rankings to weigh


def _terms(document: Document) -> list[str]:
    title = str(document.metadata.get("title") or "")
    return terms(f"{title} {document.page_content}" if title else document.page_content)


class HybridRetriever(BaseRetriever):
    """BM25 over `documents` (their title and text) and `retriever` (a LangChain retriever or vector store,
    usually over the same documents), fused by reciprocal rank; the `k` best, each text once.

    `filter`: only documents whose metadata match it (`crag.search.filters`: `{"field": value}`, a list for
    any of several values); a filter given per call is ANDed with it.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    documents: list[Document] = Field(description="The documents BM25 ranks (those the retriever searches).")
    retriever: Any = Field(description="A LangChain retriever or vector store: the other ranking.")
    k: int = Field(default=4, ge=1, description="Documents returned.")
    filter: dict[str, Any] | None = Field(default=None, description="A metadata filter (crag.search.filters).")

    _index: Any = PrivateAttr(default=None)

    @field_validator("filter", mode="before")
    @classmethod
    def _checked(cls, value: Any) -> Filter | None:
        return filters.check_filter(value)

    @field_validator("retriever")
    @classmethod
    def _searches(cls, value: Any) -> Any:
        if not (hasattr(value, "invoke") or hasattr(value, "similarity_search")):
            raise ValueError(f"retriever must be a LangChain retriever or vector store, got {type(value).__name__}")
        return value

    def model_post_init(self, __context: Any) -> None:
        import bm25s

        if self.documents:
            self._index = bm25s.BM25()
            self._index.index([_terms(d) for d in self.documents], show_progress=False)

    def _keywords(self, query: str, n: int, wanted: Filter | None) -> list[Document]:
        tokens = terms(query)
        if self._index is None or not tokens:
            return []
        scores = self._index.get_scores(tokens)
        for i, document in enumerate(self.documents):  # BM25 ranks only what the filter admits
            if not filters.matches(document.metadata, wanted):
                scores[i] = 0.0
        return [self.documents[i] for i in best(scores, n)]

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: Any = None,
    ) -> list[Document]:
        k = self.k if k is None else k
        try:
            wanted = filters.combine(self.filter, filters.check_filter(filter))
        except filters.Contradiction:
            return []  # the two filters admit nothing together
        config = {"callbacks": run_manager.get_child()}
        dense = filtered_search(self.retriever, query, FETCH * k, wanted, config=config)
        lexical = self._keywords(query, FETCH * k, wanted)
        found: dict[str, Document] = {}
        for document in [*dense, *lexical]:
            found.setdefault(document.page_content, document)
        order = fuse([d.page_content for d in dense], [d.page_content for d in lexical])
        return [found[text] for text in order[:k]]


def _loaded(module: str, name: str) -> Any:
    """A class of an integration, when it is imported (a store of it cannot exist otherwise)."""
    return getattr(sys.modules.get(module), name, None)


def store_filter(store: Any, wanted: Filter | None) -> Any:
    """The filter as `store.similarity_search(filter=...)` takes it: Chroma's `where`, Qdrant's `Filter`,
    LangChain's `InMemoryVectorStore` a function of a Document, and the mapping itself for any other vector
    store (most take an equality mapping: check yours)."""
    if isinstance(store, InMemoryVectorStore):
        return lambda document: filters.matches(document.metadata, wanted)
    chroma = _loaded("langchain_chroma", "Chroma")
    qdrant = _loaded("langchain_qdrant", "QdrantVectorStore")
    if chroma is not None and isinstance(store, chroma):
        return filters.chroma_where(wanted)
    if qdrant is not None and isinstance(store, qdrant):
        return filters.qdrant_filter(wanted, store.metadata_payload_key)
    return dict(wanted) if wanted else None


def filtered_search(source: Any, query: str, k: int, wanted: Filter | None = None, config: Any = None) -> list:
    """The documents of any LangChain vector store or retriever for `query`, with the filter applied: a vector
    store's `k` nearest matching it; a `VectorStoreRetriever` searching its store with it; a `HybridRetriever`
    given `k` and the filter; any other retriever's own results kept where they match (it returns its own
    number, so a filter can leave fewer than `k`: give it a larger k). `config` goes to a retriever's invoke."""
    if isinstance(source, VectorStore):
        extra = {"filter": store_filter(source, wanted)} if wanted else {}
        return source.similarity_search(query, k=k, **extra)
    if isinstance(source, VectorStoreRetriever):
        extra = {"filter": store_filter(source.vectorstore, wanted)} if wanted else {}
        return list(source.invoke(query, config, **extra))
    if isinstance(source, HybridRetriever):
        return list(source.invoke(query, config, k=k, filter=wanted))
    return [d for d in source.invoke(query, config) if filters.matches(d.metadata, wanted)]


__all__ = ["HybridRetriever", "filtered_search", "store_filter"]
