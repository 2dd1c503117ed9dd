"""What every web backend shares: the error types, a deadline, the one retry.
A module of its own, below the engines and the fetcher, to avoid an import cycle."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, TypeVar

import tenacity

if TYPE_CHECKING:
    from langchain_core.documents import Document

T = TypeVar("T")


class WebSearchError(RuntimeError):
    """A web search or page fetch that failed; the message says why."""


class TransientWebSearchError(WebSearchError):
    """A failure worth one retry: a timeout, a dropped connection, HTTP 408, 429 or 5xx."""


def call_with_timeout(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    """Run `fn` in a daemon thread and wait at most `timeout` seconds: Tavily's wrapper has no timeout, and a
    daemon thread (an executor's are joined at exit) lets a hung request be abandoned."""
    future: Future = Future()

    def run() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the caller
                future.set_exception(exc)

    threading.Thread(target=run, name="crag-web-search", daemon=True).start()
    try:
        return future.result(timeout=timeout)
    except FutureTimeout:
        raise TransientWebSearchError(f"{what} timed out after {timeout:g} s") from None


def retry_transient(fn: Callable[..., T], *args: Any, wait: float) -> T:
    """`fn(*args)`, called once more after `wait` seconds if it raised `TransientWebSearchError`: a
    second failure says the engine is down, and a user is waiting."""
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(2),
        wait=tenacity.wait_fixed(wait),
        retry=tenacity.retry_if_exception_type(TransientWebSearchError),
        reraise=True,
    )
    return retrying(fn, *args)


class RetriedSearch:
    """An engine's `search` around its one request (`_search_once`), retrying a transient failure once."""

    retry_wait: float = 1.0

    def search(self, query: str, k: int = 5) -> list[Document]:
        """The engine's `k` best results for `query`; raises `WebSearchError`."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if not query.strip():
            raise ValueError("the search query is empty")
        return retry_transient(self._search_once, query, k, wait=self.retry_wait)

    def _search_once(self, query: str, k: int) -> list[Document]:
        raise NotImplementedError
