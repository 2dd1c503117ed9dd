"""Ranking BM25 hits and fusing rankings by reciprocal rank, shared by every hybrid search."""

from __future__ import annotations

import numpy as np

# rank r earns 1 / (RRF_K + r); 60 is Cormack et al.'s (SIGIR 2009) and LangChain's EnsembleRetriever's
RRF_K = 60


def fuse(*rankings: list[str]) -> list[str]:
    """Ids by reciprocal rank fusion of rankings (best first); ties keep first-met order.
    Hand-written: EnsembleRetriever would need every text of the collection as Documents in rank_bm25."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking):
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores, key=lambda key: -scores[key])


def best(scores: np.ndarray, n: int) -> list[int]:
    """Positions of the `n` highest BM25 scores, best first, without those at 0 (no word shared)."""
    return [int(i) for i in np.argsort(-scores, kind="stable")[:n] if scores[i] > 0]


__all__ = ["best", "fuse"]  # what callers outside the package use
