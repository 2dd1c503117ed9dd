"""Pair-level quality figures for a relevance scorer, as `python -m lab evaluator eval` reports them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def classification_metrics(labels: Sequence[int], scores: Sequence[float], upper: float) -> dict[str, float]:
    """Accuracy, balanced accuracy and F1 of "relevant = score ≥ upper", and ROC-AUC."""
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=float)
    if len(y) == 0:
        raise ValueError("no pairs to evaluate")
    predicted = (s >= upper).astype(int)
    both_classes = len(set(y.tolist())) == 2
    return {
        "accuracy": float(accuracy_score(y, predicted)),
        "balanced_accuracy": float(balanced_accuracy_score(y, predicted)) if both_classes else float("nan"),
        "f1": float(f1_score(y, predicted, zero_division=0)),
        "roc_auc": _auc(y, s),
        "n": len(y),
        "positive_rate": float(y.mean()),
    }


def roc_auc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """ROC-AUC alone (NaN with one class)."""
    return classification_metrics(labels, scores, upper=0.0)["roc_auc"]


def _auc(y: np.ndarray, s: np.ndarray) -> float:
    """ROC-AUC by ranks (Mann–Whitney, as sklearn's), fast enough to resample."""
    from scipy.stats import rankdata

    positives = int(y.sum())
    negatives = len(y) - positives
    if not positives or not negatives:
        return float("nan")
    return float((rankdata(s)[y == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def roc_auc_intervals(
    groups: Sequence[str],
    labels: Sequence[int],
    scores: dict[str, Sequence[float]],
    *,
    against: Sequence[str] = (),
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, dict]:
    """Each scorer's ROC-AUC with a seeded percentile bootstrap interval, and its paired difference from
    each scorer in `against`. A question's pairs (`groups`) are resampled together: they are not independent."""
    y = np.asarray(labels, dtype=int)
    table = {name: np.asarray(values, dtype=float) for name, values in scores.items()}
    members: dict[str, list[int]] = {}
    for i, group in enumerate(groups):
        members.setdefault(group, []).append(i)
    blocks = [np.asarray(idx) for idx in members.values()]
    rng = np.random.default_rng(seed)
    drawn: dict[str, list[float]] = {name: [] for name in table}
    kept = 0
    while kept < resamples and 0 < y.sum() < len(y):  # one class in all: no AUC to resample
        idx = np.concatenate([blocks[k] for k in rng.integers(0, len(blocks), size=len(blocks))])
        if 0 < y[idx].sum() < len(idx):
            kept += 1
            for name, s in table.items():
                drawn[name].append(_auc(y[idx], s[idx]))
    tail = (1 - level) / 2
    nan = [float("nan"), float("nan")]
    out: dict[str, dict] = {}
    for name, s in table.items():
        samples = np.asarray(drawn[name])
        row: dict[str, Any] = {
            "roc_auc": _auc(y, s),
            "ci": np.quantile(samples, [tail, 1 - tail]).tolist() if kept else nan,
        }
        for other in (o for o in against if o != name):
            gap = samples - np.asarray(drawn[other])
            row["minus_" + other] = {
                "mean": row["roc_auc"] - _auc(y, table[other]),
                "ci": np.quantile(gap, [tail, 1 - tail]).tolist() if kept else nan,
            }
        out[name] = row
    return out


__all__ = ["classification_metrics", "roc_auc_intervals"]  # what callers outside the package use
