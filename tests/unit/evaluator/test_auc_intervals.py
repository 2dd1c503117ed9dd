"""ROC-AUC intervals resampled by question (`evaluation.roc_auc_intervals`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from crag.evaluator.training.evaluation import roc_auc_intervals


def _questions(n: int, seed: int, noise: float) -> tuple[list[str], list[int], np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = (rng.random(n * 10) < 0.3).astype(int)
    labels[::10] = 1  # every question has a relevant passage, and most have irrelevant ones
    return [f"q{i // 10}" for i in range(n * 10)], labels.tolist(), labels + rng.normal(0, noise, n * 10)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.floats(-1, 1)), min_size=4, max_size=60), st.integers(1, 6))
def test_the_point_figure_is_sklearns_and_lies_in_its_interval(pairs, per_question):
    labels = [y for y, _ in pairs]
    scores = [s for _, s in pairs]
    groups = [str(i // per_question) for i in range(len(pairs))]
    row = roc_auc_intervals(groups, labels, {"s": scores}, resamples=50)["s"]
    if len(set(labels)) < 2:
        assert math.isnan(row["roc_auc"]) and all(math.isnan(x) for x in row["ci"])
        return
    assert row["roc_auc"] == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    low, high = row["ci"]
    assert low <= high


def test_a_scorer_beside_itself_differs_by_nothing_and_a_better_one_by_a_positive_interval():
    groups, labels, sharp = _questions(80, 0, 0.5)
    blurred = np.asarray(labels) + np.random.default_rng(1).normal(0, 3, len(labels))
    out = roc_auc_intervals(
        groups, labels, {"sharp": sharp, "copy": sharp, "blurred": blurred}, against=["blurred", "copy"]
    )
    assert out["copy"]["minus_blurred"]["mean"] == out["sharp"]["minus_blurred"]["mean"]
    assert out["sharp"]["minus_copy"] == {"mean": 0.0, "ci": [0.0, 0.0]}  # paired: the same resamples for both
    low, high = out["sharp"]["minus_blurred"]["ci"]
    assert 0 < low <= out["sharp"]["minus_blurred"]["mean"] <= high
    assert "minus_blurred" not in out["blurred"]


def test_questions_move_whole_so_the_interval_is_wider_than_resampling_pairs_would_give():
    # the scorer reads some questions right and others backwards, each question's ten pairs alike:
    # resampling pairs would count a question as ten independent observations
    groups, labels, _ = _questions(40, 2, 1.0)
    sign = np.repeat(np.where(np.random.default_rng(3).random(40) < 0.75, 1.0, -1.0), 10)
    scores = sign * np.asarray(labels) + np.random.default_rng(4).normal(0, 0.3, 400)
    by_question = roc_auc_intervals(groups, labels, {"s": scores})["s"]["ci"]
    by_pair = roc_auc_intervals([str(i) for i in range(400)], labels, {"s": scores})["s"]["ci"]
    assert by_question[1] - by_question[0] > 1.5 * (by_pair[1] - by_pair[0])


def test_seeded_so_a_report_is_reproducible():
    groups, labels, scores = _questions(30, 5, 1.0)
    assert roc_auc_intervals(groups, labels, {"s": scores}) == roc_auc_intervals(groups, labels, {"s": scores})
