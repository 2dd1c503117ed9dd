"""A BM25 index of a Chroma collection's chunks, for hybrid retrieval: it finds what only the words give
away (`--porcelain`, a rare name). Chroma has no ranked full-text search, so it is built here on first use
and rebuilt when the chunk count changes; it holds ids only, and hits are read back from Chroma."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from crag.fusion import best
from crag.runtime.cache import ResourceCache
from crag.text import terms

if TYPE_CHECKING:
    from langchain_chroma import Chroma

logger = logging.getLogger(__name__)

# above this many chunks the index is not built (every text would be read into memory)
MAX_CHUNKS = 200_000
PAGE = 5_000  # chunks read from Chroma per request while building


@dataclass(frozen=True)
class KeywordIndex:
    ids: list[str]
    retriever: Any  # bm25s.BM25

    def search(self, query: str, n: int, allowed: set[str] | None = None) -> list[str]:
        """Ids of the `n` best chunks for `query` by BM25 sharing a word with it, best first; with `allowed`,
        only chunks of those ids (a metadata filter's) are ranked."""
        tokens = terms(query)
        if not tokens or not self.ids or allowed == set():
            return []
        scores = self.retriever.get_scores(tokens)
        if allowed is not None:
            scores = np.where(np.fromiter((i in allowed for i in self.ids), bool, len(self.ids)), scores, 0.0)
        return [self.ids[i] for i in best(scores, n)]


# collection id -> index, stamped with the chunk count it was built from
_INDEXES: ResourceCache[str, KeywordIndex | None] = ResourceCache("keyword_index", counted=False)


def _document_terms(text: str, metadata: dict | None) -> list[str]:
    title = str((metadata or {}).get("title") or "")
    return terms(f"{title} {text}" if title else text)


def build(collection: Any, count: int) -> KeywordIndex | None:
    """The index of every chunk of a Chroma collection, or None when it holds more than `MAX_CHUNKS`."""
    import bm25s

    if count > MAX_CHUNKS:
        logger.warning(
            "the collection %r holds %d chunks, more than the %d that keyword search indexes in memory: "
            "it is searched by embedding alone",
            collection.name,
            count,
            MAX_CHUNKS,
        )
        return None
    ids: list[str] = []
    corpus: list[list[str]] = []
    for offset in range(0, count, PAGE):
        page = collection.get(include=["documents", "metadatas"], limit=PAGE, offset=offset)
        for chunk_id, text, metadata in zip(page["ids"], page["documents"], page["metadatas"], strict=True):
            ids.append(chunk_id)
            corpus.append(_document_terms(text or "", metadata))
    retriever = bm25s.BM25()
    if ids:
        retriever.index(corpus, show_progress=False)
    return KeywordIndex(ids, retriever)


def index_of(store: Chroma) -> KeywordIndex | None:
    """The (cached) keyword index of a Chroma store's collection; None when it is too large."""
    collection = store._collection  # LangChain's Chroma exposes no public handle on its collection
    count = collection.count()
    return _INDEXES.get(str(collection.id), lambda: build(collection, count), stamp=count)


__all__ = ["index_of"]  # what callers outside the package use
