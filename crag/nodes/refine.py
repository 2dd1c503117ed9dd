"""`refine`: decompose-then-recompose the retrieved documents into internal knowledge. After the chat model's
second opinion the documents it kept are kept whole and the rest dropped: the evaluator rejected every one of them,
so its scores are no guide to which strip of a kept document answers. Otherwise the next `Context.further_strips`
strips of the same ranking are set aside as `further_knowledge`, read when the reader declines over the kept ones."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from crag import resources
from crag.events import emit
from crag.knowledge.budget import fill
from crag.knowledge.refinement import refine_pages
from crag.nodes.timing import timed
from crag.passages import titled_once
from crag.settings import Context
from crag.state import State, Strip

CHOSEN = 0.1  # the reader's share of probability at which a strip counts as picked (the best always does)


def chosen(ctx: Context, question: str, strips: list[Strip]) -> tuple[list[Strip], list[Strip]]:
    """(picked, passed over): the strips the reader names as answering (`resources.choose`); all if it cannot tell
    (equal shares)."""
    shares = resources.choose(ctx, question, [titled_once(s["text"], s["title"]) for s in strips])
    if len(set(shares)) == 1:
        return strips, []
    best = max(range(len(strips)), key=lambda i: shares[i])
    picked = [i == best or share >= CHOSEN for i, share in enumerate(shares)]
    return [s for s, p in zip(strips, picked) if p], [s for s, p in zip(strips, picked) if not p]


@timed("refine")
def refine(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    documents, labels = state.get("documents", []), state.get("labels", [])
    settings: dict[str, Any] = {"mode": ctx.refine_mode, "top_k": ctx.top_k_strips, "threshold": ctx.strip_threshold}
    rejected = [label == "incorrect" for label in labels] if len(labels) == len(documents) else None
    rechecked = bool(state.get("recheck_scores")) and rejected is not None and not all(rejected)
    if rechecked and rejected is not None:  # only the documents the chat model kept, whole, every one of them
        documents = [d for d, r in zip(documents, rejected) if not r]
        settings = {"mode": "selection", "top_k": len(documents), "threshold": -float("inf")}
    elif ctx.choose_strips:  # the reader picks among refinement's best, whatever they score
        settings = {**settings, "top_k": ctx.choose_strips, "threshold": -float("inf")}
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
    if ctx.choose_strips and not rechecked and strips:
        strips, passed = chosen(ctx, state["question"], strips)
        further = sorted(passed + further, key=lambda s: (s["doc"], s["start"]))[: ctx.further_strips]
    if rechecked and rejected is not None:  # numbered as retrieved, as every strip's document is
        kept_at = [i for i, r in enumerate(rejected) if not r]
        strips = [{**s, "doc": kept_at[s["doc"]]} for s in strips]
    elif ctx.knowledge_tokens:  # the rest of the budget with whole documents
        strips, taken = fill(strips, documents, state.get("scores") or [], ctx.knowledge_tokens, rejected=rejected)
        further = [s for s in further if s["doc"] not in taken]
    emit(runtime, "refine", strips=[{"text": s["text"], "score": s["score"], "title": s["title"]} for s in strips])
    return {"internal_knowledge": strips, "further_knowledge": further}
