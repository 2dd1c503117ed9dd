"""The chat model's second opinion when the evaluator rejects every document (`Context.recheck_threshold`)."""

from __future__ import annotations

import dataclasses
import math

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from crag import resources
from crag.graphs.crag import build_graph, graph
from crag.knowledge.routing import recheck
from crag.models.yes_no import GRADER_HUMAN, reply_score
from crag.settings import Context
from tests.fakes import DOCS, FakeChat, fake_chat

QUESTION = "What is Anna Berg's occupation?"
GRADE_START = GRADER_HUMAN.split("{document}")[0]


def grades_asked(chat: FakeChat) -> list[str]:
    return [p for p in chat.prompts if p.startswith(GRADE_START)]


def test_a_document_the_chat_model_keeps_turns_incorrect_into_ambiguous(make_context):
    # every document scores -0.9, below the lower threshold -0.5: Incorrect by the evaluator
    chat = fake_chat("Yes", "no", "Anna Berg, occupation", "She was a painter.")
    ctx = dataclasses.replace(make_context({}), chat_model=chat, recheck_threshold=-0.4)
    result = graph.invoke({"question": QUESTION}, context=ctx)
    asked = grades_asked(chat)
    assert len(asked) == 2 and "Anna Berg was a Swedish painter" in asked[0] and QUESTION in asked[0]
    assert result["recheck_scores"] == [1.0, -1.0]
    assert result["action"] == "ambiguous" and result["labels"] == ["ambiguous", "incorrect"]
    assert "chat model judged rank 1 relevant" in result["reason"]
    # Ambiguous: the kept document's strips reach the generator, and the web is searched too (its page scores
    # -0.9 here, so refinement keeps none of it)
    # the kept document whole (the evaluator, wrong about it, is no guide to its strips); the other dropped
    assert [(s["text"], s["doc"]) for s in result["internal_knowledge"]] == [(DOCS[0].page_content, 0)]
    assert result["web_status"] == "searched"
    assert result["answer"] == "She was a painter." and result["grounded"]
    assert "recheck" in result["timings"]


def test_the_chat_model_reads_only_the_first_recheck_k_documents(make_context):
    chat = fake_chat("no", "Anna Berg, occupation", "She was a painter.")
    ctx = dataclasses.replace(make_context({}), chat_model=chat, recheck_threshold=-0.4, recheck_k=1)
    result = graph.invoke({"question": QUESTION}, context=ctx)
    asked = grades_asked(chat)
    assert len(asked) == 1 and "Anna Berg was a Swedish painter" in asked[0]
    assert result["recheck_scores"] == [-1.0] and result["action"] == "incorrect"
    assert result["labels"] == ["incorrect", "incorrect"]


def test_a_kept_document_is_numbered_as_retrieved(make_context):
    chat = fake_chat("no", "yes", "Carl Dahl, club", "He plays as a striker.")
    ctx = dataclasses.replace(make_context({}), chat_model=chat, recheck_threshold=-0.4)
    result = graph.invoke({"question": "Which club does Carl Dahl play for?"}, context=ctx)
    assert result["labels"] == ["incorrect", "ambiguous"]
    assert [(s["title"], s["doc"]) for s in result["internal_knowledge"]] == [("Carl Dahl", 1)]
    assert result["sources"] and result["sources"][0]["doc"] == 1


def test_when_the_chat_model_keeps_nothing_incorrect_stands(make_context):
    chat = fake_chat("No.", "no", "Anna Berg, occupation", "She was a painter.")
    result = graph.invoke(
        {"question": QUESTION}, context=dataclasses.replace(make_context({}), chat_model=chat, recheck_threshold=-0.4)
    )
    assert result["recheck_scores"] == [-1.0, -1.0]
    assert result["action"] == "incorrect" and result["internal_knowledge"] == []
    assert "chat model" not in result["reason"]


def test_a_chat_model_that_fails_leaves_incorrect_standing(make_context):
    class Broken(FakeChat):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            if str(messages[-1].content).startswith(GRADE_START):
                raise TimeoutError("the provider did not answer in 60 s")
            return super()._generate(messages, stop, run_manager, **kwargs)

    chat = Broken(messages=fake_chat("Anna Berg, occupation", "She was a painter.").messages)
    events = []
    ctx = dataclasses.replace(make_context({}), chat_model=chat, recheck_threshold=-0.4)
    for mode, chunk in graph.stream({"question": QUESTION}, context=ctx, stream_mode=["custom", "values"]):
        if mode == "custom":
            events.append(chunk)
        else:
            result = chunk
    assert result["action"] == "incorrect" and result["recheck_scores"] == []
    assert result["recheck_error"] == "TimeoutError: the provider did not answer in 60 s"  # the plain view says it
    assert {"node": "grade", "recheck_error": "TimeoutError: the provider did not answer in 60 s"} in events


@pytest.mark.parametrize(
    "rules, changes",
    [
        ({"painter": 0.9}, {}),  # Correct: nothing to second-guess
        ({"painter": 0.0}, {}),  # Ambiguous: the documents are kept already
        ({}, {"recheck_threshold": None}),  # off
        ({}, {"recheck_threshold": 1.5}),  # above 1: never
        ({}, {"route": "incorrect"}),  # a forced route is the user's, not the grade's
    ],
)
def test_the_chat_model_is_asked_only_about_an_incorrect_grade_it_may_overrule(make_context, rules, changes):
    chat = fake_chat("Anna Berg, occupation", "She was a painter.")
    result = graph.invoke(
        {"question": QUESTION},
        context=dataclasses.replace(make_context(rules), chat_model=chat, **{"recheck_threshold": -0.4, **changes}),
    )
    assert grades_asked(chat) == [] and result["recheck_scores"] == []


def test_a_thread_turn_leaves_no_grades_behind(make_context):
    g = build_graph().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    chat = fake_chat("yes", "no", "Anna Berg, occupation", "She was a painter.")
    g.invoke(
        {"question": QUESTION},
        context=dataclasses.replace(make_context({}), chat_model=chat, recheck_threshold=-0.4),
        config=config,
    )
    second = dataclasses.replace(make_context({"painter": 0.9}, "She painted the sea."), recheck_threshold=-0.4)
    result = g.invoke({"question": "Where do Anna Berg's works hang?"}, context=second, config=config)
    assert result["action"] == "correct" and result["recheck_scores"] == []


def test_recheck_relabels_only_the_documents_at_the_threshold():
    action, labels, reason = recheck(["incorrect"] * 3, [-0.9, -0.4, 0.3], -0.4)
    assert action == "ambiguous" and labels == ["incorrect", "ambiguous", "ambiguous"]
    assert "rank 2, 3" in reason and "+0.300" in reason
    assert recheck(["incorrect"] * 2, [-0.9, -0.41], -0.4) is None


@pytest.mark.parametrize(
    "reply, score",
    [("yes", 1.0), ("Yes.", 1.0), ("**Yes**", 1.0), (" 'yes' ", 1.0), ("yes, it is relevant", 1.0),
     ("no", -1.0), ("No.", -1.0), ("", -1.0), ("I think yes", -1.0), ("yesterday", -1.0)],
)  # fmt: skip
def test_a_reply_is_read_as_a_grade(reply, score):
    assert reply_score(reply) == score


def test_recheck_threshold_is_checked():
    assert Context(recheck_threshold=None).rechecks is False
    assert Context(recheck_threshold=2.0).rechecks is False
    assert Context().rechecks is True
    with pytest.raises(ValueError, match="recheck_threshold"):
        Context(recheck_threshold=math.nan)
    with pytest.raises(ValueError, match="recheck_k"):
        Context(recheck_k=0)


@pytest.mark.parametrize(
    "model, asked",
    [
        ("local", True),
        ("local:small", False),
        ("local:tiny", False),
        ("local:/models/own.gguf", True),
        ("openai:gpt-4o-mini", True),
    ],
)
def test_only_a_chat_model_whose_grade_is_worth_asking_is_asked(model, asked):
    assert resources.rechecks(Context(chat_model=model)) is asked
    assert resources.rechecks(Context(chat_model=model, recheck_threshold=None)) is False
    assert resources.rechecks(Context(chat_model=fake_chat("no"))) is True
