"""`grade`: score every retrieved document in one batched evaluator call and pick the action."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.context import Context
from crag.events import emit
from crag.methods.routing import decide_action, document_labels, explain
from crag.nodes.timing import timed
from crag.state import State


@timed("grade")
def grade(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    scorer = resources.evaluator(ctx)
    documents = state.get("documents", [])
    scores = scorer.invoke({"question": state["question"], "documents": documents}) if documents else []
    scores = [float(s) for s in scores]
    pair = resources.thresholds(ctx, scorer)
    decided = decide_action(scores, pair)
    action = decided if ctx.route == "auto" else ctx.route
    labels = document_labels(scores, pair)
    reason = explain(decided, scores, pair)
    if ctx.route != "auto":
        # the labels stay the thresholds': refinement judges strips of rejected documents by their own
        # score on every route, so a forced route answers as the route it forces would
        reason = f"{action.title()}, forced by the route setting (by the thresholds: {reason})"
    thresholds = pair.as_dict()
    emit(runtime, "grade", scores=scores, labels=labels, action=action, thresholds=thresholds, reason=reason)
    return {"scores": scores, "labels": labels, "action": action, "thresholds": thresholds, "reason": reason}
