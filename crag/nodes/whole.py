"""Plain RAG's knowledge for the baselines: the retrieved documents and the web's results, whole and unscored."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.knowledge.budget import whole
from crag.settings import Context
from crag.state import Strip


def whole_strips(documents: list, origin: str, ranks: list[int] | None = None) -> list[Strip]:
    """Each document as one strip; `ranks`: their places in the retrieved list (default: in order)."""
    ranks = list(range(len(documents))) if ranks is None else ranks
    return [whole(d, i, 0.0, False, origin) for i, d in zip(ranks, documents, strict=True)]


def use_documents(state: dict, runtime: Runtime[Context]) -> dict:
    """RAG: every retrieved document becomes knowledge as it is."""
    return {"internal_knowledge": whole_strips(state.get("documents", []), "internal")}


def web_search(state: dict, runtime: Runtime[Context]) -> dict:
    """The web's results, whole, for the rewritten query if a step wrote one, else for the question itself
    (RAG with web)."""
    ctx = resources.context_of(runtime)
    try:
        results = resources.web_search(ctx, state.get("rewritten_query") or state["question"])
    except (resources.WebSearchError, TimeoutError, OSError) as exc:
        return {"external_knowledge": [], "web_status": "failed", "web_error": str(exc)}
    passages, errors = resources.fetch_pages(ctx, results)
    return {
        "external_knowledge": whole_strips(passages, "external"),
        "web_status": "searched",
        "web_results": results,
        "web_error": "; ".join(errors) or None,
    }
