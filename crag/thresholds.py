"""The two confidence thresholds of CRAG's action trigger, as one value that checks itself."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Action = Literal["correct", "incorrect", "ambiguous"]


def score_of(logit: float) -> float:
    """A logit on the evaluator's [-1, 1] scale: 2·sigmoid(z) − 1 = tanh(z / 2), without overflow."""
    return math.tanh(logit / 2.0)


def logit_of(score: float) -> float:
    """The inverse of `score_of`, for a score strictly inside (-1, 1)."""
    return 2.0 * math.atanh(score)


@dataclass(frozen=True)
class Thresholds:
    """(upper, lower) on the evaluator's [-1, 1] scale: a document scoring ≥ upper is relevant
    ("correct"), one scoring < lower irrelevant ("incorrect"), one in between "ambiguous"."""

    upper: float
    lower: float

    def __post_init__(self) -> None:
        for name in ("upper", "lower"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name} threshold must be a finite number, not {value!r}")
            object.__setattr__(self, name, float(value))
        if self.lower > self.upper:
            raise ValueError(f"lower threshold {self.lower} is above upper threshold {self.upper}")

    @classmethod
    def from_mapping(cls, pair: Mapping[str, float]) -> Thresholds:
        return cls(upper=pair["upper"], lower=pair["lower"])

    @classmethod
    def of(cls, value: Thresholds | Mapping[str, float] | Sequence[float]) -> Thresholds:
        """From an evaluator's `thresholds`: this type, a mapping, or an (upper, lower) pair."""
        if isinstance(value, Thresholds):
            return value
        if isinstance(value, Mapping):
            return cls.from_mapping(value)
        upper, lower = value
        return cls(upper=upper, lower=lower)

    def as_dict(self) -> dict[str, float]:
        return {"upper": self.upper, "lower": self.lower}

    def with_overrides(self, upper: float | None = None, lower: float | None = None) -> Thresholds:
        """This pair with either threshold replaced; raises ValueError if the result conflicts."""
        return Thresholds(upper=self.upper if upper is None else upper, lower=self.lower if lower is None else lower)

    def label(self, score: float) -> Action:
        return "correct" if score >= self.upper else "incorrect" if score < self.lower else "ambiguous"


# the paper's pairs (Appendix B); PopQA's also reads a checkpoint without calibrated thresholds
PRESETS: dict[str, Thresholds] = {
    "popqa": Thresholds(upper=0.59, lower=-0.99),
    "pubhealth": Thresholds(upper=0.5, lower=-0.91),
    "arc": Thresholds(upper=0.5, lower=-0.91),
    "biography": Thresholds(upper=0.95, lower=-0.91),
}
Preset = Literal["popqa", "pubhealth", "arc", "biography"]


__all__ = ["Thresholds"]  # what callers outside the package use
