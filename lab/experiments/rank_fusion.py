"""Would the grade order the retrieved documents better fused with the retriever's own order?

On the documentation set the retriever's rank orders the retrieved chunks better than the evaluator does
(docs/reports/2026-11-29-what-holds-the-evaluator-back.md); on PopQA the evaluator is far ahead. Rank
fusion is the IR literature's plain way to combine two rankers without a shared scale (reciprocal rank
fusion, Cormack et al. 2009; the project's hybrid search already fuses BM25 and embeddings with it). This
reads the CRAG records of `crag eval run` folders, which hold every retrieved document's evaluator score in
retrieval order and whether it holds an answer string, and scores several orders of the same documents.
Nothing is asked of a model: the scores are the run's own.

For each order: ROC-AUC over all documents pooled, the mean of each question's own ROC-AUC (the ranking
within a question, which is what choosing documents uses; questions with documents of one label only are
left out), and how often the order's first document holds an answer. The interval of "order − evaluator"
is a 95% bootstrap over questions (2,000 resamples).

    python -m lab.experiments.rank_fusion artifacts/eval/models/local-docs-k10 artifacts/eval/models/local-popqa-k10
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # answer_rules: a script of lab/benchmarks/

from answer_rules import recorded

from crag.fusion import RRF_K  # the hybrid search's constant, and its ranks from 0


def reciprocal(values: np.ndarray) -> np.ndarray:
    """1 / (RRF_K + the rank of each value), the largest value ranked first."""
    ranks = np.argsort(np.argsort(-values, kind="stable"), kind="stable")
    return 1.0 / (RRF_K + ranks)


# order name -> a document's sort value (larger first) from the evaluator's scores in retrieval order
ORDERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "evaluator score (shipped)": lambda s: s,
    "retrieval rank": lambda s: -np.arange(len(s), dtype=float),
    "score - 0.1 x rank": lambda s: s - 0.1 * np.arange(len(s)),
    "score - 0.2 x rank": lambda s: s - 0.2 * np.arange(len(s)),
    "reciprocal rank fusion": lambda s: reciprocal(s) + reciprocal(-np.arange(len(s), dtype=float)),
}


def per_question(questions: list[tuple[np.ndarray, np.ndarray]], order: Callable) -> np.ndarray:
    """Each question's own ROC-AUC (nan for one label only) and top-1 hit, a row per question."""
    rows = []
    for s, y in questions:
        v = order(s)
        auc = roc_auc_score(y, v) if 0 < y.sum() < len(y) else np.nan
        rows.append((auc, y[int(np.argmax(v))]))
    return np.array(rows, dtype=float)


def pooled(questions: list[tuple[np.ndarray, np.ndarray]], order: Callable) -> float:
    """ROC-AUC of `order` over every document of every question at once."""
    labels = np.concatenate([y for _, y in questions])
    return roc_auc_score(labels, np.concatenate([order(s) for s, _ in questions]))


def interval(diff: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    means = [np.nanmean(diff[rng.integers(0, len(diff), len(diff))]) for _ in range(2000)]
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="`crag eval run` output folders with CRAG records")
    args = parser.parse_args()
    for folder in args.folders:
        _, records = recorded(folder, "crag")
        questions = [
            (np.array(r["scores"], dtype=float), np.array(r["documents_with_answer"], dtype=int))
            for r in records
            if r["answerable"]
            and any(r["documents_with_answer"])
            and len(r["scores"]) == len(r["documents_with_answer"])
        ]
        print(f"\n{folder}: {len(questions)} answerable questions with an answer among the retrieved documents")
        print(
            f"{'order':28s} {'pooled AUC':>10s} {'per-question AUC':>16s} {'top-1':>6s}   vs evaluator, per-question AUC / top-1 [95%]"
        )
        base = per_question(questions, ORDERS["evaluator score (shipped)"])
        for name, order in ORDERS.items():
            rows = per_question(questions, order)
            line = (
                f"{name:28s} {pooled(questions, order):10.3f} {np.nanmean(rows[:, 0]):16.3f} {rows[:, 1].mean():6.3f}"
            )
            if name != "evaluator score (shipped)":
                diff = rows - base
                rng = np.random.default_rng(0)
                (a_lo, a_hi), (t_lo, t_hi) = interval(diff[:, 0], rng), interval(diff[:, 1], rng)
                line += (
                    f"   {np.nanmean(diff[:, 0]):+.3f} [{a_lo:+.3f}, {a_hi:+.3f}]"
                    f" / {np.mean(diff[:, 1]):+.3f} [{t_lo:+.3f}, {t_hi:+.3f}]"
                )
            print(line)


if __name__ == "__main__":
    main()
