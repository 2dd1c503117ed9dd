"""`second_opinion`: the evaluator rejected every document, so the chat model (slow, but better on
documentation) grades the first `recheck_k`; those it passes are kept whole and the action becomes Ambiguous."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.events import emit
from crag.knowledge.routing import recheck
from crag.nodes.timing import timed
from crag.settings import Context
from crag.state import State


@timed("recheck")
def second_opinion(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    asked = state["documents"][: ctx.recheck_k]
    emit(runtime, "grade", rechecking=len(asked))
    try:
        grades = [round(g, 4) for g in resources.relevance(ctx, state["question"], asked)]
    except Exception as exc:  # a failing or unreachable chat model leaves the evaluator's verdict standing
        error = f"{type(exc).__name__}: {exc}"
        emit(runtime, "grade", recheck_error=error)
        return {"recheck_scores": [], "recheck_error": error}
    update: dict = {"recheck_scores": grades, "recheck_error": None}
    action, labels, reason = state["action"], state["labels"], state["reason"]
    kept = recheck(labels, grades, ctx.recheck_threshold)  # type: ignore[arg-type]
    if kept is not None:
        action, labels, reason = kept
        update |= {"action": action, "labels": labels, "reason": reason}
    emit(runtime, "grade", recheck_scores=grades, action=action, labels=labels, reason=reason)
    return update
