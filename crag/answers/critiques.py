"""Self-RAG's segment score (Asai et al. 2023): how its candidates, one answer per passage, are ranked by their
critiques, and the evaluator-and-grounding stand-ins for the reader's critiques.

The score is that of Self-RAG's short-form inference (github.com/AkariAsai/self-rag,
retrieval_lm/run_short_form.py, `call_model_rerank_w_scores_batch`), each critique's probabilities normalised
over its own labels:

    score = w_rel * P(relevant)
          + w_sup * (P(fully supported) + 0.5 * P(partially supported))
          + w_use * sum_i u_i * P(utility i),   u = (-1, -0.5, 0, 0.5, 1) for utility 1..5

A critique that was not read counts 0 (their code's `ground_score` and `utility_score` without the tokens).
The weights are the paper's default configuration (§4.2: ISREL 1.0, ISSUP 1.0, ISUSE 0.5), which are also
`call_model_rerank_w_scores_batch`'s defaults; the script's command line passes its own `--w_use`, default 1.0.
Their optional `--use_seqscore` term (the exp of the answer's mean token log-probability) is not added.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crag.records import Citation

W_REL, W_SUP, W_USE = 1.0, 1.0, 0.5
UTILITY = (-1.0, -0.5, 0.0, 0.5, 1.0)  # ISUSE 1..5 on [-1, 1], as their code maps it


def segment_score(relevant: float, support: Sequence[float], usefulness: Sequence[float]) -> float:
    """The score of a candidate: P(relevant); P(fully, partially, no support); P(utility 1 … 5) (either may be
    empty: not read)."""
    ground = support[0] + 0.5 * support[1] if support else 0.0
    utility = sum(u * p for u, p in zip(UTILITY, usefulness, strict=True)) if usefulness else 0.0
    return W_REL * relevant + W_SUP * ground + W_USE * utility


def best(candidates: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The best-scoring candidate, the earlier passage on a tie; None when there is none."""
    return max(candidates, key=lambda c: (c["score"], -c["n"]), default=None)


def relevance_of(score: float) -> float:
    """The evaluator's score (-1 … 1) as P(relevant), for ISREL."""
    return min(1.0, max(0.0, (score + 1.0) / 2.0))


def support_of(citations: Sequence[Citation]) -> list[float]:
    """The grounding check as ISSUP: fully supported when every sentence of the answer rests on the passage,
    partially when some does, no support when none does (or the answer declined)."""
    cited = sum(1 for c in citations if c["sources"])
    if citations and cited == len(citations):
        return [1.0, 0.0, 0.0]
    return [0.0, 1.0, 0.0] if cited else [0.0, 0.0, 1.0]


__all__ = ["W_REL", "W_SUP", "W_USE", "best", "segment_score"]  # what callers outside the package use
