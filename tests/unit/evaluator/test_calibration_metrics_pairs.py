"""Threshold calibration on synthetic scores, the reported metrics, and CRAG's pair format."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crag.core.thresholds import Thresholds as T
from crag.evaluator_model.calibration import calibrate
from crag.evaluator_model.evaluation import classification_metrics
from crag.evaluator_model.pairs import Pair, parse_crag_line, read_pairs, to_crag_line, write_pairs


def _synthetic(seed=0, spread=0.35):
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(300), np.zeros(1200)].astype(int)
    scores = np.clip(np.r_[rng.normal(0.5, spread, 300), rng.normal(-0.5, spread, 1200)], -1, 1)
    return labels, scores


def test_separable_scores_get_a_threshold_in_the_gap():
    labels = [1, 1, 1, 0, 0, 0, 0]
    scores = [0.9, 0.8, 0.7, -0.2, -0.5, -0.8, -0.9]
    result = calibrate(labels, scores)
    assert -0.2 < result.upper <= 0.7 and -0.2 < result.lower <= result.upper
    assert result.utility == pytest.approx(1.0)


def test_overlapping_scores_leave_an_ambiguous_band_and_cost_moves_upper():
    labels, scores = _synthetic()
    cheap = calibrate(labels, scores, false_relevant_cost=1.0)
    costly = calibrate(labels, scores, false_relevant_cost=4.0)
    assert costly.lower < costly.upper  # hedging pays between the two
    assert costly.upper > cheap.upper  # false "relevant" made dearer -> stricter upper
    assert -1 <= costly.lower <= costly.upper <= 1


def test_calibration_beats_every_other_grid_point():
    labels, scores = _synthetic(seed=3, spread=0.5)
    best = calibrate(labels, scores)

    def utility(upper, lower):
        rel, irr = scores >= upper, scores < lower
        return (
            np.sum(rel & (labels == 1))
            + np.sum(irr & (labels == 0))
            - 2 * np.sum(rel & (labels == 0))
            - np.sum(irr & (labels == 1))
        ) / len(labels)

    assert utility(best.upper, best.lower) == pytest.approx(best.utility)
    for upper in np.linspace(-1, 1, 21):
        for lower in np.linspace(-1, upper, 11):
            assert utility(upper, lower) <= best.utility + 1e-9


@pytest.mark.parametrize("labels, scores", [([1, 1], [0.1, 0.2]), ([], []), ([1, 0], [0.3])])
def test_calibration_rejects_unusable_data(labels, scores):
    with pytest.raises(ValueError):
        calibrate(labels, scores)


def test_metrics_on_a_known_example():
    m = classification_metrics([1, 0, 0, 0, 1], [0.9, 0.1, -0.5, 0.6, 0.2], upper=0.5)
    assert m["accuracy"] == pytest.approx(3 / 5)
    assert m["balanced_accuracy"] == pytest.approx((0.5 + 2 / 3) / 2)
    assert m["f1"] == pytest.approx(0.5)
    assert m["roc_auc"] == pytest.approx(5 / 6)  # 5 of the 6 (relevant, irrelevant) pairs ordered right
    assert m["n"] == 5


def test_metrics_with_one_class_report_nan_auc():
    m = classification_metrics([0, 0], [0.1, -0.1], upper=0.5)
    assert m["accuracy"] == 1.0 and math.isnan(m["roc_auc"])


def test_crag_line_round_trip_and_cleaning():
    pair = Pair("Who?\tnow", "A passage [SEP] with\nbreaks", 1)
    line = to_crag_line(pair)
    assert line.count("\t") == 1 and line.count("[SEP]") == 1
    parsed = parse_crag_line(line)
    assert (parsed.question, parsed.passage, parsed.label) == ("Who? now", "A passage with breaks", 1)


@pytest.mark.parametrize(
    "line, message",
    [("no tab here", "no tab"), ("q [SEP] p\t2", "label"), ("q and p\t1", r"\[SEP\]")],
)
def test_bad_lines_name_file_and_line(line, message, tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("ok [SEP] fine\t1\n" + line + "\n")
    with pytest.raises(ValueError, match=message) as info:
        read_pairs(path)
    assert "bad.tsv:2" in str(info.value)


def test_write_pairs_writes_tsv_and_jsonl_twins(tmp_path):
    pairs = [Pair("q1", "passage one", 1, "Title", "g1", "src"), Pair("q2", "passage two", 0)]
    tsv, jsonl = write_pairs(pairs, tmp_path, "train")
    assert [(p.question, p.passage, p.label) for p in read_pairs(tsv)] == [
        ("q1", "passage one", 1),
        ("q2", "passage two", 0),
    ]
    assert read_pairs(jsonl) == pairs


def test_a_flat_optimum_keeps_the_ambiguous_band_open():
    """Perfectly separated scores: every pair between the classes is best; the widest band is kept."""
    from crag.evaluator_model.calibration import calibrate

    labels = [1] * 20 + [0] * 80
    scores = [0.9] * 20 + [-0.9] * 80
    result = calibrate(labels, scores)
    assert result.utility == 1.0
    assert result.upper <= 0.9 and result.lower > -0.9 and result.upper - result.lower > 1.7
    strict = calibrate(labels, scores, tolerance=0.0)
    assert strict.utility == 1.0 and strict.upper - strict.lower > 1.7  # ties alone already prefer the band


def test_matched_rates_fire_each_route_as_often_as_the_reference():
    from crag.evaluator_model.calibration import match_rates

    reference = [i / 100 for i in range(-50, 50)]  # 100 scores; 0.3 and above: 20, -0.2 and above: 70
    new = [2 * s - 0.1 for s in reversed(reference)]  # another scale, another order
    matched = match_rates(reference, T(0.3, -0.2), new)
    assert sum(s >= matched.upper for s in new) == 20 and sum(s >= matched.lower for s in new) == 70
    assert match_rates(reference, T(0.9, -0.9), new).upper == 1.0  # the reference never called Correct
    matched = match_rates([0.0] * 10, T(0.5, 0.5), [0.1] * 10)
    assert matched.lower <= matched.upper
    with pytest.raises(ValueError):
        match_rates([0.1], T(0.5, 0.0), [])


def test_aligning_the_scale_moves_the_thresholds_and_keeps_the_order():
    import math

    from crag.evaluator_model.calibration import align_scale

    a, b = align_scale(T(-0.27, -0.52), T(0.625, -0.385))
    assert a > 0
    moved = lambda s: math.tanh((a * 2 * math.atanh(s) + b) / 2)
    assert moved(-0.27) == pytest.approx(0.625) and moved(-0.52) == pytest.approx(-0.385)
    assert moved(-0.9) < moved(-0.52) < moved(0.0) < moved(0.9)
    assert align_scale(T(1.0, -0.2), T(0.625, -0.385)) is None  # a closed Correct route stays closed
    assert align_scale(T(0.1, 0.1), T(0.625, -0.385)) is None
