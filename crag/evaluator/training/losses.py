"""Training objectives, each paired with the score transform that maps its logit into [-1, 1]."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Loss:
    fn: Callable
    transform: str  # how Scorer maps the logit: "sigmoid" (2σ(z)−1) or "clip"

    def __call__(self, logits, labels):
        return self.fn(logits, labels)


def _bce(logits, labels):
    import torch.nn.functional as F

    return F.binary_cross_entropy_with_logits(logits, labels)


def _paper_mse(logits, labels):
    """CRAG's own objective: regress the logit onto ±1 (label 1 → +1, label 0 → −1)."""
    import torch.nn.functional as F

    return F.mse_loss(logits, labels * 2.0 - 1.0)


LOSSES = {"bce": Loss(_bce, "sigmoid"), "mse": Loss(_paper_mse, "clip")}
