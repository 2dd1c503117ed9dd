"""Ranking BM25 hits and fusing rankings by reciprocal rank: the project's hybrid search (embeddings and
BM25), its local web backend and the evaluator's training retrieval
(`lab.evaluator.generated_pairs`) rank and fuse the same way."""

from __future__ import annotations

import numpy as np

# Reciprocal rank fusion's constant: a chunk at rank r of a list earns 1 / (RRF_K + r). 60 is Cormack,
# Clarke and Büttcher's (SIGIR 2009) and LangChain's EnsembleRetriever's; it keeps one list's top hit
# from outweighing a chunk that both lists rank well.
RRF_K = 60


def fuse(*rankings: list[str]) -> list[str]:
    """Ids ordered by reciprocal rank fusion of several rankings (best first in each); ties keep the
    order in which the ids were first met, the first ranking's before the second's.

    Hand-written: LangChain's EnsembleRetriever does the same over two retrievers, but it would need
    a BM25 retriever holding every text of the collection as Documents (rank_bm25, pure Python)."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking):
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores, key=lambda key: -scores[key])


def best(scores: np.ndarray, n: int) -> list[int]:
    """Positions of the `n` highest BM25 scores, best first (ties in index order), without those at 0:
    a document sharing no word with the query is no hit."""
    return [int(i) for i in np.argsort(-scores, kind="stable")[:n] if scores[i] > 0]


__all__ = ["best", "fuse"]  # what callers outside the package use
