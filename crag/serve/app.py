"""`crag serve`: the CRAG graph as a LangServe endpoint (`/crag/invoke`, `/crag/batch`, `/crag/stream`, …).

What a public endpoint needs beyond `add_routes`:
- models load once, at start-up (a warm-up run), not on the first request;
- with `CRAG_API_KEY` set, every route but `/health` needs it (`X-API-Key` or `Authorization: Bearer`);
- request bodies are capped (413), bad input and unknown or unsafe settings get a 4xx that says why;
- threads are kept in SQLite, so a client's `thread_id` survives a restart.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

from crag.context import Context
from crag.loads import loads
from crag.nodes.contextualize import InvalidQuestion
from crag.serve.service import SAFE_SETTINGS, CragService, context_for
from crag.threads import InvalidThreadId, check_thread_id

OPEN_PATHS = {"/health"}
DEFAULT_MAX_BODY_BYTES = 256 * 1024


@dataclass(kw_only=True)
class ServerSettings:
    context: Context = field(default_factory=Context)
    api_key: str | None = field(default_factory=lambda: os.environ.get("CRAG_API_KEY") or None)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    threads_db: str | Path | None = None  # None: no threads
    warm_up: bool = True
    require_documents: bool = True


class KnowledgeBaseError(RuntimeError):
    """The server's knowledge base cannot be used; the message says how to fix it."""


def _error(status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None) -> dict:
    return {"status": status, "body": json.dumps({"detail": detail}).encode(), "headers": headers or []}


class Guard:
    """ASGI middleware: API key and body size, checked before LangServe reads anything."""

    def __init__(self, app: Callable, *, api_key: str | None, max_body_bytes: int):
        self.app, self.max_body_bytes = app, max_body_bytes
        self.api_key = api_key.encode() if api_key else None

    async def __call__(self, scope: dict, receive: Callable[[], Awaitable[dict]], send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        if self.api_key and scope["path"] not in OPEN_PATHS and not self._authorised(headers):
            return await self._respond(send, _error(401, "missing or invalid API key: send it as X-API-Key or Authorization: Bearer",
                                                    [(b"www-authenticate", b"Bearer")]))
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            return await self._respond(send, self._too_large())
        body, more = b"", True  # read the body here (it is small), so a chunked upload is capped too
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_body_bytes:
                return await self._respond(send, self._too_large())
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _authorised(self, headers: dict[bytes, bytes]) -> bool:
        supplied = headers.get(b"x-api-key")
        if supplied is None:
            scheme, _, token = headers.get(b"authorization", b"").partition(b" ")
            supplied = token.strip() if scheme.lower() == b"bearer" else None
        return bool(supplied) and hmac.compare_digest(supplied, self.api_key)

    def _too_large(self) -> dict:
        return _error(413, f"request body too large: the limit is {self.max_body_bytes:,} bytes")

    @staticmethod
    async def _respond(send: Callable, error: dict) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(error["body"])).encode())]
        await send({"type": "http.response.start", "status": error["status"], "headers": headers + error["headers"]})
        await send({"type": "http.response.body", "body": error["body"]})


def _configs(body: Any) -> list[dict]:
    """The `config` objects of an invoke/stream body (one) or a batch body (one or a list)."""
    config = body.get("config") if isinstance(body, dict) else None
    configs = config if isinstance(config, list) else [config]
    return [c for c in configs if isinstance(c, dict)]


def check_request_settings(service: CragService) -> Callable:
    """LangServe's per-request hook: refuse settings that are unknown or not allowed per request."""
    allowed = set(SAFE_SETTINGS) | ({"thread_id"} if service.threads else set())

    async def check(config: dict, request: Request) -> dict:
        try:
            body = await request.json()
        except ValueError:
            return config  # LangServe answers malformed JSON itself
        for sent in _configs(body):
            configurable = sent.get("configurable") or {}
            if not isinstance(configurable, dict):
                raise HTTPException(422, "config.configurable must be an object")
            refused = sorted(set(configurable) - allowed)
            if refused:
                raise HTTPException(422, f"setting(s) {', '.join(refused)} cannot be set per request; "
                                         f"allowed: {', '.join(sorted(allowed))}")
        configurable = config.get("configurable") or {}
        try:
            context_for(service.defaults, configurable)
            if configurable.get("thread_id") is not None:
                check_thread_id(configurable["thread_id"])
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from exc
        return config

    return check


def check_knowledge_base(context: Context) -> int:
    """The number of chunks in the server's collection; an error saying how to fill it if there are none."""
    from crag.backends.retrieval import StoreError, open_existing

    if context.retriever is not None:
        return -1
    try:
        store = open_existing(persist_dir=context.chroma_dir, collection=context.collection,
                              chroma_url=context.chroma_url)
    except StoreError as exc:
        raise KnowledgeBaseError(f"{exc}; or point the server at another one (--collection, --chroma-dir, --chroma-url)") from exc
    return store._collection.count()


def warm_up(context: Context) -> None:
    """Load every model the graph uses now, so the first request does not pay for it."""
    from crag import resources
    from crag.backends.llm import LocalChatModel

    scorer = resources.evaluator(context)
    scorer.invoke({"question": "warm-up", "documents": ["a warm-up passage"]})
    resources.retrieve(context, "warm-up")
    chat = resources.chat(context, "answer")
    if isinstance(chat, LocalChatModel):
        chat.invoke("Hi", max_tokens=1)
    if context.web_backend == "local":
        resources.web_search(context, "warm-up")


def create_app(settings: ServerSettings | None = None) -> FastAPI:
    from langserve import add_routes

    from crag.threads import athreaded_graph

    settings = settings or ServerSettings()
    service = CragService(defaults=settings.context, threads=settings.threads_db is not None)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with AsyncExitStack() as stack:
            if settings.require_documents:
                await asyncio.to_thread(check_knowledge_base, settings.context)
            if settings.warm_up:
                await asyncio.to_thread(warm_up, settings.context)
            if settings.threads_db is not None:
                service.threaded = await stack.enter_async_context(athreaded_graph(settings.threads_db))
            yield

    app = FastAPI(title="CRAG", version="0.1.0", lifespan=lifespan,
                  description="Corrective Retrieval-Augmented Generation (Yan et al., 2024) on LangGraph, served with LangServe.")
    app.add_middleware(Guard, api_key=settings.api_key, max_body_bytes=settings.max_body_bytes)

    @app.exception_handler(InvalidQuestion)
    @app.exception_handler(InvalidThreadId)
    async def _bad_request(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok", "loads": loads(), "threads": service.threads, "api_key": settings.api_key is not None}

    add_routes(app, service, path="/crag", config_keys=["configurable"],
               per_req_config_modifier=check_request_settings(service))
    app.state.service = service
    return app
