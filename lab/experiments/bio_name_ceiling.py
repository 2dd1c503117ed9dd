"""What a titleless Bio passage can tell a pointwise scorer (issue 10's "≥ 0.85 titleless" target).

CRAG's Bio questions are "Who is X?" (or, phrased, "tell me about X"): the question says nothing of X
but the name, and a passage is relevant when it comes from X's own Wikipedia page. Without the page's
title, what links a passage to X is how it names X, and Contriever's top 10 for a name holds passages
of other pages that name X as fully (a team's roster, a namesake's page, a family member's). This
script measures how far that evidence goes, on the validation half of the questions the benchmark
grades (`lab.datasets.relevance.bio_slices`):

- **name evidence**: each pair falls in a cell by how the passage names X (the whole name; how often
  its last word; its first word; the name among the first words), and the cells are ordered by their
  share of relevant passages. In-sample (rates from the same pairs: optimistic, an upper figure for
  these features) and cross-fitted (each half of the questions ranked by the other half's rates).
- **the shipped evaluator** on the same pairs, with and without titles, beside it, and the evaluator's
  order within each name cell (is there anything it reads beyond the name?).

Every ROC-AUC has a 95% interval from 1,000 bootstrap resamples of the questions (`evaluation.
roc_auc_intervals`). About 3 minutes on 2 cores:

    python -m lab.experiments.bio_name_ceiling            # --data ../shared/data by default
"""

from __future__ import annotations

import argparse
import os
import re
from collections import Counter
from collections.abc import Hashable
from itertools import pairwise
from pathlib import Path

from crag.evaluator.pairs import Pair
from crag.evaluator.runnable import get_scorer
from crag.evaluator.training.evaluation import roc_auc_intervals
from crag.passages import titled
from lab.datasets.popqa import read_records
from lab.datasets.relevance import bio_slices
from lab.evaluator.data import norm_title, question_split

# particles that a name shares with many others ("de", "van"): not evidence that a passage names X
PARTICLES = frozenset("the of and de la le da di du van von der den jr sr ii iii".split())
WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    return WORD.findall(norm_title(text))


def name_of(topic: str) -> list[str]:
    """X's name as evidence: its words, less particles and initials."""
    return [w for w in words(topic) if w not in PARTICLES and len(w) > 1]


def cell(pair: Pair, name: list[str]) -> tuple:
    """How the passage names X: (whole name, count of its last word up to 3, its first word, the name
    among the passage's first words)."""
    text = words(pair.passage)
    joined, whole = " ".join(text), " ".join(name)
    return (
        whole in joined,
        min(3, text.count(name[-1])) if name else 0,
        bool(name) and name[0] in text,
        whole in " ".join(text[: len(name) + 3]),
    )


def ordered_by_rate(cells: list[Hashable], labels: list[int], rates_from: list[bool]) -> list[float]:
    """Each pair's score: its cell's share of relevant pairs among the pairs `rates_from` marks."""
    seen, relevant = Counter(), Counter()
    for c, y, use in zip(cells, labels, rates_from):
        if use:
            seen[c] += 1
            relevant[c] += y
    prior = sum(relevant.values()) / max(1, sum(seen.values()))
    return [relevant[c] / seen[c] if seen[c] else prior for c in cells]


def within_cells(first: list[float], then: list[float]) -> list[float]:
    """`first` orders the pairs (one value per cell); `then` breaks its ties, scaled below one step."""
    order = sorted(set(first))
    step = min((b - a for a, b in pairwise(order)), default=1.0)
    lo, hi = min(then), max(then)
    return [f + 0.5 * step * (t - lo) / ((hi - lo) or 1.0) for f, t in zip(first, then)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("CRAG_DATA_DIR", "../shared/data")))
    args = parser.parse_args()
    scorer = get_scorer(None)

    def evaluator(pairs: list[Pair], titles: bool) -> list[float]:
        texts = [titled(p.passage, p.title) if titles else p.passage for p in pairs]
        return scorer.score([(p.question, t) for p, t in zip(pairs, texts)], batch_size=64)

    topics = {r["qid"]: r["topic"] for r in read_records(args.data / "relevance" / "bio_contriever_top10.jsonl")}
    for slice_name, pairs in bio_slices(args.data).items():
        names = [name_of(topics[p.group.removesuffix("-p")]) for p in pairs]  # "bio-7-p": bio-7 phrased
        cells = [cell(p, n) for p, n in zip(pairs, names)]
        groups, labels = [p.group for p in pairs], [p.label for p in pairs]
        # the questions halved anew: every one of them is on the validation side of the split by qid alone
        half = [question_split(g.removesuffix("-p") + "/halves", 0.5) == "validation" for g in groups]
        in_sample = ordered_by_rate(cells, labels, [True] * len(pairs))
        crossed = [
            a if h else b
            for a, b, h in zip(
                ordered_by_rate(cells, labels, [not h for h in half]), ordered_by_rate(cells, labels, half), half
            )
        ]
        untitled = evaluator(pairs, False)
        scores = {
            "name evidence, in-sample (an upper figure)": in_sample,
            "name evidence, cross-fitted by question halves": crossed,
            "shipped evaluator, no titles": untitled,
            "name evidence, in-sample, the evaluator's order within cells": within_cells(in_sample, untitled),
            "shipped evaluator, with titles": evaluator(pairs, True),
        }
        print(
            f"{slice_name}: {len(pairs)} pairs, {len(set(groups))} questions, {sum(labels)} relevant; "
            f"{len(set(cells))} name cells; relevant passages without X's whole name: "
            f"{sum(1 for c, y in zip(cells, labels) if y and not c[0]) / sum(labels):.1%}, "
            f"irrelevant ones with it: {sum(1 for c, y in zip(cells, labels) if not y and c[0]) / (len(labels) - sum(labels)):.1%}"
        )
        print("  ROC-AUC [95% interval, questions resampled]")
        for name, row in roc_auc_intervals(groups, labels, scores).items():
            low, high = row["ci"]
            print(f"  {name:<62} {row['roc_auc']:.3f} [{low:.3f}, {high:.3f}]")


if __name__ == "__main__":
    main()
