"""A client of `crag serve` (`crag ask --server URL`); every failure is a one-line `ServerError`.
Plain httpx rather than `langserve.RemoteRunnable`, which needs the [serve] extra and turns server errors
into tracebacks. Each question carries a request id (`request_id`), and is sent again with the same one
when the connection drops or the server is briefly unavailable: a turn the server saved is not run twice."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
from langchain_core.documents import Document

DEFAULT_TIMEOUT = 120.0  # seconds; more than a remote chat model's own (`crag.models.providers.REQUEST_TIMEOUT`)
DOCUMENT_KEYS = ("documents", "web_results")  # the output's lists of LangChain Documents
RETRIES = 2  # a question sent again after a dropped connection or a 502/503/504, with the same request id
RETRY_STATUSES = (502, 503, 504)
MAX_RETRY_WAIT = 10.0  # seconds; longer Retry-After values are cut to this


class ServerError(RuntimeError):
    """A question the server did not answer; the message says why in one line."""


def endpoint(url: str, system: str = "crag") -> str:
    """A system's endpoint on a server URL: http://host:port becomes http://host:port/crag (or /SYSTEM)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ServerError(f"the server URL must be http(s)://host:port, not {url!r}")
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{path if path.endswith('/' + system) else f'{path}/{system}'}"


def _documents(output: dict[str, Any]) -> dict[str, Any]:
    """The output with its serialised Documents made Documents again."""
    for key in DOCUMENT_KEYS:
        output[key] = [
            Document(page_content=d.get("page_content", ""), metadata=d.get("metadata") or {}, id=d.get("id"))
            for d in output.get(key) or []
        ]
    return output


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail", "")
    except (ValueError, AttributeError):
        detail = response.text
    if isinstance(detail, list):  # a 422: FastAPI's shape, the reason in each "msg", what it is about in "loc"
        detail = "; ".join(_reason(d) for d in detail)
    detail = " ".join(str(detail).split())
    return detail[:500] or response.reason_phrase


def _reason(error: Any) -> str:
    """One validation error: "k: Input should be less than or equal to 50"."""
    if not isinstance(error, dict):
        return str(error)
    where = [str(part) for part in error.get("loc") or [] if part not in ("body", "configurable")]
    return f"{where[-1]}: {error.get('msg', '')}" if where else str(error.get("msg", error))


class CragClient:
    """Questions to one `crag serve`; `timeout` bounds connecting and each wait for the next bytes."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT, api_key: str | None = None, system: str = "crag"):
        self.url = endpoint(url, system)
        self.timeout = timeout
        key = api_key if api_key is not None else os.environ.get("CRAG_API_KEY")
        self.headers = {"X-API-Key": key} if key else {}

    def _body(self, question: str, configurable: dict[str, Any]) -> dict[str, Any]:
        return {"input": {"question": question}, "config": {"configurable": configurable}}

    def _check(self, response: httpx.Response) -> None:
        status = response.status_code
        if status < 400:
            return
        if status == 401:
            raise ServerError(f"the server wants an API key (set CRAG_API_KEY): {_detail(response)}")
        if status == 404:
            raise ServerError(f"no CRAG endpoint at {self.url} (404): is it a `crag serve`?")
        if status == 409:
            raise ServerError(f"the thread is busy (409): {_detail(response)}")
        kind = "refused the request" if status < 500 else "failed"
        raise ServerError(f"the server {kind} ({status}): {_detail(response)}")

    def _failure(self, exc: httpx.HTTPError) -> ServerError:
        if isinstance(exc, httpx.TimeoutException):
            return ServerError(f"no answer from {self.url} within {self.timeout:g} s (--timeout)")
        if isinstance(exc, httpx.ConnectError):
            return ServerError(f"cannot connect to {self.url}: {exc} (is `crag serve` running there?)")
        return ServerError(f"the connection to {self.url} failed: {exc}")

    def _again(self, attempt: int, response: httpx.Response | None = None, error: Exception | None = None) -> bool:
        """Whether to send the question again (after waiting): a connection that failed or dropped (not a
        timeout: the server may be answering still), a 502/503/504, or a 409 on a retry (the first attempt's
        turn still running, whose saved answer the next one gets)."""
        if attempt >= RETRIES:
            return False
        if error is not None:
            again = isinstance(error, httpx.TransportError) and not isinstance(error, httpx.TimeoutException)
        else:
            assert response is not None
            again = response.status_code in RETRY_STATUSES or (response.status_code == 409 and attempt > 0)
        if again:
            try:
                wait = float(response.headers.get("retry-after", 1)) if response is not None else 1.0
            except ValueError:
                wait = 1.0
            time.sleep(min(max(wait, 0.0), MAX_RETRY_WAIT))
        return again

    def invoke(self, question: str, configurable: dict[str, Any]) -> dict[str, Any]:
        """The run's output, shaped like a local run's."""
        body = self._body(question, with_request_id(configurable))
        for attempt in range(RETRIES + 1):
            try:
                response = httpx.post(f"{self.url}/invoke", json=body, headers=self.headers, timeout=self.timeout)
            except httpx.HTTPError as exc:
                if self._again(attempt, error=exc):
                    continue
                raise self._failure(exc) from None
            if not self._again(attempt, response):
                break
        self._check(response)
        try:
            return _documents(response.json()["output"])
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ServerError(f"{self.url}/invoke did not answer with a CRAG output") from None

    def stream(self, question: str, configurable: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        """The run as it happens: ("event", progress event), ("token", answer text) and, last, ("output", …)."""
        body = {**self._body(question, with_request_id(configurable)), "kwargs": {}}
        output = None
        try:
            with self._open_stream(body) as response:
                for kind, data in _sse(response.iter_lines()):
                    if kind == "error":
                        raise ServerError(f"the server failed during the run: {_stream_error(data)}")
                    if kind != "data":
                        continue
                    event = json.loads(data)
                    name, tags = event.get("event"), event.get("tags") or []
                    if name == "on_custom_event":
                        yield "event", event.get("data") or {}
                    elif name == "on_chat_model_stream" and "crag:answer" in tags:
                        yield "token", (event.get("data", {}).get("chunk") or {}).get("content") or ""
                    elif name == "on_chain_stream" and not event.get("parent_ids"):
                        output = event.get("data", {}).get("chunk")  # the run's whole state so far
        except httpx.HTTPError as exc:
            raise self._failure(exc) from None
        except (ValueError, AttributeError) as exc:
            raise ServerError(f"{self.url}/stream_events sent something that is not an event: {exc}") from None
        if not isinstance(output, dict):
            raise ServerError(f"{self.url}/stream_events ended without the run's output")
        yield "output", _documents(output)

    @contextmanager
    def _open_stream(self, body: dict[str, Any]) -> Iterator[httpx.Response]:
        """The streamed response once its status is a success, sent again as `invoke` is while nothing has
        been received (once events arrive, a failure is final)."""
        with httpx.Client(headers=self.headers, timeout=self.timeout) as http:
            for attempt in range(RETRIES + 1):
                try:
                    response = http.send(
                        http.build_request("POST", f"{self.url}/stream_events", json=body), stream=True
                    )
                except httpx.HTTPError as exc:
                    if self._again(attempt, error=exc):
                        continue
                    raise
                if response.status_code < 400:
                    try:
                        yield response
                    finally:
                        response.close()
                    return
                response.read()
                response.close()
                if not self._again(attempt, response):
                    self._check(response)
            raise AssertionError("unreachable: the last attempt yields or raises")


def with_request_id(configurable: dict[str, Any]) -> dict[str, Any]:
    """The settings with a new request id, unless they have one: every attempt of a question sends it."""
    return configurable if configurable.get("request_id") else {**configurable, "request_id": uuid.uuid4().hex}


def _stream_error(data: str) -> str:
    try:
        error = json.loads(data)
    except ValueError:
        return data[:500]
    return f"{error.get('message', error)} ({error.get('status_code', '?')})" if isinstance(error, dict) else data


def _sse(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    kind, data = "message", list[str]()
    for line in lines:
        if not line:
            if data:
                yield kind, "\n".join(data)
            kind, data = "message", []
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield kind, "\n".join(data)
