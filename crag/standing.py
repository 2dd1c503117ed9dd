"""A value's standing in its set: a z-score with a floor on the spread. Refinement and the adapted evaluator's
head both ask which member of a set answers, whatever the set's level; one definition keeps them from drifting."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

MIN_SET = 3  # with two members the standing is always ±1, whatever they say
STANDING_FLOOR = 0.02  # the spread below which the values are taken as equal (as the heads were fitted)


def standings_of(values: Sequence[float]) -> list[float]:
    """Each value's (value − the set's mean) / max(the set's spread, STANDING_FLOOR)."""
    array = np.asarray(values, dtype=float)
    if not len(array):
        return []
    return ((array - array.mean()) / max(float(array.std()), STANDING_FLOOR)).tolist()


def grouped_standings(values: Sequence[float], sets: Sequence[Hashable]) -> list[float]:
    """`standings_of` within each set (`sets[i]` names value i's set); 0 in sets smaller than MIN_SET."""
    if len(sets) != len(values):
        raise ValueError(f"{len(sets)} set keys for {len(values)} values")
    members: dict[Hashable, list[int]] = {}
    for i, key in enumerate(sets):
        members.setdefault(key, []).append(i)
    out = [0.0] * len(values)
    for indices in members.values():
        if len(indices) >= MIN_SET:
            for i, z in zip(indices, standings_of([values[i] for i in indices])):
                out[i] = z
    return out
