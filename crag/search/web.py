"""Web search: an offline BM25 stand-in for the web, Tavily, and the dispatch to every engine by name.
Every backend failure is a `WebSearchError`, so the node can fall back with one `except`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote, urlsplit

from langchain_core.documents import Document
from langchain_core.messages import ToolMessage

from crag.english import LANGUAGE
from crag.fusion import best
from crag.jsonl import read_objects
from crag.passages import passage, source_of, title_of
from crag.runtime.cache import ResourceCache
from crag.runtime.extras import require
from crag.search.searxng import SearxngSearch
from crag.search.web_base import RetriedSearch, call_with_timeout
from crag.search.web_base import TransientWebSearchError as TransientWebSearchError
from crag.search.web_base import WebSearchError as WebSearchError
from crag.search.wikipedia import DEFAULT_API_URL as WIKIPEDIA_API_URL
from crag.search.wikipedia import WikipediaSearch

BACKENDS = ("local", "tavily", "wikipedia", "searxng")
WIKI_PREFIX = "Wikipedia, "  # the paper's "wiki" search mode, for real web engines


class LocalIndexError(WebSearchError, ValueError):
    """A local index file that is missing or malformed (also a ValueError: bad input)."""


@dataclass(frozen=True)
class _Index:
    records: list[Document]
    retriever: Any  # bm25s.BM25


# resolved path -> index, stamped with the file's (mtime_ns, size)
_INDEXES: ResourceCache[str, _Index] = ResourceCache("web_index", counted=False)


def _tokenize(texts: list[str]) -> list[list[str]]:
    # strings, not ids: a query tokenized on its own has its own id vocabulary
    import bm25s

    return bm25s.tokenize(texts, stopwords=LANGUAGE, return_ids=False, show_progress=False)


def _read_records(path: Path) -> list[Document]:
    records: list[Document] = []
    try:
        rows = list(read_objects(path))
    except UnicodeDecodeError as exc:
        raise LocalIndexError(f"local web index {path} is not UTF-8: {exc}") from exc
    except ValueError as exc:  # invalid JSON or not an object, with file and line
        raise LocalIndexError(f"local web index {exc}") from None
    except OSError as exc:
        raise LocalIndexError(f"cannot read local web index {path}: {exc.strerror or exc}") from exc
    for number, row in rows:
        where = f"local web index {path}, line {number}"
        text, title, url = row.get("text"), row.get("title", ""), row.get("url")
        if not isinstance(text, str):
            raise LocalIndexError(f'{where}: the record has no "text"')
        if not text.strip():  # an empty page (real dumps hold empty category pages): nothing to find
            continue
        if not isinstance(title, str):
            raise LocalIndexError(f'{where}: "title" must be a string')
        if url is not None and not isinstance(url, str):
            raise LocalIndexError(f'{where}: "url" must be a string')
        # without a url, the line number keeps records of one title apart (pages are deduplicated by url)
        records.append(passage(text, title=title, source=url or f"local://{quote(title)}#{number}"))
    if not records:
        raise LocalIndexError(f"local web index {path} has no records with text")
    return records


def _build_index(path: Path) -> _Index:
    import bm25s

    records = _read_records(path)
    retriever = bm25s.BM25()
    retriever.index(_tokenize([f"{title_of(r)} {r.page_content}" for r in records]), show_progress=False)
    return _Index(records, retriever)


class LocalSearch:
    """BM25 over a JSONL file of `{"title", "text", "url"?}` records: the web, offline; records come whole.

    The index is built at the first search and cached until the file changes."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()

    def _index(self) -> _Index:
        try:
            stat = self.path.stat()
        except OSError as exc:
            raise LocalIndexError(f"local web index {self.path} does not exist or cannot be read") from exc
        version = (stat.st_mtime_ns, stat.st_size)  # a changed file is indexed again
        # one build at a time: concurrent first searches share it
        return _INDEXES.get(str(self.path.resolve()), lambda: _build_index(self.path), stamp=version)

    def search(self, query: str, k: int = 5) -> list[Document]:
        """The top `k` records sharing a term with `query`, best first."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        index = self._index()
        tokens = _tokenize([query])[0]
        if not tokens:  # only stopwords or punctuation
            return []
        # copies: Documents are mutable, and the cached index must not change with what a caller does
        return [index.records[i].model_copy(deep=True) for i in best(index.retriever.get_scores(tokens), k)]


TAVILY_NO_RESULTS = "No search results found"  # langchain-tavily's message when a search finds nothing
_TRANSIENT_STATUS = re.compile(r"\bError (408|429|5\d\d)\b")  # the wrapper's "Error {status}: …"


def _is_transient(error: Any) -> bool:
    try:
        import requests  # noqa: PLC0415 - optional: only langchain-tavily brings it

        if isinstance(error, (requests.ConnectionError, requests.Timeout)):
            return True
    except ImportError:  # pragma: no cover - langchain-tavily depends on requests
        pass
    return isinstance(error, (TimeoutError, ConnectionError)) or bool(_TRANSIENT_STATUS.search(str(error)))


def _raise_error(error: Any) -> NoReturn:
    message = str(error).strip() or type(error).__name__
    kind = TransientWebSearchError if _is_transient(error) else WebSearchError
    raise kind(f"Tavily search failed: {message}")


def parse_tavily_output(output: Any) -> list[Document]:
    """A TavilySearch tool output as results; `WebSearchError` for the errors the tool returns rather than
    raises: `{"error": …}`, a string (but "No search results found"), a ToolMessage with status "error"."""
    if isinstance(output, ToolMessage):
        if output.status == "error":
            _raise_error(output.content)
        output = output.artifact if output.artifact is not None else output.content
        if isinstance(output, str):
            with contextlib.suppress(json.JSONDecodeError):
                output = json.loads(output)
    if isinstance(output, str):
        if output.startswith(TAVILY_NO_RESULTS):
            return []
        _raise_error(output)
    if not isinstance(output, dict):
        raise WebSearchError(f"Tavily search returned {type(output).__name__}, expected a dict")
    if "error" in output:
        _raise_error(output["error"])
    hits = output.get("results")
    if not isinstance(hits, list):
        raise WebSearchError(f"Tavily search returned no result list (keys: {sorted(output)})")
    results = []
    for hit in hits:
        if isinstance(hit, dict) and isinstance(hit.get("url"), str) and hit["url"]:
            url = hit["url"]
            results.append(passage(str(hit.get("content") or ""), title=str(hit.get("title") or url), source=url))
    return results


class TavilyWebSearch(RetriedSearch):
    """Tavily web search through `langchain_tavily.TavilySearch`; `timeout` bounds each attempt, and a
    transient failure is retried once after `retry_wait` seconds."""

    def __init__(
        self, api_key: str | None = None, *, timeout: float = 10.0, search_depth: str = "basic", retry_wait: float = 1.0
    ):
        key = (api_key if api_key is not None else os.environ.get("TAVILY_API_KEY", "")).strip()
        if not key:
            raise WebSearchError("Tavily needs an API key: set TAVILY_API_KEY (or use the local backend)")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self._search_tool = require("langchain_tavily", "tavily").TavilySearch  # missing: said here, not per search
        self._api_key = key
        self.timeout = timeout
        self.search_depth = search_depth
        self.retry_wait = retry_wait
        self._tools: dict[int, Any] = {}
        self._tools_lock = threading.Lock()

    def _tool(self, k: int) -> Any:
        # max_results may only be set when the tool is built, so there is one tool per k
        with self._tools_lock:
            if k not in self._tools:
                self._tools[k] = self._search_tool(
                    tavily_api_key=self._api_key, max_results=k, search_depth=self.search_depth, topic="general"
                )
            return self._tools[k]

    def _search_once(self, query: str, k: int) -> list[Document]:
        try:
            tool = self._tool(k)
            output = call_with_timeout(lambda: tool.invoke({"query": query}), self.timeout, "Tavily search")
        except WebSearchError:
            raise
        except Exception as exc:  # validation errors, unhandled tool exceptions
            _raise_error(exc)
        return parse_tavily_output(output)[:k]


def is_wikipedia(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host == "wikipedia.org" or host.endswith(".wikipedia.org")


def prefer_wikipedia(results: list[Document]) -> list[Document]:
    """Wikipedia results first, otherwise in engine order (the paper keeps Wikipedia pages)."""
    return sorted(results, key=lambda r: not is_wikipedia(source_of(r)))


def search_web(
    query: str,
    *,
    backend: str = "local",
    k: int = 5,
    local_index: str | Path | None = None,
    timeout: float = 10.0,
    wikipedia_url: str = WIKIPEDIA_API_URL,
    searxng_url: str | None = None,
) -> list[Document]:
    """Search with `backend` ("local", "tavily", "wikipedia" or "searxng"), Wikipedia's hits first.
    General web engines get the paper's "Wikipedia, " query prefix."""
    if backend == "local":
        if local_index is None:
            raise ValueError("the local web backend needs local_index (a JSONL file of title/text records)")
        results = LocalSearch(local_index).search(query, k)
    elif backend == "tavily":
        results = TavilyWebSearch(timeout=timeout).search(WIKI_PREFIX + query, k)
    elif backend == "wikipedia":
        results = WikipediaSearch(wikipedia_url, timeout=timeout).search(query, k)
    elif backend == "searxng":
        if not searxng_url:
            raise ValueError("the searxng web backend needs searxng_url (a SearxNG instance's URL)")
        results = SearxngSearch(searxng_url, timeout=timeout).search(WIKI_PREFIX + query, k)
    else:
        raise ValueError(f"unknown web backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    return prefer_wikipedia(results)
