"""`rewrite_and_search`: rewrite the question into keywords, search the web, fetch and refine.

A failing or slow search never fails the run: the error is recorded in `web_error` and the
answer is generated from whatever internal knowledge there is.
"""

from __future__ import annotations

from dataclasses import asdict

from langgraph.runtime import Runtime

from crag import resources
from crag.backends.fetch import fetch_all
from crag.backends.web import WebSearchError
from crag.context import Context
from crag.events import REWRITE_TAGS, emit
from crag.prompts import REWRITE_PROMPT
from crag.refinement import Passage, refine
from crag.rewrite import fallback_query, parse_query
from crag.state import State


def rewrite_query(ctx: Context, question: str) -> str:
    """The paper's few-shot keyword rewrite; the question's own keywords when the model fails."""
    try:
        reply = resources.chat(ctx, "rewrite").invoke(
            REWRITE_PROMPT.format(question=question), config={"tags": REWRITE_TAGS}
        )
        parsed = parse_query(str(reply.content), question)
    except Exception:  # a failing rewriter must not stop the search
        parsed = None
    return (parsed or fallback_query(question)).text


def rewrite_and_search(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    question = state["question"]
    query = rewrite_query(ctx, question) if ctx.rewrite else question
    emit(runtime, "rewrite_and_search", rewritten_query=query)
    try:
        results = resources.web_search(ctx, query)
    except (WebSearchError, TimeoutError, OSError) as exc:
        emit(runtime, "rewrite_and_search", web_error=str(exc))
        return {"rewritten_query": query, "web_results": [], "external_knowledge": [], "web_error": str(exc)}
    passages, errors = fetch_all(results, timeout=ctx.web_timeout, allow_private=ctx.allow_private_fetch)
    strips = refine(
        question, [Passage(p.text, p.title, p.url) for p in passages], resources.evaluator(ctx),
        mode="selection", top_k=ctx.top_k_strips, threshold=ctx.strip_threshold, origin="external",
    )
    found = [asdict(r) for r in results]
    emit(runtime, "rewrite_and_search", results=[{"title": r["title"], "url": r["url"]} for r in found],
         strips=[{"text": s["text"], "score": s["score"], "title": s["title"]} for s in strips])
    return {
        "rewritten_query": query,
        "web_results": found,
        "external_knowledge": strips,
        "web_error": "; ".join(errors) or None,
    }
