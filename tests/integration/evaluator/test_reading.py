"""What the model reads of a long passage (`crag.evaluator.reading`), with the packaged base
model's real tokenizer, and what the shipped evaluator makes of it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crag.evaluator.reading import HEAD_TOKENS, JOIN, readings

FILLER = " ".join(f"Entry {n}: the parser found a token it did not expect in line {n}." for n in range(40))
LATE = FILLER + " Deep recursion on subroutine: the subroutine called itself 100 times more than it returned."
QUESTION = "What does the warning Deep recursion on subroutine mean?"


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from crag.models.base_model import PACKAGED_BASE, resolve_base

    return AutoTokenizer.from_pretrained(resolve_base(PACKAGED_BASE))


def tokens(tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_a_passage_that_fits_is_read_whole(tokenizer):
    assert (
        readings(tokenizer, 112, [(QUESTION, "Deep recursion is a warning.")])[0][1] == "Deep recursion is a warning."
    )


def test_a_long_passage_is_read_by_its_start_and_the_stretch_about_the_question(tokenizer):
    read = readings(tokenizer, 112, [(QUESTION, "perldiag: " + LATE)])[0][1]
    start, stretch = read.split(JOIN)
    assert ("perldiag: " + LATE).startswith(start)
    assert tokens(tokenizer, start) == HEAD_TOKENS
    assert "Deep recursion on subroutine" in stretch and stretch in LATE
    assert tokens(tokenizer, QUESTION) + tokens(tokenizer, read) + 3 <= 112


def test_a_long_passage_whose_start_reads_best_is_read_as_before(tokenizer):
    early = "Deep recursion on subroutine: the subroutine called itself. " + FILLER
    assert readings(tokenizer, 112, [(QUESTION, early)])[0][1] == early  # the tokenizer truncates it as before


def test_a_question_without_content_words_reads_the_passage_as_before(tokenizer):
    assert readings(tokenizer, 112, [("What is it?", LATE)])[0][1] == LATE


def test_a_tokenizer_without_offsets_reads_from_the_start():
    class Slow:  # a pure-Python tokenizer: no character offsets to cut a passage by
        is_fast = False

        def __call__(self, *args, **kwargs):
            raise NotImplementedError("return_offsets_mapping is not available")

    assert readings(Slow(), 112, [(QUESTION, LATE)])[0][1] == LATE


def test_rarer_terms_weigh_more(tokenizer):
    """Two stretches, each with one of the question's terms: the one with the rarer term is read."""
    passage = FILLER + " The warning is common. " + FILLER + " A recursion is rare. " + FILLER
    rare = {"recurs": 9.0, "warn": 1.0}
    read = readings(tokenizer, 112, [("warning recursion", passage)], lambda t: rare.get(t, 1.0))[0][1]
    assert "recursion is rare" in read and "warning is common" not in read


@settings(max_examples=60, deadline=None)
@given(
    question=st.text(min_size=1, max_size=80),
    passage=st.text(min_size=0, max_size=1500),
    max_length=st.sampled_from([64, 112, 256]),
)
def test_any_text_reads_as_the_passage_or_its_start_and_a_piece_of_it(tokenizer, question, passage, max_length):
    read = readings(tokenizer, max_length, [(question, passage)])[0][1]
    if read != passage:
        start, _, stretch = read.partition(JOIN)
        assert passage.startswith(start) and stretch and stretch in passage


def test_the_shipped_evaluator_grades_a_chunk_by_its_stretch_about_the_question():
    """perldiag's chunk that opens with another warning and ends with the one asked about: read from
    its start only, it scored −0.93 ("Deep recursion", docs/reports/2026-11-24-evaluator-long-passages.md)."""
    from crag.evaluator.runnable import get_scorer

    scorer = get_scorer(None)
    chunk = (
        "perldiag: Declaring references is experimental (S experimental::declared_refs) This warning is "
        'emitted if you use a reference constructor on the right-hand side of "my", "state", "our", or '
        '"local". Simply suppress the warning if you want to use the feature, but know that in doing so '
        "you are taking the risk of using an experimental feature which may change or be removed in a "
        'future Perl version: no warnings "experimental::declared_refs"; use feature "declared_refs"; '
        '$fooref = my \\$foo; Deep recursion on anonymous subroutine Deep recursion on subroutine "%s" '
        "(W recursion) This subroutine has called itself (directly or indirectly) 100 times more than it "
        "has returned. This probably indicates an infinite recursion, unless you're writing strange "
        "benchmark programs, in which case it indicates something else."
    )
    other = chunk.split("$fooref")[0]  # the same chunk without the warning asked about
    relevant, unrelated = scorer.score([(QUESTION, chunk), (QUESTION, other)])
    assert relevant >= scorer.thresholds.upper > unrelated
