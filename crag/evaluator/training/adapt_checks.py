"""What keeps `adapt` honest: the held-apart split, the checks before and after, and the verdict."""

from __future__ import annotations

import os
from dataclasses import dataclass

from crag.evaluator.pairs import Pair
from crag.evaluator.training.selfsup import held_apart_split

MIN_DOCUMENTS_TO_HOLD_APART = 10  # fewer documents are held apart by query instead (see `split_pairs`)
MIN_LABELLED_PAIRS = 10


@dataclass
class Check:
    """ROC-AUC of the starting and the adapted evaluator's final scores on one set of pairs."""

    name: str
    pairs: int
    before: float
    after: float

    @property
    def change(self) -> float:
        return self.after - self.before


def split_pairs(pairs: list[Pair], held_apart: float) -> tuple[dict[str, list[Pair]], str]:
    """train / calibrate / check pairs, and what was held apart: "document", or with too few documents
    "query" (weaker: a query's neighbours in its document may be trained on)."""
    groups = sorted({p.group for p in pairs})
    by_document = len(groups) >= MIN_DOCUMENTS_TO_HOLD_APART
    # relative to their common folder, so a collection ingested elsewhere splits the same (commonpath fails on URLs)
    common = os.path.commonprefix(groups).rpartition("/")[0]  # noqa: RUF071
    cut = len(common) + 1 if common else 0

    def key(pair: Pair) -> str:
        return pair.group[cut:] if by_document else f"{pair.group[cut:]}\n{pair.question}"

    where = held_apart_split(map(key, pairs), held_apart)
    splits: dict[str, list[Pair]] = {"train": [], "calibrate": [], "check": []}
    for pair in pairs:
        splits[where[key(pair)]].append(pair)
    return splits, "document" if by_document else "query"


def check_labelled(pairs: list[Pair]) -> None:
    if len(pairs) < MIN_LABELLED_PAIRS or len({p.label for p in pairs}) < 2:
        raise ValueError(
            f"--labelled needs at least {MIN_LABELLED_PAIRS} pairs with both relevant and irrelevant ones, "
            f"got {len(pairs)} pairs with labels {sorted({p.label for p in pairs})}"
        )


def verdict(checks: list[Check], refuse_general_drop: float, max_general_drop: float) -> tuple[list[str], list[str]]:
    """(reasons not to write the adapted evaluator, things to warn about when writing it)."""
    refusals, warnings = [], []
    for check in checks:
        figures = f"(ROC-AUC {check.before:.3f} -> {check.after:.3f})"
        if check.name == "held-apart sets" and check.change < 0:
            refusals.append(
                f"worse than the starting evaluator on the held-apart documents of your collection {figures}"
            )
        if check.name == "labelled pairs" and check.change < 0:
            refusals.append(f"worse than the starting evaluator on your labelled pairs {figures}")
        if check.name == "general set" and check.change < -refuse_general_drop:
            refusals.append(f"forgot more than {refuse_general_drop} ROC-AUC on the general set {figures}")
        elif check.name == "general set" and check.change < -max_general_drop:
            warnings.append(
                f"forgot more than {max_general_drop} ROC-AUC on the general set {figures}: it is "
                "fitted to your collection; keep the shipped evaluator for questions outside it"
            )
    return refusals, warnings
