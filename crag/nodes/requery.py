"""`requery`: search the knowledge base again with the chat model's query, keep the best-graded documents
of both searches and decide the action again. A failing model leaves the first search as it was."""

from __future__ import annotations

import time

from langgraph.runtime import Runtime

from crag import resources
from crag.events import REQUERY_TAGS, emit
from crag.knowledge.requery import merge_graded, query_text
from crag.knowledge.routing import decision
from crag.nodes.timing import timed
from crag.passages import source_of, title_of
from crag.settings import Context
from crag.state import State
from crag.templates import filled


@timed("requery")
def requery(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    question = state["question"]
    clock = time.perf_counter()
    try:
        kind = "requery" if ctx.requery == "rewrite" else ctx.requery  # the prompt's and its reply's name
        text, _ = resources.write(
            ctx, kind, filled(kind, ctx.prompts, question=question), config={"tags": REQUERY_TAGS}
        )
        query = query_text(text, question)
    except Exception as exc:  # a failing model must not stop the answer: the first search stands
        emit(runtime, "requery", requery_error=f"{type(exc).__name__}: {exc}")
        return {"requery_due": False}
    timings = {"requery_model": round(time.perf_counter() - clock, 4)}
    if query is None:
        emit(runtime, "requery", requery_query="", added=0)
        return {"requery_due": False, "timings": timings}
    found = resources.retrieve(ctx, query)
    documents = state.get("documents", [])
    old = {d.page_content for d in documents}
    new = [d for d in found if d.page_content not in old]
    scorer = resources.evaluator(ctx)
    new_scores = [float(s) for s in scorer.invoke({"question": question, "documents": new})] if new else []
    kept, scores = merge_graded(documents, state.get("scores", []), new, new_scores, ctx.k)
    pair = resources.thresholds(ctx, scorer)
    action, labels, reason = decision(scores, pair)
    added = [d for d in kept if d.page_content not in old]
    emit(
        runtime,
        "requery",
        requery_query=query,
        added=len(added),
        documents=[{"title": title_of(d), "source": source_of(d)} for d in added],
        scores=scores,
        action=action,
    )
    return {
        "requery_due": False,
        "requeried": query,
        "documents": kept,
        "scores": scores,
        "labels": labels,
        "action": action,
        "reason": f"{reason} (after searching the knowledge base again)",
        "timings": timings,
    }
