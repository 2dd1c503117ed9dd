"""`refine`: decompose-then-recompose the retrieved documents into internal knowledge (they are
passages already, `crag.core.passages`, so they go to refinement as they are).

After the chat model's second opinion (`grade`, `Context.recheck_threshold`) the documents it kept are
kept whole and the rest dropped: the evaluator rejected every one of them, so its scores are no guide
to which strip of a kept document answers. Decomposed, the one strip kept for "a scratch folder that
removes itself" was a `tar` option from a rejected document, while the `TemporaryDirectory` page the
chat model had kept was cut away (docs/reports/2026-11-28-second-opinion.md).

Otherwise the next `Context.further_strips` strips of the same ranking are kept aside as
`further_knowledge`: `generate` reads them when the model declines over the kept ones."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.context import Context
from crag.events import emit
from crag.methods.refinement import refine_pages
from crag.nodes.timing import timed
from crag.state import State


@timed("refine")
def refine(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    documents, labels = state.get("documents", []), state.get("labels", [])
    settings = {"mode": ctx.refine_mode, "top_k": ctx.top_k_strips, "threshold": ctx.strip_threshold}
    rejected = [label == "incorrect" for label in labels] if len(labels) == len(documents) else None
    rechecked = bool(state.get("recheck_scores")) and rejected is not None and not all(rejected)
    if rechecked:  # only the documents the chat model kept, whole, every one of them
        documents = [d for d, r in zip(documents, rejected) if not r]
        settings = {"mode": "selection", "top_k": len(documents), "threshold": -float("inf")}
    strips, further = refine_pages(
        state["question"],
        documents,
        resources.evaluator(ctx),
        embed=resources.strip_embedder(ctx),
        set_weight=ctx.strip_set_weight,
        origin="internal",
        keep_best=True,  # the grade judged these documents relevant
        # strips of documents the grade rejected are judged by their own score (refinement.gate_score)
        rejected=None if rechecked else rejected,
        further=0 if rechecked else ctx.further_strips,
        **settings,
    )
    if rechecked:  # numbered as retrieved, as every strip's document is
        kept_at = [i for i, r in enumerate(rejected) if not r]
        strips = [{**s, "doc": kept_at[s["doc"]]} for s in strips]
    emit(runtime, "refine", strips=[{"text": s["text"], "score": s["score"], "title": s["title"]} for s in strips])
    return {"internal_knowledge": strips, "further_knowledge": further}
