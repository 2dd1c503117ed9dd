"""A value's standing in its set (crag.standing), shared by refinement and the adapted head."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crag.standing import MIN_SET, STANDING_FLOOR, grouped_standings, standings_of


def test_a_standing_is_the_distance_from_the_mean_in_spreads():
    assert standings_of([1.0, 2.0, 3.0]) == pytest.approx([-1.2247, 0.0, 1.2247], abs=1e-4)
    assert standings_of([5.0, 5.0, 5.0]) == [0.0, 0.0, 0.0]  # all equal: nobody stands out
    assert standings_of([0.0, 0.0, 0.01]) == pytest.approx([-1 / 6, -1 / 6, 1 / 3])  # spread under the floor
    assert standings_of([]) == []


def test_standings_are_taken_within_each_set_and_small_sets_get_none():
    values = [1.0, 2.0, 3.0, 10.0, 20.0, 7.0, 8.0]
    sets = ["a", "a", "a", "b", "b", "b", "lonely"]
    assert grouped_standings(values, sets)[:3] == pytest.approx(standings_of(values[:3]))
    assert grouped_standings(values, sets)[3:6] == pytest.approx(standings_of(values[3:6]))
    assert grouped_standings(values, sets)[6] == 0.0 and MIN_SET == 3
    # the same values in another set order give each member the same standing
    assert grouped_standings(values[::-1], sets[::-1]) == pytest.approx(grouped_standings(values, sets)[::-1])
    with pytest.raises(ValueError, match="set keys"):
        grouped_standings(values, sets[:-1])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=MIN_SET, max_size=30))
def test_standings_centre_each_set_and_keep_its_order(values):
    z = standings_of(values)
    assert all(math.isfinite(v) for v in z)
    assert abs(sum(z)) <= 1e-6 * len(z) * max(1.0, max(abs(v) for v in values) / STANDING_FLOOR)
    for (a, za), (b, zb) in zip(zip(values, z), zip(values[1:], z[1:])):
        assert (a < b) <= (za <= zb + 1e-9)
