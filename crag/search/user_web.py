"""A user's own web backend: an object with `.search(query, k)`, a LangChain retriever or a search tool.
Whatever it returns becomes passages, and whatever it raises a `WebSearchError`, so it never crashes a run."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool

from crag.passages import passage
from crag.search.web import TAVILY_NO_RESULTS
from crag.search.web_base import WebSearchError, call_with_timeout

_TEXT_KEYS = ("text", "content", "snippet", "page_content", "body")
_URL_KEYS = ("url", "link", "href", "source")


def _first(get: Callable[[str], Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def to_result(hit: Any, position: int) -> Document | None:
    """One hit as a passage, or None when it holds no text and no URL: a Document, or a mapping or object
    with title/text/url or the snippet/link/href names common search tools use."""
    if isinstance(hit, Document):
        text, meta = hit.page_content, hit.metadata or {}
        title, url = _first(meta.get, ("title",)), _first(meta.get, _URL_KEYS)
    else:
        get = hit.get if isinstance(hit, Mapping) else (lambda key: getattr(hit, key, None))
        text, title, url = _first(get, _TEXT_KEYS), _first(get, ("title", "name")), _first(get, _URL_KEYS)
    if not (text.strip() or url):
        return None
    # without a url the position keeps hits of one title apart (pages are deduplicated by url)
    return passage(text, title=title or url, source=url or f"custom://{quote(title)}#{position}")


def is_user_backend(backend: Any) -> bool:
    return callable(getattr(backend, "search", None)) or isinstance(backend, (BaseRetriever, BaseTool))


def _tool_input(tool: BaseTool, name: str, query: str) -> dict[str, str]:
    arguments = list(tool.args)
    if "query" in arguments:
        return {"query": query}
    if len(arguments) == 1:
        return {arguments[0]: query}
    raise WebSearchError(f"{name} takes {', '.join(arguments) or 'no arguments'}; a search tool takes a query")


def _tool_results(output: Any, name: str) -> Any:
    """A search tool's output as its list of hits: from JSON text, `{"results": [...]}`, `{"error": ...}`."""
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except json.JSONDecodeError:
            if output.startswith(TAVILY_NO_RESULTS):  # TavilySearch's way of finding nothing
                return []
            raise WebSearchError(f"{name} returned text, not results: {' '.join(output.split())[:200]}") from None
    if isinstance(output, Mapping):
        if output.get("error"):
            raise WebSearchError(f"{name} failed: {output['error']}")
        if "results" not in output:
            raise WebSearchError(f"{name} returned no result list (keys: {sorted(map(str, output))})")
        return output["results"]
    return output


def _call(backend: Any, name: str, query: str, k: int) -> Any:
    if callable(getattr(backend, "search", None)):
        return backend.search(query, k)
    if isinstance(backend, BaseRetriever):
        return backend.invoke(query)
    return _tool_results(backend.invoke(_tool_input(backend, name, query)), name)


def search_custom(backend: Any, query: str, k: int, timeout: float) -> list[Document]:
    """Search with a user's backend: bounded by `timeout`, and any failure a `WebSearchError`."""
    name = f"web backend {backend.name if isinstance(backend, BaseTool) else type(backend).__name__}"
    try:
        raw = call_with_timeout(lambda: _call(backend, name, query, k), timeout, what=name)
    except WebSearchError:
        raise
    except Exception as exc:  # anything a user's code raises
        raise WebSearchError(f"{name} failed: {type(exc).__name__}: {exc}") from exc
    if raw is None:
        return []
    if isinstance(raw, (str, bytes)) or not hasattr(raw, "__iter__"):
        raise WebSearchError(f"{name} returned {type(raw).__name__}, expected a list of results")
    try:
        hits = list(raw)
    except Exception as exc:
        raise WebSearchError(f"{name} returned results that cannot be read: {type(exc).__name__}: {exc}") from exc
    results = [r for i, hit in enumerate(hits) if (r := to_result(hit, i)) is not None]
    if hits and not results:
        raise WebSearchError(
            f"{name} returned {len(hits)} results with no text or URL (the first is a {type(hits[0]).__name__})"
        )
    return results[:k]
