"""The `wikipedia` web backend: search and page text through the MediaWiki Action API, no HTML scraped.
`search` gives the best pages with their lead sections; `pages` is the fetch step for those hits. The API
URL is configuration, trusted as `chroma_url` is (it may be private)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urljoin

import httpx
from langchain_core.documents import Document

from crag.passages import passage, source_of, title_of
from crag.search.downloads import fetch_json, get_json
from crag.search.fetch import MAX_BYTES, text_passages
from crag.search.web_base import RetriedSearch, TransientWebSearchError, WebSearchError
from crag.urls import check_api_url

DEFAULT_API_URL = "https://en.wikipedia.org/w/api.php"
PAGE_WORKERS = 3  # Wikimedia asks API clients not to hammer
# plain text, headings on lines of their own (short lines: the paragraph split drops them)
_QUERY = {
    "action": "query",
    "format": "json",
    "formatversion": "2",
    "redirects": "1",
    "explaintext": "1",
    "exsectionformat": "plain",
}
_TRANSIENT_CODES = ("maxlag", "ratelimited")  # the API's own "try again later"


class WikipediaSearch(RetriedSearch):
    """Search a MediaWiki (Wikipedia by default) and read its pages' text; a hit is a page's lead section.

    `timeout` bounds each request and `max_bytes` each answer; a transient failure is retried once."""

    def __init__(
        self,
        api_url: str = DEFAULT_API_URL,
        *,
        timeout: float = 10.0,
        retry_wait: float = 1.0,
        max_bytes: int = MAX_BYTES,
    ):
        if timeout <= 0 or max_bytes <= 0:
            raise ValueError("timeout and max_bytes must be positive")
        self.api_url = check_api_url(api_url, "wikipedia_url")
        self.timeout, self.retry_wait, self.max_bytes = timeout, retry_wait, max_bytes

    def _url(self, **params: str) -> str:
        return str(httpx.URL(self.api_url).copy_merge_params({**_QUERY, **params}))

    def page_url(self, title: str) -> str:
        """/wiki/Title on the API's host, for a page whose URL the API did not give."""
        return urljoin(self.api_url, "/wiki/" + quote(title.replace(" ", "_")))

    def _search_once(self, query: str, k: int) -> list[Document]:
        url = self._url(
            generator="search",
            gsrsearch=query,
            gsrlimit=str(k),
            gsrnamespace="0",  # articles, not talk or user pages
            prop="extracts|info",
            exintro="1",
            exlimit="max",  # leads of up to 20 pages in this one request
            inprop="url",
        )
        try:
            pages = self._pages(get_json(url, timeout=self.timeout, max_bytes=self.max_bytes, allow_private=True))
        except WebSearchError as exc:
            raise type(exc)(f"Wikipedia search failed: {exc}") from exc
        ranked = sorted(pages, key=lambda p: p["index"] if isinstance(p.get("index"), int) else len(pages))[:k]
        return [passage(str(p.get("extract") or "").strip(), title=p["title"], source=self._source(p)) for p in ranked]

    def _source(self, page: dict) -> str:
        url = page.get("fullurl")
        return url if isinstance(url, str) and url else self.page_url(page["title"])

    def _pages(self, answer: Any) -> list[dict]:
        """The pages of a query answer (formatversion 2)."""
        if not isinstance(answer, dict):
            raise WebSearchError(f"the API answered {type(answer).__name__}, not an object")
        error = answer.get("error")
        if isinstance(error, dict):
            code, info = error.get("code", "?"), error.get("info", "")
            kind = TransientWebSearchError if code in _TRANSIENT_CODES else WebSearchError
            raise kind(f"the API answered {code}: {info}")
        if not {"query", "batchcomplete", "continue"} & answer.keys():
            raise WebSearchError(f"not a MediaWiki query answer (keys: {sorted(answer)})")
        pages = (answer.get("query") or {}).get("pages", [])
        if not isinstance(pages, list):
            raise WebSearchError("the pages are not a list (is the API MediaWiki 1.25 or later?)")
        return [p for p in pages if isinstance(p, dict) and isinstance(p.get("title"), str) and not p.get("missing")]

    def pages(self, results: list[Document]) -> tuple[list[Document], list[str]]:
        """The hits' whole pages as titled paragraphs, and "URL: why" errors; a failed page keeps its lead."""
        seen: set[str] = set()
        unique = []
        for r in results:
            if source_of(r) not in seen:
                seen.add(source_of(r))
                unique.append(r)
        urls = [self._url(prop="extracts", titles=title_of(r)) for r in unique]
        answers = fetch_json(
            urls, timeout=self.timeout, max_bytes=self.max_bytes, allow_private=True, max_workers=PAGE_WORKERS
        )
        passages: list[Document] = []
        errors: list[str] = []
        for result, answer in zip(unique, answers):
            title, url = title_of(result), source_of(result)
            try:
                if isinstance(answer, WebSearchError):
                    raise answer
                found = self._pages(answer)
                if not found or not str(found[0].get("extract") or "").strip():
                    raise WebSearchError(f"the API has no text for the page {title!r}")
                passages += text_passages(str(found[0]["extract"]), title, url)
            except WebSearchError as exc:
                errors.append(f"{url}: {exc}; using the lead section")
                passages += text_passages(result.page_content, title, url)
        return passages, errors
