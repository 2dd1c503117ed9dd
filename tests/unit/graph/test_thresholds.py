"""The run's pair of thresholds: explicit values over a preset over the evaluator's calibrated pair."""

from __future__ import annotations

import pytest

from crag import resources
from crag.settings import Context
from crag.thresholds import PRESETS, Thresholds

CALIBRATED = Thresholds(upper=0.6, lower=-0.4)


def test_explicit_values_override_the_preset_which_overrides_the_calibrated_pair():
    assert Context().thresholds(CALIBRATED) == CALIBRATED
    assert Context(preset="biography").thresholds(CALIBRATED) == Thresholds(upper=0.95, lower=-0.91)
    assert Context(preset="arc", lower_threshold=-0.2).thresholds(CALIBRATED) == Thresholds(upper=0.5, lower=-0.2)
    assert Context(upper_threshold=0.9).thresholds(CALIBRATED) == Thresholds(upper=0.9, lower=-0.4)


def test_a_lone_threshold_that_crosses_the_other_one_is_refused():
    with pytest.raises(ValueError, match="lower threshold 0.9 is above upper threshold 0.6"):
        Context(lower_threshold=0.9).thresholds(CALIBRATED)
    with pytest.raises(ValueError, match="lower threshold -0.91 is above upper threshold -0.95"):
        Context(preset="pubhealth", upper_threshold=-0.95).thresholds(CALIBRATED)


def test_an_unknown_preset_is_refused():
    with pytest.raises(ValueError, match="unknown preset 'nq'"):
        Context(preset="nq")


def test_an_evaluator_without_a_pair_is_read_with_the_papers_popqa_pair():
    class Plain:  # an injected scorer may carry a plain (upper, lower) pair
        thresholds = (0.3, -0.3)

    assert resources.calibrated(object()) == PRESETS["popqa"] == Thresholds(upper=0.59, lower=-0.99)
    assert resources.calibrated(Plain()) == Thresholds(upper=0.3, lower=-0.3)
    assert resources.calibrated(type("Ours", (), {"thresholds": CALIBRATED})()) is CALIBRATED
