"""How `crag evaluator adapt` chooses its head without labels (crag.evaluator.training.adapt_head), on
made-up features: no model is loaded."""

from __future__ import annotations

import random

import pytest

from crag.evaluator.pairs import Pair
from crag.evaluator.training.adapt_head import ANCHOR_WEIGHTS, Features, choose_head, sample_sets, split_general


def _sets(n: int, seed: int, *, standing: float, level: float, tag: str) -> Features:
    """`n` sets of five pairs, one relevant. In a "domain" set (standing > 0) the relevant pair's logit
    is above its set's others but the sets' levels vary; in a "general" set (level > 0) the relevant
    pair's logit is high in absolute terms and the sets' levels do not vary."""
    rng = random.Random(seed)
    out = Features([], [], [], [], [])
    for s in range(n):
        base = rng.uniform(-3, 3) if standing else 0.0
        for k in range(5):
            relevant = k == 0
            out.labels.append(int(relevant))
            out.logits.append(base + (standing + level) * relevant + rng.gauss(0, 0.3))
            out.overlaps.append(rng.random())
            out.contrasts.append(rng.random())
            out.sets.append((tag, s))
    return out


def test_the_head_is_chosen_on_the_calibration_sets_within_the_forgetting_bound():
    fit, choose = _sets(60, 1, standing=1.5, level=0, tag="d"), _sets(40, 2, standing=1.5, level=0, tag="c")
    anchor, guard = _sets(60, 3, standing=0, level=2.0, tag="a"), _sets(60, 4, standing=0, level=2.0, tag="g")
    blend, record = choose_head(fit, anchor, choose, guard, guard_before=0.99, max_drop=0.02)
    assert [c["anchor_weight"] for c in record["candidates"]] == list(ANCHOR_WEIGHTS)
    within = [c for c in record["candidates"] if 0.99 - c["guard_roc_auc"] <= 0.02]
    assert record["within_bound"] == bool(within)
    if within:
        best = max(within, key=lambda c: c["calibrate_roc_auc"])
        assert record["anchor_weight"] == best["anchor_weight"]
    assert blend.logit_standing > 0  # the domain's sets are told apart by standing


def test_with_no_head_within_the_bound_the_one_that_forgets_least_is_taken():
    fit, choose = _sets(30, 1, standing=1.5, level=0, tag="d"), _sets(20, 2, standing=1.5, level=0, tag="c")
    anchor, guard = _sets(30, 3, standing=0, level=2.0, tag="a"), _sets(30, 4, standing=0, level=2.0, tag="g")
    _, record = choose_head(fit, anchor, choose, guard, guard_before=1.01, max_drop=0.0)  # unreachable bound
    assert not record["within_bound"]
    best_guard = max(c["guard_roc_auc"] for c in record["candidates"])
    assert record["anchor_weight"] in {
        c["anchor_weight"] for c in record["candidates"] if c["guard_roc_auc"] == best_guard
    }


def test_the_general_set_is_halved_by_subject_and_sets_are_sampled_whole():
    general = [
        Pair(f"{q} of subject {g}?", f"passage {i}", int(i == 0), group=f"g{g}")
        for g in range(10)
        for q in ("What", "Which")
        for i in range(4)
    ]
    anchor, guard = split_general(general)
    assert len(anchor) == len(guard) == 40 and not {p.group for p in anchor} & {p.group for p in guard}
    assert split_general(general) == (anchor, guard)  # seeded
    sample = sample_sets(general, 3, seed=0)
    assert len({(p.group, p.question) for p in sample}) == 3 and len(sample) == 12  # whole sets
    assert sample_sets(general, 100, seed=0) == general


def test_features_add_up_in_order():
    a, b = _sets(2, 1, standing=1, level=0, tag="a"), _sets(1, 2, standing=1, level=0, tag="b")
    both = a + b
    assert both.labels == a.labels + b.labels and both.sets == a.sets + b.sets
    assert both.logits == pytest.approx(a.logits + b.logits)
