"""Choose the (upper, lower) action thresholds on labelled validation scores, by a utility over pairs: a right
"relevant" (≥ upper) or "irrelevant" (< lower) earns 1, a false one costs `false_relevant_cost` (wrong
knowledge, no web search) or `false_irrelevant_cost`; "ambiguous" earns nothing."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from crag.thresholds import Thresholds, logit_of


@dataclass(frozen=True)
class Calibration:
    upper: float
    lower: float
    utility: float
    false_relevant_cost: float
    false_irrelevant_cost: float
    n: int
    utility_lower: float | None = None  # the utility's lower, when `cap_discards` moved it
    max_discard: float | None = None

    @property
    def thresholds(self) -> Thresholds:
        return Thresholds(upper=self.upper, lower=self.lower)

    def as_dict(self) -> dict:
        return asdict(self)


def calibrate(
    labels: Sequence[int],
    scores: Sequence[float],
    *,
    false_relevant_cost: float = 2.0,
    false_irrelevant_cost: float = 1.0,
    grid_size: int = 401,
    tolerance: float = 0.005,
) -> Calibration:
    """The grid pair (lower ≤ upper) with the highest mean utility; within `tolerance` of the best, the widest
    Ambiguous band wins, as a plain argmax could close it."""
    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=float)
    if len(y) == 0 or len(y) != len(s):
        raise ValueError("calibration needs one score per label and at least one pair")
    if len(set(y.tolist())) < 2:
        raise ValueError("calibration needs both relevant and irrelevant pairs")
    if false_relevant_cost < 0 or false_irrelevant_cost < 0:
        raise ValueError("costs must not be negative")
    grid = np.round(np.linspace(-1.0, 1.0, grid_size), 4)
    pos, neg = np.sort(s[y == 1]), np.sort(s[y == 0])
    # counts of scores ≥ t and < t for every grid value t
    pos_ge = len(pos) - np.searchsorted(pos, grid, side="left")
    neg_ge = len(neg) - np.searchsorted(neg, grid, side="left")
    upper_gain = pos_ge - false_relevant_cost * neg_ge  # calls of "relevant" at upper = t
    lower_gain = (len(neg) - neg_ge) - false_irrelevant_cost * (len(pos) - pos_ge)  # "irrelevant" below t
    total = upper_gain[:, None] + lower_gain[None, :]  # [upper index, lower index]
    total = np.where(np.tril(np.ones_like(total, dtype=bool)), total, -np.inf)  # lower ≤ upper
    near = total >= total.max() - tolerance * len(y)
    width = np.where(near, grid[:, None] - grid[None, :], -np.inf)  # band width upper − lower
    best = np.unravel_index(int(np.argmax(width)), width.shape)
    return Calibration(
        upper=float(grid[best[0]]),
        lower=float(grid[best[1]]),
        utility=float(total[best] / len(y)),
        false_relevant_cost=false_relevant_cost,
        false_irrelevant_cost=false_irrelevant_cost,
        n=len(y),
    )


def question_maxima(
    keys: Sequence[Hashable], labels: Sequence[int], scores: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """(whether any document is relevant, the best score) per question (pairs that share a key)."""
    if not (len(keys) == len(labels) == len(scores)):
        raise ValueError("one key, one label and one score per pair")
    best: dict[Hashable, list] = {}
    for key, label, score in zip(keys, labels, scores):
        entry = best.setdefault(key, [0, -math.inf])
        entry[0], entry[1] = max(entry[0], int(label)), max(entry[1], float(score))
    values = list(best.values())
    return np.array([v[0] for v in values], dtype=int), np.array([v[1] for v in values], dtype=float)


def discard_bound(relevant: Sequence[int], maxima: Sequence[float], max_discard: float) -> float:
    """The highest lower threshold (on a 0.005 grid) sending at most `max_discard` of the questions with a
    relevant document to Incorrect; 1.0 when none has one."""
    if not 0.0 <= max_discard < 1.0:
        raise ValueError(f"max_discard must be in [0, 1), not {max_discard}")
    ranked = np.sort(np.asarray(maxima, dtype=float)[np.asarray(relevant, dtype=int) == 1])
    if len(ranked) == 0:
        return 1.0
    allowed = math.floor(max_discard * len(ranked) + 1e-9)  # questions that may fall below it
    edge = float(ranked[allowed])  # every question below it is one of the `allowed`
    step = round(edge * 200.0)  # the grid point at or just below it (floor() of a float product can
    bound = step / 200.0 if step / 200.0 <= edge else (step - 1) / 200.0  # drop a step: -0.97 * 200)
    return max(-1.0, bound)


def cap_discards(
    calibration: Calibration, question_sets: Sequence[tuple[Sequence[int], Sequence[float]]], max_discard: float
) -> Calibration:
    """`calibration` with its lower threshold lowered, where needed, to `discard_bound` in every one of
    `question_sets`: the utility judges pairs, but Incorrect throws away a whole question's documents."""
    bound = min((discard_bound(r, m, max_discard) for r, m in question_sets), default=1.0)
    if bound >= calibration.lower:
        return replace(calibration, max_discard=max_discard)
    return replace(calibration, lower=bound, utility_lower=calibration.lower, max_discard=max_discard)


def match_rates(reference_scores: Sequence[float], reference: Thresholds, scores: Sequence[float]) -> Thresholds:
    """(upper, lower) at which `scores` call as many pairs relevant and irrelevant as `reference` does on
    `reference_scores`: for labels too noisy for a utility."""
    ref, new = np.asarray(reference_scores, dtype=float), np.asarray(scores, dtype=float)
    if len(ref) == 0 or len(ref) != len(new):
        raise ValueError("matching rates needs the reference's and the new score of the same pairs")
    upper_ref, lower_ref = reference.upper, reference.lower

    ranked = np.sort(new)[::-1]

    def at_rate(share: float) -> float:  # the threshold with `share` of the new scores at or above it
        count = round(share * len(ranked))
        return 1.0 if count == 0 else float(ranked[count - 1])

    upper = at_rate(float(np.mean(ref >= upper_ref)))
    lower = at_rate(float(np.mean(ref >= lower_ref)))
    return Thresholds(upper=upper, lower=min(lower, upper))


def align_scale(thresholds: Thresholds, reference: Thresholds) -> tuple[float, float] | None:
    """(a, b) such that the logit map z ↦ a·z + b moves `thresholds` onto `reference`, or None when
    impossible: it keeps every ranking and route, and the scale fixed settings (`strip_threshold`) assume."""
    upper, lower, ref_upper, ref_lower = thresholds.upper, thresholds.lower, reference.upper, reference.lower
    if not (-1.0 < lower < upper < 1.0 and -1.0 < ref_lower < ref_upper < 1.0):
        return None
    a = (logit_of(ref_upper) - logit_of(ref_lower)) / (logit_of(upper) - logit_of(lower))
    return a, logit_of(ref_upper) - a * logit_of(upper)


__all__ = ["calibrate", "cap_discards", "question_maxima"]  # what callers outside the package use
