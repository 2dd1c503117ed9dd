"""Pair-level quality figures for a relevance scorer, as `crag evaluator eval` reports them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def classification_metrics(labels: Sequence[int], scores: Sequence[float], upper: float) -> dict[str, float]:
    """Accuracy, balanced accuracy and F1 of "relevant = score ≥ upper", plus threshold-free ROC-AUC.

    ROC-AUC is reported because a data set that is mostly irrelevant (about 83% on realistic
    retrieval results) makes plain accuracy look good for a scorer that calls everything irrelevant.
    """
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score, roc_auc_score

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
        "roc_auc": float(roc_auc_score(y, s)) if both_classes else float("nan"),
        "n": len(y),
        "positive_rate": float(y.mean()),
    }


def roc_auc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """ROC-AUC alone (`classification_metrics`' figure; NaN with one class)."""
    return classification_metrics(labels, scores, upper=0.0)["roc_auc"]
