"""Plain RAG's knowledge for the baselines: the retrieved documents and the web's results, whole and unscored."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.passages import source_of, title_of
from crag.settings import Context
from crag.state import Strip


def _whole(documents: list, origin: str) -> list[Strip]:
    return [
        Strip(
            text=d.page_content,
            score=0.0,
            selection_score=0.0,
            lifted=False,
            title=title_of(d),
            source=source_of(d),
            origin=origin,
            doc=i,  # type: ignore[typeddict-item]
            start=0,
            end=len(d.page_content),
        )
        for i, d in enumerate(documents)
    ]


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
