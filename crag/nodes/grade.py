"""`grade`: score every retrieved document in one batched evaluator call and pick the action by the two
thresholds. When the action is not Correct and `Context.requery` is on, the knowledge base is searched again
before the action runs (`requery_due`)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.events import emit
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
    # nothing relevant found (and no route forced): the knowledge base is searched again first (`requery`);
    # one that returned nothing at all is empty, and a second search would find nothing either
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
    """Whether the chat model grades the documents: the evaluator rejected every one (Incorrect, not forced),
    there are documents, and the chat model's grade is worth asking (`resources.rechecks`)."""
    ctx = resources.context_of(runtime)
    return (
        state["action"] == "incorrect" and ctx.route == "auto" and resources.rechecks(ctx) and bool(state["documents"])
    )
