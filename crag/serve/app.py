"""`crag serve`'s app: the CRAG graph as a LangServe endpoint (`/crag/invoke`, `/crag/batch`, `/crag/stream`, …),
and each system it is measured against beside it (`/rag/invoke`, `/tutorial_crag/invoke`, …: `crag.graphs.BUILDERS`).
Beyond `add_routes`: a warm-up at start-up, users and their keys, `Guard`'s limits and run deadline, refusal of
unknown or unsafe settings, threads owned by their users (DELETE /threads/{id}), 503 with `Retry-After` when a
Chroma or Postgres server is down, and what keeps a browser page of another site out: only the allowed Host
names (Starlette's TrustedHostMiddleware, against DNS rebinding), no CORS unless origins are given
(CORSMiddleware), and JSON bodies only (`Guard`'s 415)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.middleware.trustedhost import TrustedHostMiddleware
from fastapi.responses import JSONResponse, Response
from langserve import add_routes
from langserve.lzstring import LZString
from pydantic import ValidationError

from crag import __version__, resources
from crag.graphs import BUILDERS, compiled
from crag.questions.checks import InvalidQuestion
from crag.resources import warm_up
from crag.runtime.cache import loads
from crag.runtime.errors import PromptTooLong, Unavailable
from crag.search.filters import check_filter
from crag.search.store import StoreError, chunk_count
from crag.serve.admission import DEFAULT_MAX_QUEUED, DEFAULT_MAX_RUNS, DEFAULT_QUEUE_WAIT, RETRY_AFTER_SECONDS, Runs
from crag.serve.guard import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_RUN_TIMEOUT,
    USER_SCOPE,
    Guard,
    unprocessable,
)
from crag.serve.keys import DEFAULT_USER, LOCAL_HOSTS, Users, identities
from crag.serve.service import OWNER_KEY, REQUEST_ID, SAFE_SETTINGS, USER_KEY, CragInput, CragService, context_for
from crag.serve.upkeep import DEFAULT_THREAD_TTL, sweep_forever
from crag.settings import Context
from crag.threads import InvalidThreadId, ThreadBusy, athreaded_graphs, check_thread_id, threads_location

STREAM_ROUTES = ("/stream", "/stream_log", "/stream_events")  # a 200 is sent before the run starts


@dataclass(kw_only=True)
class ServerSettings:
    context: Context = field(default_factory=Context)
    api_key: str | None = field(default_factory=lambda: os.environ.get("CRAG_API_KEY") or None)  # user "default"
    keys_file: str | Path | None = field(default_factory=lambda: os.environ.get("CRAG_API_KEYS") or None)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_batch: int = DEFAULT_MAX_BATCH  # inputs per /batch request
    max_runs: int = DEFAULT_MAX_RUNS  # runs in flight in this process (a batch counts its inputs)
    max_queued: int = DEFAULT_MAX_QUEUED  # requests waiting for a run's slot, users taking turns
    queue_wait: float = DEFAULT_QUEUE_WAIT  # seconds a queued request waits at most, then 503 with Retry-After
    body_timeout: float = DEFAULT_BODY_TIMEOUT  # seconds to receive a request body
    run_timeout: float = DEFAULT_RUN_TIMEOUT  # seconds a whole run may take (then 504)
    # the Host names requests may use ("*.example.com" patterns, "*" for any): `hosts_for(bind)`
    allowed_hosts: list[str] = field(default_factory=lambda: hosts_for("127.0.0.1"))
    cors_origins: list[str] = field(default_factory=list)  # pages that may call it from a browser; none: no CORS
    threads_db: str | Path | None = None  # a SQLite file or a postgresql:// URL; None: no threads
    thread_ttl: float = DEFAULT_THREAD_TTL  # seconds a thread may be idle before it is deleted; 0: never
    warm_up: bool = True
    require_documents: bool = True
    # a metadata field every run's filter requires to be the caller's user name (needs users): one user never
    # retrieves another's documents
    filter_by_user: str | None = field(default_factory=lambda: os.environ.get("CRAG_FILTER_BY_USER") or None)


WILDCARD_HOSTS = ("0.0.0.0", "::", "")  # listening on every interface


def hosts_for(bind: str, extra: list[str] | None = None) -> list[str]:
    """The Host names a server listening on `bind` answers: this machine's local names, `bind` itself and
    `extra`; any when it listens on every interface and no `extra` are given (which names reach it there is
    not known; `crag serve` needs a key there, which a page of another site does not have)."""
    if bind.strip("[]") in WILDCARD_HOSTS and not extra:
        return ["*"]
    names = [*LOCAL_HOSTS, *([] if bind.strip("[]") in WILDCARD_HOSTS else [bind]), *(extra or [])]
    # Starlette compares the Host header's name as sent: an IPv6 address in brackets, any case
    bracketed = [f"[{n.strip('[]')}]" if ":" in n.strip("[]") else n.lower() for n in names]
    return list(dict.fromkeys(bracketed))


def parse_hosts(text: str) -> list[str]:
    """Comma-separated Host names or patterns ("crag.example.com, *.example.com"); ValueError for a malformed one."""
    patterns = [part.strip() for part in text.split(",") if part.strip()]
    for pattern in patterns:
        if "*" in pattern[1:] or (pattern.startswith("*") and pattern != "*" and not pattern.startswith("*.")):
            raise ValueError(f"allowed host {pattern!r}: a pattern is a name, '*.example.com' or '*'")
        if "/" in pattern or (":" in pattern and not pattern.startswith("[") and pattern.count(":") == 1):
            raise ValueError(f"allowed host {pattern!r}: give the name alone, without a scheme, port or path")
    return patterns


def parse_origins(text: str) -> list[str]:
    """Comma-separated origins ("https://app.example.com, http://localhost:3000", or "*"); ValueError for one
    that is not scheme://host[:port]."""
    origins = [part.strip().rstrip("/") for part in text.split(",") if part.strip()]
    for origin in origins:
        scheme, sep, rest = origin.partition("://")
        if origin != "*" and (scheme not in ("http", "https") or not sep or not rest or "/" in rest):
            raise ValueError(f"CORS origin {origin!r}: give scheme://host[:port], e.g. https://app.example.com")
    return origins


class KnowledgeBaseError(RuntimeError):
    """The server's knowledge base cannot be used; the message says how to fix it."""


def _config_from_hash(config_hash: str) -> dict:
    """The config a /c/{hash}/ URL carries (LZString-compressed JSON, as LangServe's playground writes)."""
    try:
        parsed = json.loads(LZString.decompressFromEncodedURIComponent(config_hash) or "{}")
    except Exception:  # whatever a malformed hash does to the decompressor
        raise HTTPException(400, "invalid config hash") from None
    if not isinstance(parsed, dict):
        raise HTTPException(400, "invalid config hash")
    return parsed


def _reasons(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in exc.errors())


def _configs(body: Any) -> list[dict]:
    config = body.get("config") if isinstance(body, dict) else None
    configs = config if isinstance(config, list) else [config]
    return [c for c in configs if isinstance(c, dict)]


def owner(request: Request) -> str | None:
    """Whose threads a request reaches: its user's, or the unowned ones without keys or as $CRAG_API_KEY's user
    (as before there were users)."""
    user = request.scope.get(USER_SCOPE)
    return None if user in (None, DEFAULT_USER) else user


def check_request_settings(service: CragService) -> Callable:
    """LangServe's per-request hook: refuse settings that are unknown or not allowed per request; give the
    run its user, whose threads it reaches."""
    allowed = set(SAFE_SETTINGS) | {REQUEST_ID} | ({"thread_id"} if service.threads else set())

    async def check(config: dict, request: Request) -> dict:
        sent = []
        if request.path_params.get("config_hash"):  # /crag/c/{hash}/invoke: settings in the URL
            sent.append(_config_from_hash(request.path_params["config_hash"]))
        try:
            body = await request.json()
        except ValueError:
            body = None  # LangServe answers malformed JSON itself
        for one in [*sent, *_configs(body)]:
            configurable = one.get("configurable") or {}
            if not isinstance(configurable, dict):
                raise HTTPException(422, "config.configurable must be an object")
            refused = sorted(set(configurable) - allowed)
            if refused:
                raise HTTPException(
                    422,
                    f"setting(s) {', '.join(refused)} cannot be set per request; allowed: {', '.join(sorted(allowed))}",
                )
        inputs = body.get("inputs") if isinstance(body, dict) and request.url.path.endswith("/batch") else None
        for index, value in enumerate(inputs if isinstance(inputs, list) else []):
            try:
                CragInput.model_validate(value)
            except ValidationError as exc:  # the whole batch is refused, naming the input, before any run
                raise HTTPException(422, f"inputs[{index}]: {_reasons(exc)}") from None
        configurable = config.get("configurable") or {}
        user = request.scope.get(USER_SCOPE)
        try:
            context_for(
                service.defaults, configurable, await asyncio.to_thread(service.calibrated), service.scope(user)
            )
            named = configurable.get("thread_id") is not None or configurable.get(REQUEST_ID) is not None
            key = service.thread_of(configurable, owner(request))[1] if named else None  # None: a new one
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from exc
        if key is not None and request.url.path.endswith(STREAM_ROUTES) and await service.busy(key):
            # the run would find it busy only once the stream's 200 is sent; invoke and batch answer 409 then
            raise ThreadBusy(key)
        if service.threads and owner(request) is not None:
            configurable = {**configurable, OWNER_KEY: owner(request)}
        if service.filter_by_user:  # the run's filter is scoped to this user (`CragService._plan`)
            configurable = {**configurable, USER_KEY: user}
        return {**config, "configurable": configurable}

    return check


async def _stop(task: asyncio.Task) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def check_knowledge_base(context: Context) -> int:
    """The number of chunks in the server's collection; an error saying how to fill it if there are none."""
    if context.retriever is not None:
        return -1
    try:
        store = resources.knowledge_store(context)
    except StoreError as exc:
        raise KnowledgeBaseError(
            f"{exc}; or point the server at another one (--collection, --chroma-dir, --chroma-url)"
        ) from exc
    return chunk_count(store)


def check_filter_by_user(field: str | None, users: Users) -> None:
    """ValueError for a `filter_by_user` field that no filter could name, or on a server without users."""
    if field is None:
        return
    check_filter({field: "user"})
    if not users:
        raise ValueError(
            f"--filter-by-user {field} needs users: give --keys FILE (one `user key` a line) or set CRAG_API_KEY"
        )


def create_app(settings: ServerSettings | None = None) -> FastAPI:
    settings = settings or ServerSettings()
    users = Users(identities(settings.api_key, settings.keys_file))  # KeysError now, not at the first request
    check_filter_by_user(settings.filter_by_user, users)
    services = {
        name: CragService(
            defaults=settings.context,
            threads=settings.threads_db is not None,
            graph=compiled(name),
            filter_by_user=settings.filter_by_user,
        )
        for name in BUILDERS
    }
    service = services["crag"]
    for one in services.values():  # one turn at a time on a thread, whichever system it asks
        one._thread_locks = service._thread_locks

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with AsyncExitStack() as stack:
            if settings.require_documents:
                await asyncio.to_thread(check_knowledge_base, settings.context)
            if settings.warm_up:
                await asyncio.to_thread(warm_up, settings.context)
            if settings.threads_db is not None:
                location = threads_location(settings.threads_db)
                graphs = await stack.enter_async_context(athreaded_graphs(location, list(services)))
                for name, one in services.items():
                    one.threads_location, one.threaded = location, graphs[name]
                if settings.thread_ttl > 0:  # cancelled at shutdown, before the saver closes
                    sweep = asyncio.create_task(
                        sweep_forever(service.threaded.checkpointer, settings.thread_ttl, service.expire)
                    )
                    stack.push_async_callback(_stop, sweep)
            yield

    app = FastAPI(
        title="CRAG",
        version=__version__,
        lifespan=lifespan,
        description="Corrective Retrieval-Augmented Generation (Yan et al., 2024) on LangGraph, served with LangServe.",
    )
    runs = Runs(settings.max_runs, settings.max_queued, settings.queue_wait)
    app.add_middleware(
        Guard,
        runs=runs,
        users=users,
        max_body_bytes=settings.max_body_bytes,
        max_batch=settings.max_batch,
        body_timeout=settings.body_timeout,
        run_timeout=settings.run_timeout,
    )
    if settings.cors_origins:  # outside Guard: a preflight carries no key, and every answer gets the headers
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["content-type", "x-api-key", "authorization"],
            expose_headers=["retry-after"],
        )
    if "*" not in settings.allowed_hosts:  # outermost: a request under another name gets no further
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=settings.allowed_hosts, www_redirect=False)

    @app.exception_handler(InvalidQuestion)
    @app.exception_handler(InvalidThreadId)
    @app.exception_handler(PromptTooLong)  # the request's settings, at their largest, exceed the model's window
    async def _bad_request(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": unprocessable(str(exc))}, status_code=422)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
        # every 422 with a string detail gets the documented shape
        detail = unprocessable(exc.detail) if exc.status_code == 422 and isinstance(exc.detail, str) else exc.detail
        return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(ThreadBusy)
    async def _busy(request: Request, exc: ThreadBusy) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=409)

    @app.exception_handler(Unavailable)
    async def _unavailable(request: Request, exc: Unavailable) -> JSONResponse:
        # a dependency down or restarting: the next request may succeed, so not a 500
        return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})

    @app.exception_handler(ValidationError)
    async def _invalid_input(request: Request, exc: ValidationError) -> JSONResponse:
        return JSONResponse({"detail": unprocessable(_reasons(exc))}, status_code=422)  # an input checked inside a run

    @app.get("/health")
    async def health() -> dict:
        return {
            "status": "ok",
            "loads": loads(),
            "threads": service.threads,
            "api_key": bool(users),
            "runs_in_flight": runs.in_flight,
            "runs_queued": runs.queued,
        }

    @app.delete(
        "/threads/{thread_id}",
        status_code=204,
        response_class=Response,
        responses={
            404: {"description": "You have no thread of that id (or the server keeps no threads)."},
            409: {"description": "A turn is running on the thread: delete it once that turn is answered."},
        },
    )
    async def delete_thread(thread_id: str, request: Request) -> Response:
        """Delete one of your threads, every system's turns on it: 204, 404 if you have no such thread, 409
        while a turn runs on it."""
        if service.threaded is None:
            raise HTTPException(404, "this server keeps no threads (it was started with --no-threads)")
        if not await service.delete_thread(check_thread_id(thread_id), owner(request)):
            raise HTTPException(404, f"you have no thread {thread_id!r}")
        return Response(status_code=204)

    for name, one in services.items():
        add_routes(
            app, one, path=f"/{name}", config_keys=["configurable"], per_req_config_modifier=check_request_settings(one)
        )
    app.state.service, app.state.services = service, services
    return app
