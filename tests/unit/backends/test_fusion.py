"""Reciprocal rank fusion (`crag.fusion.fuse`), a pure function of rankings."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crag.fusion import fuse
from crag.settings import Context

rankings = st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=2), unique=True, max_size=12)


def test_a_document_both_lists_rank_well_beats_one_list_s_top():
    # "b": 2 / (RRF_K + 1) > "a": 1 / RRF_K
    assert fuse(["a", "b", "c"], ["d", "b", "e"])[:2] == ["b", "a"]


def test_ties_keep_the_first_ranking_s_order():
    assert fuse(["a", "b"], ["c", "d"]) == ["a", "c", "b", "d"]


@given(rankings, rankings)
def test_every_id_once_and_each_ranking_s_order_kept_among_its_own(dense, lexical):
    fused = fuse(dense, lexical)
    assert sorted(fused) == sorted(set(dense) | set(lexical))
    only_dense = [i for i in fused if i in dense and i not in lexical]
    assert only_dense == [i for i in dense if i not in lexical]


def test_context_refuses_an_unknown_search():
    assert Context(search="dense").search == "dense" and Context().search == "hybrid"
    with pytest.raises(ValueError, match="unknown search 'bm25'; choose hybrid or dense"):
        Context(search="bm25")  # type: ignore[arg-type]
