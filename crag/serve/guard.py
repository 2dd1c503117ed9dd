"""The ASGI middleware in front of LangServe, refusing before any work what LangServe would turn into a 500 or
bear without bound: the API key (401), a body that is not declared JSON (415), body size, speed and shape (413,
408, 400/422), batches past the limit (413), and runs past the limit, which wait their turn in a bounded queue
(crag.serve.admission; a 503 with Retry-After when it is full or the wait runs out); it cancels a run whose
client disconnects and one that outlives the run deadline (504). It ties each request to the user whose key it
sends (`scope[USER_SCOPE]`, read by the routes that keep threads)."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from crag.serve.admission import (
    DEFAULT_MAX_QUEUED,
    DEFAULT_MAX_RUNS,
    DEFAULT_QUEUE_WAIT,
    Busy,
    Runs,
)
from crag.serve.keys import DEFAULT_USER, Users, supplied_key

OPEN_PATHS = {"/health"}
RUN_ROUTES = ("/invoke", "/batch", "/stream", "/stream_log", "/stream_events")
DEFAULT_MAX_BODY_BYTES = 256 * 1024
DEFAULT_MAX_BATCH = 8
DEFAULT_BODY_TIMEOUT = 10.0
DEFAULT_RUN_TIMEOUT = (
    240.0  # seconds a whole run may take, streamed or not: with --queue-wait, within nginx's 400 s (deploy/nginx)
)
BODY_METHODS = ("POST", "PUT", "PATCH")
MAX_JSON_DEPTH = 32  # a request is {"input": {...}, "config": {"configurable": {...}}}: a few levels
USER_SCOPE = "crag.user"  # the ASGI scope's key of the request's user, when the server has keys

logger = logging.getLogger("crag.serve")


class BadBody(ValueError):
    """A request body the run routes refuse; `status` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses to inf
        raise BadBody(422, f"number {text[:40]} is out of range: numbers must be finite")
    return value


def _no_constant(name: str) -> Any:
    raise BadBody(422, f"{name} is not JSON: numbers must be finite")


def inspect_json(body: bytes) -> Any:
    """The parsed body of a run request, or `BadBody` saying what is wrong with it."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadBody(400, f"the request body is not UTF-8 (byte {exc.start} is {body[exc.start]:#04x})") from None
    try:
        parsed = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise BadBody(422, f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep") from None
    except BadBody:
        raise
    except ValueError as exc:  # malformed JSON, or an integer of thousands of digits
        raise BadBody(422, f"malformed JSON: {exc}") from None
    stack = [(parsed, 1)]  # iterative: the point is not to recurse on what a stranger sent
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise BadBody(422, f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str):
                    stack.append((key, depth))
                stack.append((item, depth + 1))
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise BadBody(
                    422, f"a string holds a lone surrogate ({value[exc.start]!r}), which is not text"
                ) from None
    return parsed


def unprocessable(message: str, loc: tuple = ("body",)) -> list[dict]:
    """A 422's `detail` in FastAPI's documented HTTPValidationError shape, the reason in `msg`."""
    return [{"type": "value_error", "loc": list(loc), "msg": message}]


async def _refuse(send: Callable, status: int, detail: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    """Answer `status` with `detail` as JSON (a 422's in the shape of `unprocessable`)."""
    body = json.dumps({"detail": unprocessable(detail) if status == 422 else detail}).encode()
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """The ASGI middleware of the module docstring; `runs.in_flight` counts runs."""

    def __init__(
        self,
        app: Callable,
        *,
        api_key: str | None = None,
        users: Users | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_batch: int = DEFAULT_MAX_BATCH,
        max_runs: int = DEFAULT_MAX_RUNS,
        max_queued: int = DEFAULT_MAX_QUEUED,
        queue_wait: float = DEFAULT_QUEUE_WAIT,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
        run_timeout: float = DEFAULT_RUN_TIMEOUT,
        runs: Runs | None = None,
    ):
        self.app, self.max_body_bytes, self.body_timeout = app, max_body_bytes, body_timeout
        self.run_timeout = run_timeout
        self.runs = runs if runs is not None else Runs(max_runs, max_queued, queue_wait)  # `runs`: its limits rule
        self.max_runs = self.runs.max_runs
        self.max_batch = min(max_batch, self.max_runs)  # a bigger batch could never be admitted
        self.users = users if users is not None else Users({DEFAULT_USER: api_key} if api_key else {})

    async def __call__(self, scope: dict, receive: Callable[[], Awaitable[dict]], send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        if self.users and scope["path"] not in OPEN_PATHS:
            user = self.users.user_of(supplied_key(headers))
            if user is None:
                unauthorised = "missing or invalid API key: send it as X-API-Key or Authorization: Bearer"
                return await _refuse(send, 401, unauthorised, [(b"www-authenticate", b"Bearer")])
            scope[USER_SCOPE] = user
        if scope.get("method") in BODY_METHODS and not is_json(headers.get(b"content-type")):
            # a browser sends a cross-site form or text/plain body without asking first (no CORS preflight):
            # refusing every body not declared JSON keeps another site's page from driving a keyless server
            sent = headers.get(b"content-type", b"none").decode("latin-1")[:100]
            return await _refuse(
                send, 415, f"the request body must be JSON (Content-Type: application/json), not {sent}"
            )
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            return await _refuse(send, 413, self._too_large())
        try:
            async with asyncio.timeout(self.body_timeout):
                body = await self._read_body(receive)
        except TimeoutError:
            return await _refuse(send, 408, f"the request body did not arrive within {self.body_timeout:g} s")
        except BadBody as exc:  # over the cap, sent without a length
            return await _refuse(send, exc.status, str(exc))
        if body is None:
            return  # the client went away
        runs = 0
        if scope.get("method") == "POST" and scope["path"].endswith(RUN_ROUTES):
            try:
                parsed = inspect_json(body)
            except BadBody as exc:
                return await _refuse(send, exc.status, str(exc))
            inputs = parsed.get("inputs") if isinstance(parsed, dict) and scope["path"].endswith("/batch") else None
            runs = len(inputs) if isinstance(inputs, list) else 1
            if runs > self.max_batch:
                return await _refuse(send, 413, f"a batch holds at most {self.max_batch} inputs, got {runs}")
            try:
                if not await self._take_turn(scope.get(USER_SCOPE), runs, receive):
                    return  # the client left while its request was queued
            except Busy as exc:
                return await _refuse(send, 503, str(exc), [(b"retry-after", str(exc.retry_after).encode())])
        started = time.monotonic()
        try:
            await self._run_until_disconnect(scope, body, receive, send, self.run_timeout if runs else None)
        finally:
            if runs:
                self.runs.release(runs, time.monotonic() - started)

    async def _take_turn(self, user: str | None, runs: int, receive: Callable[[], Awaitable[dict]]) -> bool:
        """Hold `runs` slots once it is this request's turn (`Busy` if the queue is full or the wait runs out);
        False, holding none, if the client disconnects while it waits."""
        waiting = asyncio.ensure_future(self.runs.acquire(user, runs))
        left = asyncio.ensure_future(_disconnect(receive))
        try:
            await asyncio.wait((waiting, left), return_when=asyncio.FIRST_COMPLETED)
        finally:
            left.cancel()
            if not waiting.done():
                waiting.cancel()  # it leaves the queue, or gives back the slots it was handed meanwhile
        if not waiting.done():
            return False  # the client left first (its wait, cancelled, leaves the queue when it next runs)
        waiting.result()  # Busy
        return True

    async def _read_body(self, receive: Callable[[], Awaitable[dict]]) -> bytes | None:
        """The whole body, so a chunked upload is capped too (`BadBody` past the cap); None if the client left."""
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return None
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_body_bytes:
                raise BadBody(413, self._too_large())
        return body

    async def _run_until_disconnect(
        self, scope: dict, body: bytes, receive: Callable, send: Callable, deadline: float | None = None
    ) -> None:
        """Run the app on the buffered body; cancel it if the client disconnects before the response ends
        (only the watcher reads the client's messages now), or when it outlives `deadline` seconds: then
        answer 504, or end a started stream with an error event. Cancelling the run frees what it holds (its
        admission, its thread's lock); a model call already under way in a worker thread finishes there."""
        disconnected = asyncio.Event()
        started = done = timed_out = False
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def tracked_send(message: dict) -> None:
            nonlocal started, done
            if timed_out:
                return  # past the deadline: what the run still says is not sent
            started = started or message["type"] == "http.response.start"
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                done = True
            await send(message)

        task = asyncio.ensure_future(self.app(scope, replay, tracked_send))

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            disconnected.set()
            if not done:
                task.cancel()  # the client has gone: stop its run

        watcher = asyncio.ensure_future(watch())
        try:
            finished, _ = await asyncio.wait({task}, timeout=deadline)
            if not finished and not done:
                timed_out = True
                task.cancel()
            await task
        except asyncio.CancelledError:
            if not (timed_out or disconnected.is_set()):
                raise  # we are being cancelled ourselves (shutdown)
        except Exception:
            if timed_out:
                pass  # whatever the cancelled run raised on its way out: the deadline is the answer
            elif not started or done:
                raise  # before the response: the server answers 500
            else:
                # mid-stream, after LangServe's "error" event: end the body rather than cut the connection
                logger.exception("error in a streamed response")
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            watcher.cancel()
            if not task.done():
                task.cancel()
        if timed_out and not disconnected.is_set():
            await self._past_deadline(send, started)

    async def _past_deadline(self, send: Callable, started: bool) -> None:
        """The answer to a run stopped at the deadline: 504, or, once a stream has begun, LangServe's error
        event (`event: error`, data {status_code, message}) and the end of the body."""
        detail = f"the run took longer than this server allows ({self.run_timeout:g} s, --run-timeout) and was stopped"
        logger.warning("a run was stopped after %g s", self.run_timeout)
        if not started:
            return await _refuse(send, 504, detail)
        event = json.dumps({"status_code": 504, "message": detail})
        await send(
            {"type": "http.response.body", "body": f"event: error\r\ndata: {event}\r\n\r\n".encode(), "more_body": True}
        )
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _too_large(self) -> str:
        return f"request body too large: the limit is {self.max_body_bytes:,} bytes"


def is_json(content_type: bytes | None) -> bool:
    """Whether a Content-Type header names JSON: application/json or a structured `+json` type, any parameters."""
    if content_type is None:
        return False
    media = content_type.split(b";", 1)[0].strip().lower()
    kind, _, subtype = media.partition(b"/")
    return bool(kind) and (media == b"application/json" or (subtype.endswith(b"+json") and len(subtype) > 5))


async def _disconnect(receive: Callable[[], Awaitable[dict]]) -> None:
    """Return when the client disconnects (its body is read: nothing else comes)."""
    while (await receive())["type"] != "http.disconnect":
        pass
