"""`refine`: decompose-then-recompose the retrieved documents into internal knowledge."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.context import Context
from crag.events import emit
from crag.methods.refinement import Passage
from crag.methods.refinement import refine as refine_passages
from crag.nodes.timing import timed
from crag.state import State


@timed("refine")
def refine(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    passages = [
        Passage(d.page_content, str(d.metadata.get("title", "")), str(d.metadata.get("source", "")))
        for d in state.get("documents", [])
    ]
    strips = refine_passages(
        state["question"],
        passages,
        resources.evaluator(ctx),
        mode=ctx.refine_mode,
        top_k=ctx.top_k_strips,
        threshold=ctx.strip_threshold,
        origin="internal",
        keep_best=True,  # the grade judged these documents relevant
    )
    emit(runtime, "refine", strips=[{"text": s["text"], "score": s["score"], "title": s["title"]} for s in strips])
    return {"internal_knowledge": strips}
