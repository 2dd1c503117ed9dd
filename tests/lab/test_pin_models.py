"""`python -m lab.pin_models` on small fake installed distributions: each part's file found through the
distribution's RECORD and hashed without importing the package, and nothing pinned unless the parts
make the model's pinned whole."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest

from lab import pin_models
from tests.unit.backends.test_gguf import PARTS


def test_each_part_is_pinned_from_its_metadata(fake_model):
    pinned = pin_models.pin(fake_model)
    assert pinned == tuple(tuple(p) for p in fake_model.parts)
    assert [p[3] for p in pinned] == [len(data) for data in PARTS]
    assert pinned[1][4] == hashlib.sha256(PARTS[1]).hexdigest()
    # (the `marker` fixture fails the test if any part package's __init__ ran)


def test_parts_that_do_not_make_the_whole_are_not_pinned(fake_model):
    with pytest.raises(SystemExit, match="not the pinned"):
        pin_models.pin(dataclasses.replace(fake_model, sha256="0" * 64))
