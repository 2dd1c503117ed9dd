"""The compiled graph on fakes: each route, the parallel join, failures, bad input, threads."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from crag.graph import build_graph, graph
from crag.nodes.contextualize import InvalidQuestion

QUESTION = "What is Anna Berg's occupation?"
SNAPSHOT = Path(__file__).with_name("graph.mmd")


def run(context, question=QUESTION, g=graph, config=None):
    updates = list(g.stream({"question": question}, context=context, stream_mode="updates", config=config))
    nodes = [name for update in updates for name in update]
    final = g.get_state(config).values if config else None
    return nodes, updates, final


def test_mermaid_snapshot():
    assert graph.get_graph().draw_mermaid() == SNAPSHOT.read_text()


def test_correct_route_refines_internal_knowledge_only(make_context):
    ctx = make_context({"painter": 0.9}, "Anna Berg was a painter [1].")
    nodes, _, _ = run(ctx)
    assert nodes == ["contextualize", "retrieve", "grade", "refine", "generate"]
    result = graph.invoke({"question": QUESTION}, context=make_context({"painter": 0.9}, "She was a painter [1]."))
    assert result["action"] == "correct" and result["labels"] == ["correct", "incorrect"]
    assert result["answer"] == "She was a painter [1]."
    assert [s["source"] for s in result["sources"]] == ["kb/anna.txt"]
    assert "painter" in result["knowledge"] and "footballer" not in result["knowledge"]
    assert ctx.web_backend.queries == []


def test_incorrect_route_searches_the_web(make_context):
    ctx = make_context({"seascapes": 0.8}, "Anna Berg, occupation", "A painter of seascapes [1].")
    nodes, _, _ = run(ctx)
    assert nodes == ["contextualize", "retrieve", "grade", "rewrite_and_search", "generate"]
    ctx = make_context({"seascapes": 0.8}, "Anna Berg, occupation", "A painter of seascapes [1].")
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["action"] == "incorrect"
    assert ctx.web_backend.queries == ["Anna Berg, occupation"] and result["rewritten_query"] == "Anna Berg, occupation"
    assert [s["origin"] for s in result["sources"]] == ["external"]
    assert result["sources"][0]["title"] == "Anna Berg (painter)"


def test_ambiguous_runs_both_branches_and_generates_once(make_context):
    ctx = make_context({"Swedish": 0.0, "seascapes": 0.7}, "Anna Berg, occupation", "A painter [1][2].")
    nodes, updates, _ = run(ctx)
    assert nodes[:3] == ["contextualize", "retrieve", "grade"]
    assert sorted(nodes[3:5]) == ["refine", "rewrite_and_search"]
    assert nodes[5:] == ["generate"] and nodes.count("generate") == 1
    final = updates[-1]["generate"]
    assert {s["origin"] for s in final["sources"]} == {"internal", "external"}


def test_evaluator_is_called_once_per_batch_not_per_document(make_context):
    ctx = make_context({"painter": 0.9}, "answer")
    graph.invoke({"question": QUESTION}, context=ctx)
    grading, refining = ctx.evaluator.calls
    assert len(grading) == 2  # both documents in one call
    assert len(refining) >= 2  # all strips of all documents in one call


def test_web_failure_falls_back_to_internal_knowledge(make_context, failing_web):
    ctx = make_context({"Swedish": 0.0}, "Anna Berg, occupation", "A painter [1].", web=failing_web)
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["action"] == "ambiguous"
    assert "timed out" in result["web_error"]
    assert [s["origin"] for s in result["sources"]] == ["internal"] and result["answer"] == "A painter [1]."


def test_web_failure_with_nothing_internal_still_answers(make_context, failing_web):
    ctx = make_context({}, "Anna Berg, occupation", "I do not know.", web=failing_web)
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["action"] == "incorrect" and result["sources"] == [] and result["answer"] == "I do not know."


def test_unusable_rewrite_falls_back_to_question_keywords(make_context):
    ctx = make_context({"seascapes": 0.8}, "???", "A painter [1].")
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["rewritten_query"] == "Anna Berg, occupation"


def test_uncited_answers_get_their_sources_appended(make_context):
    result = graph.invoke({"question": QUESTION}, context=make_context({"painter": 0.9}, "She painted [7]."))
    assert result["answer"] == "She painted. [1]"


@pytest.mark.parametrize(
    "question, message",
    [("", "empty"), ("   ", "empty"), ("x" * 20_000, "20,000 characters"), (42, "must be text"), (None, "must be text")],
)
def test_bad_questions_get_clear_errors(make_context, question, message):
    with pytest.raises(InvalidQuestion, match=message):
        graph.invoke({"question": question}, context=make_context({}, "unused"))


def test_threads_do_not_accumulate_documents_or_knowledge(make_context):
    g = build_graph().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    first = make_context({"seascapes": 0.8}, "Anna Berg, occupation", "A painter [1].")
    g.invoke({"question": QUESTION}, context=first, config=config)
    second = make_context({"painter": 0.9}, "Still a painter [1].")
    g.invoke({"question": "Where does Anna Berg's work hang?"}, context=second, config=config)
    state = g.get_state(config).values
    assert state["action"] == "correct"
    assert len(state["documents"]) == 2 and state["external_knowledge"] == [] and state["web_results"] == []
    assert [s["origin"] for s in state["sources"]] == ["internal"]
