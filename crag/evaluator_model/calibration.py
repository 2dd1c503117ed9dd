"""Choose the (upper, lower) action thresholds on labelled validation scores.

The paper tunes its two confidence thresholds on held-out data (Appendix B). We make the choice
explicit as a utility over pairs: a call of "relevant" (score ≥ upper) or "irrelevant"
(score < lower) earns 1 when it is right; a false "relevant" costs `false_relevant_cost` (it sends
wrong knowledge straight to the generator and skips the web search that would have fixed it) and a
false "irrelevant" costs `false_irrelevant_cost` (it throws away good knowledge); scores in between
are "ambiguous" and earn nothing, which is what the Ambiguous action's hedging of both sources buys.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Calibration:
    upper: float
    lower: float
    utility: float
    false_relevant_cost: float
    false_irrelevant_cost: float
    n: int

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
    """Search a grid of thresholds in [-1, 1] for the pair with the highest mean utility, lower ≤ upper.

    Pairs whose utility is within `tolerance` of the best (half a point per hundred pairs by default)
    are indistinguishable on a validation set of a few thousand pairs; among them the widest
    Ambiguous band wins. The utility gives Ambiguous nothing, though in the graph it is the hedge that
    reads both sources, so on a flat optimum the plain argmax can close the band (lower = upper)
    for no measurable gain, and the Ambiguous action would never run.
    """
    import numpy as np

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
        n=int(len(y)),
    )
