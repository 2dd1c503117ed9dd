"""`crag serve`: start the LangServe endpoint with uvicorn (one process, models loaded once)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from crag.backends.retrieval import StoreError
from crag.cli.common import (
    ChatModel,
    ChromaDir,
    ChromaUrl,
    Collection,
    Embeddings,
    Evaluator,
    SearxngUrl,
    WebBackend,
    WebIndex,
    WikipediaUrl,
    fail,
    quiet_transformers,
)
from crag.context import Context
from crag.core.extras import MissingExtra, require
from crag.serve.guard import DEFAULT_MAX_BATCH, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_RUNS
from crag.threads import threads_location as resolve_threads

SHUTDOWN_GRACE_SECONDS = 5  # on SIGTERM, runs in flight get this long to finish, then are dropped


def _set_compute_threads(threads: int | None) -> None:
    """Split the cores between concurrent requests instead of giving every model every core.

    Each model gets `threads` cores (default 1) and the generator runs cores/threads llama.cpp
    contexts side by side: llama.cpp decodes one sequence at a time, so one context on every core
    leaves cores idle between requests, and its threads spin against torch's when the evaluator
    runs at the same time.
    """
    import torch

    cores = os.cpu_count() or 2
    threads = threads or int(os.environ.get("CRAG_COMPUTE_THREADS", "0")) or 1
    torch.set_num_threads(threads)
    os.environ["CRAG_LLM_THREADS"] = str(threads)
    os.environ.setdefault("CRAG_LLM_INSTANCES", str(max(1, cores // threads)))


def serve_cmd(
    host: Annotated[str, typer.Option(help="Interface to listen on (0.0.0.0 for every interface).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8000,
    chroma_dir: ChromaDir = None,
    chroma_url: ChromaUrl = None,
    collection: Collection = None,
    embeddings: Embeddings = None,
    evaluator: Evaluator = None,
    chat_model: ChatModel = None,
    web_backend: WebBackend = None,
    web_index: WebIndex = None,
    wikipedia_url: WikipediaUrl = None,
    searxng_url: SearxngUrl = None,
    threads_db: Annotated[
        str | None,
        typer.Option(
            help="Where threads are kept: a SQLite file or a postgresql:// URL (default $CRAG_THREADS_URL, $CRAG_THREADS_DB or .crag/threads.sqlite)."
        ),
    ] = None,
    threads: Annotated[bool, typer.Option("--threads/--no-threads", help="Let requests name a thread_id.")] = True,
    max_body_bytes: Annotated[
        int, typer.Option(min=1024, help="Largest request body accepted.")
    ] = DEFAULT_MAX_BODY_BYTES,
    max_batch: Annotated[
        int, typer.Option(min=1, help="Inputs per /crag/batch request (more: 413).")
    ] = DEFAULT_MAX_BATCH,
    max_runs: Annotated[
        int,
        typer.Option(min=1, help="Runs in flight at once, a batch counting its inputs (more: 503 with Retry-After)."),
    ] = DEFAULT_MAX_RUNS,
    compute_threads: Annotated[
        int | None,
        typer.Option(
            min=1, help="CPU threads per model and per request (default 1: requests run side by side, one per core)."
        ),
    ] = None,
    warm_up: Annotated[
        bool, typer.Option("--warm-up/--no-warm-up", help="Load every model before accepting requests.")
    ] = True,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve CRAG over HTTP with LangServe: POST /crag/invoke, /crag/batch, /crag/stream, /crag/stream_events.

    Per request, clients may set only thresholds, k, search, top_k_strips, strip_threshold, strip_set_weight, refine_mode,
    web_backend, web_k, rewrite, requery, answer_without_knowledge, quote_threshold, generate_prompt and thread_id (in
    config.configurable). Set CRAG_API_KEY to require
    that key on every request.
    """
    for module in ("uvicorn", "fastapi", "langserve"):  # missing: one line naming the extra, not a traceback
        try:
            require(module, "serve")
        except MissingExtra as exc:
            fail(str(exc))
    import uvicorn

    from crag.serve.app import KnowledgeBaseError, ServerSettings, check_knowledge_base, create_app

    quiet_transformers()
    options = {
        name: value
        for name, value in {
            "chroma_dir": chroma_dir,
            "chroma_url": chroma_url,
            "collection": collection,
            "embeddings": embeddings,
            "evaluator": evaluator,
            "chat_model": chat_model,
            "web_backend": web_backend,
            "web_index": web_index,
            "wikipedia_url": wikipedia_url,
            "searxng_url": searxng_url,
        }.items()
        if value
    }
    try:
        context = Context(**options)
        check_knowledge_base(context)  # before start-up, for a clean message rather than a traceback
    except (ValueError, KnowledgeBaseError, StoreError) as exc:
        fail(str(exc))
    settings = ServerSettings(
        context=context,
        max_body_bytes=max_body_bytes,
        max_batch=max_batch,
        max_runs=max_runs,
        warm_up=warm_up,
        require_documents=False,
        threads_db=resolve_threads(threads_db) if threads else None,
    )
    if settings.api_key is None and host not in ("127.0.0.1", "localhost", "::1"):
        typer.secho(
            "warning: listening beyond this machine without CRAG_API_KEY: anyone who can reach it can use it",
            fg=typer.colors.YELLOW,
            err=True,
        )
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    _set_compute_threads(compute_threads)
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        log_level=log_level,
        workers=1,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
    )
