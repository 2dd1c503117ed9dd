"""`rewrite_and_search`: rewrite the question into keywords, search the web, fetch and refine.
A failing search never fails the run: the error goes to `web_error`."""

from __future__ import annotations

import time

from langgraph.runtime import Runtime

from crag import resources
from crag.events import REWRITE_TAGS, emit
from crag.knowledge.refinement import refine
from crag.knowledge.web_query import fallback_query, parse_query
from crag.nodes.timing import timed
from crag.passages import source_of, title_of
from crag.settings import Context
from crag.state import State
from crag.templates import filled


def rewrite_query(ctx: Context, question: str, mode: str | None = None) -> str:
    """The web query `mode` (default `ctx.rewrite`) asks for; the model's falls back to the question's keywords."""
    mode = mode or ctx.rewrite
    if mode == "off":
        return question
    if mode == "keywords":
        return fallback_query(question).text
    try:
        prompt = filled("rewrite", ctx.prompts, question=question)
        text, _ = resources.write(ctx, "rewrite", prompt, config={"tags": REWRITE_TAGS})
        parsed = parse_query(text, question)  # a provider's query field, or the local model's line, checked
    except Exception:  # a failing rewriter must not stop the search
        parsed = None
    return (parsed or fallback_query(question)).text


@timed("rewrite_and_search")
def rewrite_and_search(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    if not ctx.has_web:
        emit(runtime, "rewrite_and_search", web_status="not configured")
        return {"web_status": "not configured", "web_results": [], "external_knowledge": []}
    question = state["question"]
    clock = time.perf_counter()
    query = rewrite_query(ctx, question)
    timings = {"rewrite": round(time.perf_counter() - clock, 4)}
    emit(runtime, "rewrite_and_search", rewritten_query=query)
    clock = time.perf_counter()
    try:
        results = resources.web_search(ctx, query)
    except (resources.WebSearchError, TimeoutError, OSError) as exc:
        emit(runtime, "rewrite_and_search", web_error=str(exc))
        return {
            "rewritten_query": query,
            "web_status": "failed",
            "web_results": [],
            "external_knowledge": [],
            "web_error": str(exc),
            "timings": {**timings, "search": round(time.perf_counter() - clock, 4)},
        }
    passages, errors = resources.fetch_pages(ctx, results)
    timings["search"] = round(time.perf_counter() - clock, 4)
    clock = time.perf_counter()
    strips = refine(
        question,
        passages,
        resources.evaluator(ctx),
        mode="selection",
        top_k=ctx.top_k_strips,
        threshold=ctx.strip_threshold,
        embed=resources.strip_embedder(ctx),
        set_weight=ctx.strip_set_weight,
        origin="external",
    )
    timings["refine_web"] = round(time.perf_counter() - clock, 4)
    emit(
        runtime,
        "rewrite_and_search",
        results=[{"title": title_of(r), "url": source_of(r)} for r in results],
        strips=[{"text": s["text"], "score": s["score"], "title": s["title"]} for s in strips],
    )
    return {
        "rewritten_query": query,
        "web_status": "searched",
        "web_results": results,
        "external_knowledge": strips,
        "web_error": "; ".join(errors) or None,
        "timings": timings,
    }
