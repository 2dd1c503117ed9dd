"""Threshold calibration on synthetic scores, the reported metrics, and CRAG's pair format."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from crag.evaluator.pairs import Pair, parse_crag_line, read_pairs, to_crag_line, write_pairs
from crag.evaluator.training.calibration import calibrate
from crag.evaluator.training.evaluation import classification_metrics
from crag.thresholds import Thresholds as T


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
    from crag.evaluator.training.calibration import calibrate

    labels = [1] * 20 + [0] * 80
    scores = [0.9] * 20 + [-0.9] * 80
    result = calibrate(labels, scores)
    assert result.utility == 1.0
    assert result.upper <= 0.9 and result.lower > -0.9 and result.upper - result.lower > 1.7
    strict = calibrate(labels, scores, tolerance=0.0)
    assert strict.utility == 1.0 and strict.upper - strict.lower > 1.7  # ties alone already prefer the band


def test_matched_rates_fire_each_route_as_often_as_the_reference():
    from crag.evaluator.training.calibration import match_rates

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

    from crag.evaluator.training.calibration import align_scale

    a, b = align_scale(T(-0.27, -0.52), T(0.625, -0.385))
    assert a > 0
    moved = lambda s: math.tanh((a * 2 * math.atanh(s) + b) / 2)
    assert moved(-0.27) == pytest.approx(0.625) and moved(-0.52) == pytest.approx(-0.385)
    assert moved(-0.9) < moved(-0.52) < moved(0.0) < moved(0.9)
    assert align_scale(T(1.0, -0.2), T(0.625, -0.385)) is None  # a closed Correct route stays closed
    assert align_scale(T(0.1, 0.1), T(0.625, -0.385)) is None


def test_question_maxima_reads_each_question_as_the_action_trigger_does():
    from crag.evaluator.training.calibration import question_maxima

    keys = ["a", "a", "b", "b", ("c", True), ("c", True)]
    relevant, best = question_maxima(keys, [0, 1, 0, 0, 0, 0], [0.2, -0.5, -0.9, -0.3, 0.1, 0.4])
    assert relevant.tolist() == [1, 0, 0] and best.tolist() == [0.2, -0.3, 0.4]
    with pytest.raises(ValueError):
        question_maxima(["a"], [1, 0], [0.1, 0.2])


@given(
    st.lists(st.tuples(st.integers(0, 1), st.floats(-1, 1, allow_nan=False)), min_size=1, max_size=60),
    st.sampled_from([0.0, 0.02, 0.05, 0.1, 0.5]),
)
def test_the_discard_bound_sends_at_most_the_share_of_relevant_questions_to_incorrect(questions, share):
    from crag.evaluator.training.calibration import discard_bound

    relevant, maxima = [r for r, _ in questions], [m for _, m in questions]
    bound = discard_bound(relevant, maxima, share)
    with_relevant = [m for r, m in questions if r]
    assert sum(m < bound for m in with_relevant) <= share * len(with_relevant) + 1e-9
    if with_relevant:  # and it is the highest such value on its grid
        assert sum(m < bound + 0.005 for m in with_relevant) > share * len(with_relevant)
    assert discard_bound([0, 0], [0.1, 0.2], share) == 1.0  # no question has a relevant document


def test_capping_discards_lowers_only_the_lower_threshold_and_says_so():
    from crag.evaluator.training.calibration import calibrate, cap_discards

    labels = [1] * 20 + [0] * 80
    scores = [0.9] * 20 + [-0.9] * 80
    base = calibrate(labels, scores)
    # 20 questions with a relevant document, 4 of them scoring low: at most 1 in 20 may be discarded
    relevant, maxima = [1] * 20 + [0] * 5, [0.8] * 16 + [-0.95, -0.9, -0.7, -0.6] + [-0.99] * 5
    capped = cap_discards(base, [(relevant, maxima)], 0.05)
    assert capped.upper == base.upper and capped.lower == -0.9 and capped.utility_lower == base.lower
    assert capped.max_discard == 0.05 and capped.as_dict()["utility_lower"] == base.lower
    assert sum(m < capped.lower for r, m in zip(relevant, maxima) if r) == 1
    loose = cap_discards(base, [([1, 1], [0.9, 0.95])], 0.05)  # nothing to cap: the lower stays
    assert loose.lower == base.lower and loose.utility_lower is None and loose.max_discard == 0.05
    both = cap_discards(base, [(relevant, maxima), ([1] * 10, [-0.97] + [0.9] * 9)], 0.05)
    assert both.lower == -0.97  # the strictest set decides
    with pytest.raises(ValueError):
        cap_discards(base, [(relevant, maxima)], 1.0)
