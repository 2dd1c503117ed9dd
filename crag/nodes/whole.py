"""Plain RAG's knowledge for the baselines: the retrieved documents and the web's results, whole and unscored."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.knowledge.budget import whole
from crag.settings import Context
from crag.state import Strip


def _whole(documents: list, origin: str) -> list[Strip]:
    return [whole(d, i, 0.0, False, origin) for i, d in enumerate(documents)]


def use_documents(state: dict, runtime: Runtime[Context]) -> dict:
    """RAG: every retrieved document becomes knowledge as it is."""
    return {"internal_knowledge": _whole(state.get("documents", []), "internal")}


def web_search(state: dict, runtime: Runtime[Context]) -> dict:
    """RAG with web: the results for the question itself, whole, after the documents."""
    ctx = resources.context_of(runtime)
    try:
        results = resources.web_search(ctx, state["question"])
    except (resources.WebSearchError, TimeoutError, OSError) as exc:
        return {"external_knowledge": [], "web_error": str(exc)}
    passages, errors = resources.fetch_pages(ctx, results)
    return {"external_knowledge": _whole(passages, "external"), "web_error": "; ".join(errors) or None}
