"""`grade`: score the retrieved documents in one evaluator call and pick the action by the two thresholds."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.events import emit, trace_metadata
from crag.knowledge.routing import decision
from crag.nodes.timing import timed
from crag.settings import Context
from crag.state import State


@timed("grade")
def grade(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    scorer = resources.evaluator(ctx)
    documents = state.get("documents", [])
    scores = scorer.invoke({"question": state["question"], "documents": documents}) if documents else []
    scores = [float(s) for s in scores]
    pair = resources.thresholds(ctx, scorer)
    action, labels, reason = decision(scores, pair, ctx.route)
    thresholds = pair.as_dict()
    emit(runtime, "grade", scores=scores, labels=labels, action=action, thresholds=thresholds, reason=reason)
    # on the grade run of a trace (LangSmith, or its OpenTelemetry export): which action, and why
    trace_metadata(
        crag_action=action,
        crag_upper_threshold=pair.upper,
        crag_lower_threshold=pair.lower,
        crag_scores=scores,
    )
    # no documents at all: the knowledge base is empty, and a second search would find nothing either
    due = ctx.requery != "off" and ctx.route == "auto" and action != "correct" and bool(documents)
    return {
        "scores": scores,
        "labels": labels,
        "action": action,
        "thresholds": thresholds,
        "reason": reason,
        "requery_due": due,
    }


def second_opinion_due(state: State, runtime: Runtime[Context]) -> bool:
    """Whether the chat model grades the documents: the evaluator rejected all of them and rechecks are on."""
    ctx = resources.context_of(runtime)
    return (
        state["action"] == "incorrect" and ctx.route == "auto" and resources.rechecks(ctx) and bool(state["documents"])
    )
