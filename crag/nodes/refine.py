"""`refine`: decompose-then-recompose the retrieved documents into internal knowledge (they are
passages already, `crag.core.passages`, so they go to refinement as they are)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.context import Context
from crag.events import emit
from crag.methods.refinement import refine as refine_passages
from crag.nodes.timing import timed
from crag.state import State


@timed("refine")
def refine(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    documents, labels = state.get("documents", []), state.get("labels", [])
    strips = refine_passages(
        state["question"],
        documents,
        resources.evaluator(ctx),
        mode=ctx.refine_mode,
        top_k=ctx.top_k_strips,
        threshold=ctx.strip_threshold,
        embed=resources.strip_embedder(ctx),
        set_weight=ctx.strip_set_weight,
        origin="internal",
        keep_best=True,  # the grade judged these documents relevant
        # strips of documents the grade rejected are judged by their own score (refinement.gate_score)
        rejected=[label == "incorrect" for label in labels] if len(labels) == len(documents) else None,
    )
    emit(runtime, "refine", strips=[{"text": s["text"], "score": s["score"], "title": s["title"]} for s in strips])
    return {"internal_knowledge": strips}
