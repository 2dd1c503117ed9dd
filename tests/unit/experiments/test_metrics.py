"""Answer matching, knowledge recall, token counts, bootstrap intervals and the threshold sweep."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from crag.evaluation import answer_metrics as metrics


def test_match_is_case_sensitive_substring_by_default():
    assert metrics.match("She was a painter in Oslo.", ["painter"])
    assert not metrics.match("She was a Painter.", ["painter"])
    assert metrics.match("She was a Painter.", ["painter"], case_sensitive=False)
    assert metrics.match("a portrait painter", ["sculptor", "painter"])
    assert not metrics.match("anything", [""])  # an empty alias never matches everything


def test_strip_citations_removes_only_source_markers():
    assert metrics.strip_citations("A painter [1][2].") == "A painter."
    assert metrics.strip_citations("born in 1890 [3]") == "born in 1890"


def test_contains_answer_needs_whole_words_in_any_case():
    assert metrics.contains_answer("Genre: Pop music", ["pop"])
    assert not metrics.contains_answer("Napoleon and the population", ["pop", "pol"])
    assert metrics.contains_answer("born in Rīga, Latvia", ["Rīga"])
    assert metrics.contains_answer("Rhythm and blues (R&B) singer", ["R&B"])
    assert not metrics.contains_answer("Washington", ["W"])
    assert metrics.contains_answer("New York City is big", ["new york city"])


def test_count_tokens_counts_words_and_punctuation():
    assert metrics.count_tokens("Anna Berg, a painter.") == 6
    assert metrics.count_tokens("") == 0


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    values = [1.0] * 30 + [0.0] * 70
    low, high = metrics.bootstrap_ci(values)
    assert low < 0.3 < high and low > 0.18 and high < 0.42
    assert metrics.bootstrap_ci(values) == [low, high]
    continuous = list(np.random.default_rng(5).normal(size=50))
    assert metrics.bootstrap_ci(continuous, seed=1) != metrics.bootstrap_ci(continuous, seed=2)
    assert metrics.bootstrap_ci([1.0] * 10) == [1.0, 1.0]
    assert all(math.isnan(x) for x in metrics.bootstrap_ci([]))


def test_bootstrap_interval_narrows_with_more_questions():
    small = metrics.bootstrap_ci([1.0, 0.0] * 10)
    large = metrics.bootstrap_ci([1.0, 0.0] * 500)
    assert large[1] - large[0] < (small[1] - small[0]) / 3


def test_paired_difference():
    result = metrics.paired_difference([1, 1, 1, 0], [0, 1, 0, 0])
    assert result["mean"] == pytest.approx(0.5) and result["n"] == 4
    assert result["ci"][0] <= 0.5 <= result["ci"][1]
    with pytest.raises(ValueError):
        metrics.paired_difference([1], [1, 0])


def _record(correct, action="correct", wall=2.0, **extra):
    return {
        "correct": correct,
        "correct_insensitive": correct or extra.pop("any_case", False),
        "knowledge_recall": True,
        "knowledge_tokens": 10,
        "action": action,
        "evaluator_calls": 2,
        "evaluator_pairs": 7,
        "latency": {"retrieve": 0.1, "generate": 1.0, "search": 0.5, "rewrite": 0.4},
        "wall_s": wall,
        **extra,
    }


def test_summarize_row():
    rows = [_record(True), _record(False, "incorrect", any_case=True), _record(False, "incorrect", error="boom")]
    r = metrics.summarize(rows)
    assert r["n"] == 3 and r["accuracy"] == pytest.approx(1 / 3) and r["accuracy_insensitive"] == pytest.approx(2 / 3)
    assert r["actions"] == {"correct": 1, "ambiguous": 0, "incorrect": 2}
    assert r["accuracy_by_action"] == {"correct": 1.0, "incorrect": 0.0}
    assert r["latency"]["retrieve"] == pytest.approx(0.1) and r["latency"]["grade"] == 0.0
    assert r["latency"]["per_question"] == pytest.approx(2.0) and r["wall_s"] == pytest.approx(6.0)
    assert r["errors"] == 1 and r["evaluator_calls"] == 2
    assert metrics.summarize([_record(True, action=None)])["actions"] == {}


def test_seconds_per_question_at_the_median_and_the_95th_percentile():
    latency = metrics.summarize([_record(True, wall=w) for w in (1.0, 2.0, 3.0, 4.0, 100.0)])["latency"]
    assert latency["p50"] == pytest.approx(3.0) and latency["p95"] == pytest.approx(80.8)
    assert latency["per_question"] == pytest.approx(22.0)  # the mean, which one slow question pulls up


def _honest_record(
    answerable=True, abstained=False, knowledge=True, documents=True, draft_correct=False, cited=(), **extra
):
    return {
        "answerable": answerable,
        "abstained": abstained,
        "knowledge_recall": knowledge,
        "documents_with_answer": [documents],
        "draft_correct": draft_correct,
        "cited": bool(cited),
        "citations_with_answer": list(cited),
        "grounded": bool(cited),
        **extra,
    }


def test_honesty_figures_count_each_kind_of_question_apart():
    records = [
        _honest_record(answerable=False, abstained=True, knowledge=False, documents=False),
        _honest_record(answerable=False, abstained=False, knowledge=False, documents=False),
        _honest_record(cited=[True, False], quoted=True, correct=True),  # a quote, one of two citations holds it
        _honest_record(abstained=True, draft_correct=True),  # the draft was right but withheld
        _honest_record(abstained=True, knowledge=False, documents=True),  # refinement lost the answer
        _honest_record(abstained=True, knowledge=False, documents=False),  # retrieval never had it
    ]
    figures = metrics.honesty(records)
    assert figures["n_unanswerable"] == 2
    assert figures["abstention_unanswerable"] == 0.5
    assert figures["abstention_answerable"] == 0.75
    assert figures["abstention_with_knowledge"] == 0.5  # the two whose knowledge held an answer
    assert figures["withheld_correct"] == 0.25
    assert figures["strip_recall"] == pytest.approx(2 / 3)  # of the three whose documents had an answer
    assert figures["supported"] == 0.25
    assert figures["citation_precision"] == 0.5
    assert figures["quoted"] == 0.25 and figures["quotes_correct"] == 1.0


def test_each_abstention_is_owed_to_the_first_stage_that_lost_the_answer():
    records = [
        _honest_record(abstained=True, action="ambiguous"),  # the knowledge held it: the model declined
        _honest_record(abstained=True, knowledge=False, action="incorrect"),  # the grade threw it away
        _honest_record(abstained=True, knowledge=False, action="correct"),  # refinement kept other strips
        _honest_record(abstained=True, knowledge=False, documents=False, action="incorrect"),  # never retrieved
        _honest_record(abstained=False, knowledge=False, documents=False),  # answered: no cause
        _honest_record(answerable=False, abstained=True, knowledge=False, documents=False),  # not counted
    ]
    causes = [metrics.abstention_cause(r) for r in records]
    assert causes == ["declined_with_answer", "rejected", "refined_away", "not_retrieved", None, None]
    figures = metrics.honesty(records)
    assert figures["abstained_by_cause"] == dict.fromkeys(metrics.ABSTENTION_CAUSES, 0.2)
    assert sum(figures["abstained_by_cause"].values()) == pytest.approx(figures["abstention_answerable"])
    assert figures["answer_reachable"] == pytest.approx(0.6)  # neither the never-retrieved one nor the wrong answer


@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "abstained": st.booleans(),
                "knowledge": st.booleans(),
                "documents": st.booleans(),
                "action": st.sampled_from(metrics.ACTIONS),
            }
        ),
        min_size=1,
        max_size=20,
    )
)
def test_the_causes_add_up_to_the_abstention_on_answerable_questions(rows):
    figures = metrics.honesty([_honest_record(**row) for row in rows])
    assert sum(figures["abstained_by_cause"].values()) == pytest.approx(figures["abstention_answerable"])


def test_without_quotes_their_precision_is_undefined_not_zero():
    figures = metrics.honesty([_honest_record(cited=[True]), _honest_record(abstained=True)])
    assert figures["quoted"] == 0.0 and math.isnan(figures["quotes_correct"])


@pytest.mark.parametrize(
    "draft, question, looping",
    [
        (
            "Jonckheere is a scientist who has a variety of roles. He is a scientist who has a variety of roles.",
            "What is Robert Jonckheere's occupation?",
            True,
        ),
        (
            "What is Robert Jonckheere's occupation? He was an astronomer.",
            "What is Robert Jonckheere's occupation?",
            True,
        ),
        ("Julia de Asensi was a writer. Question: What is her genre?", "What is Julia de Asensi's occupation?", True),
        ("Robert Jonckheere was a Belgian astronomer.", "What is Robert Jonckheere's occupation?", False),
        ("He was a painter, a poet and a printer.", "What was his job?", False),
    ],
)
def test_degenerate_drafts_loop_or_echo_the_question(draft, question, looping):
    assert metrics.degenerate(draft, question) is looping
