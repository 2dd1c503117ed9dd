"""The `searxng` web backend: a general web engine without an API key, through a SearxNG instance's JSON API.
The instance URL is configuration, trusted as `chroma_url` is, so it may be private."""

from __future__ import annotations

from typing import Any

import httpx
from langchain_core.documents import Document

from crag.passages import passage
from crag.search.downloads import get_json
from crag.search.fetch import MAX_BYTES
from crag.search.web_base import RetriedSearch, WebSearchError
from crag.urls import check_api_url


class SearxngSearch(RetriedSearch):
    """Search through the SearxNG instance at `url` (e.g. http://127.0.0.1:8888): each hit its snippet.

    `timeout` bounds the request and `max_bytes` the answer; a transient failure is retried once."""

    def __init__(self, url: str, *, timeout: float = 10.0, retry_wait: float = 1.0, max_bytes: int = MAX_BYTES):
        if timeout <= 0 or max_bytes <= 0:
            raise ValueError("timeout and max_bytes must be positive")
        base = check_api_url(url, "searxng_url").rstrip("/")
        self.endpoint = base if base.endswith("/search") else f"{base}/search"
        self.timeout, self.retry_wait, self.max_bytes = timeout, retry_wait, max_bytes

    def _search_once(self, query: str, k: int) -> list[Document]:
        url = str(httpx.URL(self.endpoint).copy_merge_params({"q": query, "format": "json", "categories": "general"}))
        try:
            return parse_results(get_json(url, timeout=self.timeout, max_bytes=self.max_bytes, allow_private=True))[:k]
        except WebSearchError as exc:
            hint = " (is json in the instance's search.formats, in settings.yml?)" if "HTTP 403" in str(exc) else ""
            raise type(exc)(f"SearxNG search failed: {exc}{hint}") from exc


def parse_results(answer: Any) -> list[Document]:
    """The hits of a SearxNG JSON answer that have a URL."""
    hits = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(hits, list):
        shape = f"keys: {sorted(answer)}" if isinstance(answer, dict) else type(answer).__name__
        raise WebSearchError(f"the answer has no result list ({shape})")
    results = []
    for hit in hits:
        url = hit.get("url") if isinstance(hit, dict) else None
        if isinstance(url, str) and url:
            results.append(passage(str(hit.get("content") or ""), title=str(hit.get("title") or url), source=url))
    return results
