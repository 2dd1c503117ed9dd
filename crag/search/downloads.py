"""Downloads under the page fetcher's guards: search APIs' JSON answers and `crag ingest`'s URL lists.
Each returns, per URL, what it got or the `WebSearchError` that says why not."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from crag.search.fetch import DOCUMENT_TYPES, JSON_TYPES, MAX_BYTES, decode, download_many
from crag.search.web_base import WebSearchError


def _error(url: str, exc: Exception) -> WebSearchError:
    return (
        exc if isinstance(exc, WebSearchError) else WebSearchError(f"cannot fetch {url}: {type(exc).__name__}: {exc}")
    )


def fetch_json(
    urls: list[str], *, timeout: float, max_bytes: int = MAX_BYTES, allow_private: bool = False, max_workers: int = 4
) -> list[Any]:
    """Each URL's JSON answer, or the `WebSearchError` that stopped it."""
    downloads = download_many(
        urls,
        timeout=timeout,
        max_bytes=max_bytes,
        allow_private=allow_private,
        accept=JSON_TYPES,
        max_workers=max_workers,
    )
    answers: list[Any] = []
    for url, download in zip(urls, downloads):
        if isinstance(download, Exception):
            answers.append(_error(url, download))
            continue
        body, _, _, final = download
        try:
            answers.append(json.loads(body))  # JSON is UTF-8 (RFC 8259); bytes also decode UTF-16/32
        except ValueError as exc:
            answers.append(WebSearchError(f"{final} answered malformed JSON: {exc}"))
    return answers


def get_json(url: str, *, timeout: float, max_bytes: int = MAX_BYTES, allow_private: bool = False) -> Any:
    """`url`'s JSON answer (see `fetch_json`); raises `WebSearchError`."""
    [answer] = fetch_json([url], timeout=timeout, max_bytes=max_bytes, allow_private=allow_private)
    if isinstance(answer, WebSearchError):
        raise answer
    return answer


@dataclass(frozen=True)
class Download:
    """A page `download_all` got: its body, media type and charset."""

    body: bytes
    media_type: str
    charset: str | None

    @property
    def text(self) -> str:
        return decode(self.body, self.charset)


def download_all(
    urls: list[str],
    *,
    timeout: float,
    max_bytes: int,
    allow_private: bool,
    on_done: Callable[[], object] | None = None,
    read: Callable[[Download, str], Any] | None = None,
) -> list[Any]:
    """Each URL's page (HTML, text or PDF) as a `Download`, or the error that says why not. With `read`, what it
    makes of (the `Download`, the URL), in a thread within the download's own deadline, or the exception it raised
    (a `WebSearchError` when the deadline passed first)."""

    def extract(got: tuple, url: str) -> Any:
        return read(Download(got[0], got[1], got[2]), url) if read else Download(got[0], got[1], got[2])

    downloads = download_many(
        urls,
        timeout=timeout,
        max_bytes=max_bytes,
        allow_private=allow_private,
        accept=DOCUMENT_TYPES,
        max_workers=8,
        on_done=on_done,
        extract=extract if read else None,
    )
    if read:
        return downloads
    return [
        _error(url, got) if isinstance(got, Exception) else Download(got[0], got[1], got[2])
        for url, got in zip(urls, downloads)
    ]
