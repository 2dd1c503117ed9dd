"""`grade`: score every retrieved document in one batched evaluator call and pick the action. When the
evaluator rejects every document, the chat model grades the first `Context.recheck_k` of them
(`Context.recheck_threshold`): its grade is slow (seconds a document) but ranks documentation far
better than the evaluator, so it is asked only where the evaluator's verdict would throw the knowledge
base's documents away. When the action is not Correct and `Context.requery` is on, the knowledge base
is searched again before the action runs."""

from __future__ import annotations

import time

from langgraph.runtime import Runtime

from crag import resources
from crag.events import emit
from crag.knowledge.routing import decision, recheck
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
    update: dict = {}
    if action == "incorrect" and ctx.route == "auto" and resources.rechecks(ctx) and documents:
        # the first `recheck_k` by retrieval rank: the grade costs seconds a document, and at k 10 an
        # unanswerable question waited 40-65 s for it on two cores
        asked = documents[: ctx.recheck_k]
        emit(runtime, "grade", rechecking=len(asked))
        clock = time.perf_counter()
        grades: list[float] = []
        error = None
        try:
            grades = [round(g, 4) for g in resources.relevance(ctx, state["question"], asked)]
        except Exception as exc:  # a failing or unreachable chat model leaves the evaluator's verdict standing
            error = f"{type(exc).__name__}: {exc}"
            emit(runtime, "grade", recheck_error=error)
        else:
            second = recheck(labels, grades, ctx.recheck_threshold)  # type: ignore[arg-type]
            if second is not None:
                action, labels, reason = second
            emit(runtime, "grade", recheck_scores=grades, action=action, labels=labels, reason=reason)
        update = {
            "recheck_scores": grades,
            "recheck_error": error,
            "timings": {"recheck": round(time.perf_counter() - clock, 4)},
        }
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
        **update,
    }
