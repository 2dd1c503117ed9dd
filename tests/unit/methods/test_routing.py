"""The action trigger is a pure function of scores and thresholds: one test per route."""

from __future__ import annotations

from typing import get_args

import pytest

from crag.knowledge.routing import branches, decide_action, document_labels
from crag.thresholds import PRESETS, Preset, Thresholds


def test_correct_when_any_document_reaches_upper():
    assert decide_action([-0.9, 0.59, -1.0], Thresholds(upper=0.59, lower=-0.99)) == "correct"


def test_incorrect_when_every_document_is_below_lower():
    assert decide_action([-0.995, -1.0], Thresholds(upper=0.59, lower=-0.99)) == "incorrect"


def test_ambiguous_otherwise():
    assert decide_action([-0.99, 0.58], Thresholds(upper=0.59, lower=-0.99)) == "ambiguous"


def test_no_documents_is_incorrect():
    assert decide_action([], Thresholds(upper=0.5, lower=-0.5)) == "incorrect"


def test_thresholds_in_the_wrong_order_are_refused():
    with pytest.raises(ValueError, match="above upper"):
        Thresholds(upper=-0.5, lower=0.5)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "0.5", None, True])
def test_thresholds_must_be_finite_numbers(bad):
    with pytest.raises(ValueError, match="finite number"):
        Thresholds(upper=bad, lower=-0.5)


def test_thresholds_read_every_shape_an_evaluator_exposes():
    pair = Thresholds(upper=0.5, lower=-0.5)
    assert Thresholds.of(pair) is pair
    assert Thresholds.of({"upper": 0.5, "lower": -0.5}) == Thresholds.of((0.5, -0.5)) == pair
    assert pair.as_dict() == {"upper": 0.5, "lower": -0.5}
    assert pair.with_overrides(lower=0.2) == Thresholds(0.5, 0.2)
    with pytest.raises(ValueError, match="above upper"):
        pair.with_overrides(lower=0.9)


def test_the_paper_presets_are_one_table():
    assert PRESETS["popqa"] == Thresholds(upper=0.59, lower=-0.99)
    assert set(PRESETS) == set(get_args(Preset))


def test_equal_thresholds_leave_no_ambiguous_band():
    assert (
        decide_action([0.1], Thresholds(0.1, 0.1)) == "correct"
        and decide_action([0.09], Thresholds(0.1, 0.1)) == "incorrect"
    )


def test_branches_per_action():
    assert branches("correct") == ["refine"]
    assert branches("incorrect") == ["rewrite_and_search"]
    assert branches("ambiguous") == ["refine", "rewrite_and_search"]


def test_document_labels():
    assert document_labels([0.7, 0.0, -0.7], Thresholds(0.5, -0.5)) == ["correct", "ambiguous", "incorrect"]
