"""`crag serve`: start the LangServe endpoint with uvicorn, in one process or several (`--workers`).
Each worker builds its own models (`worker_app`) from the checked settings, passed through the environment;
several workers share threads only in Postgres."""

from __future__ import annotations

import json
import os
import re
from typing import Annotated, Any

import typer

from crag.cli.common import fail, quiet_transformers
from crag.cli.settings import with_settings
from crag.runtime.extras import MissingExtra, require
from crag.search.store import StoreError
from crag.serve.admission import DEFAULT_MAX_QUEUED, DEFAULT_QUEUE_WAIT, default_max_runs
from crag.serve.guard import DEFAULT_MAX_BATCH, DEFAULT_MAX_BODY_BYTES, DEFAULT_RUN_TIMEOUT
from crag.serve.keys import KeysError, Users, identities, is_local
from crag.serve.upkeep import DEFAULT_THREAD_TTL
from crag.settings import Context
from crag.threads import ThreadsError, is_postgres, threaded_graph
from crag.threads import threads_location as resolve_threads

SHUTDOWN_GRACE_SECONDS = 5  # on SIGTERM, runs in flight get this long to finish, then are dropped
SETTINGS_ENV = "CRAG_SERVE_SETTINGS"  # the checked settings, as JSON, for worker_app in each worker
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(text: str) -> float:
    """Seconds in a duration: a number with s, m, h or d after it (`7d`, `12h`, `90m`, `30s`); a bare
    number is seconds; 0 is never."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", str(text).lower())
    if found is None:
        raise typer.BadParameter(f"{text!r} is not a duration: give a number with s, m, h or d after it, like 7d")
    return float(found[1]) * DURATION_UNITS[found[2] or "s"]


def _show_duration(seconds: float) -> str:
    for unit in ("d", "h", "m"):
        if seconds and seconds % DURATION_UNITS[unit] == 0:
            return f"{seconds / DURATION_UNITS[unit]:g}{unit}"
    return f"{seconds:g}s"


def _set_compute_threads(threads: int | None, workers: int) -> None:
    """Split the cores between concurrent requests: `threads` per model (default 1), and cores/(threads ×
    workers) llama.cpp contexts per worker, in the environment the workers inherit."""
    cores = os.cpu_count() or 2
    threads = threads or int(os.environ.get("CRAG_COMPUTE_THREADS", "0")) or 1
    os.environ["CRAG_COMPUTE_THREADS"] = str(threads)
    os.environ["CRAG_LLM_THREADS"] = str(threads)
    os.environ.setdefault("CRAG_LLM_INSTANCES", str(max(1, cores // (threads * workers))))


def worker_app():
    """The app of one worker (uvicorn's factory), from the settings `serve_cmd` put in the environment."""
    import torch

    from crag.serve.app import ServerSettings, create_app

    if SETTINGS_ENV not in os.environ:
        raise RuntimeError(
            f"worker_app is the app of `crag serve`'s workers: start the server with `crag serve` (no ${SETTINGS_ENV})"
        )
    spec = json.loads(os.environ[SETTINGS_ENV])
    torch.set_num_threads(int(os.environ.get("CRAG_COMPUTE_THREADS") or 1))
    return create_app(ServerSettings(context=Context(**spec["context"]), **spec["server"]))


@with_settings
def serve_cmd(
    host: Annotated[str, typer.Option(help="Interface to listen on (0.0.0.0 for every interface).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8000,
    threads_db: Annotated[
        str | None,
        typer.Option(
            help="Where threads are kept: a SQLite file or a postgresql:// URL (default $CRAG_THREADS_URL, $CRAG_THREADS_DB or .crag/threads.sqlite)."
        ),
    ] = None,
    threads: Annotated[bool, typer.Option("--threads/--no-threads", help="Let requests name a thread_id.")] = True,
    thread_ttl: Annotated[
        float,
        typer.Option(
            parser=duration,
            metavar="DURATION",
            help="Delete a thread idle this long (7d, 12h, 90m, 30s; 0: never), whoever made it.",
        ),
    ] = _show_duration(DEFAULT_THREAD_TTL),  # type: ignore[assignment]  # typer parses the shown default
    keys: Annotated[
        str | None,
        typer.Option(
            envvar="CRAG_API_KEYS",
            help="A file of one `user key` a line, readable by its owner only (chmod 600): each request is its "
            "key's user's, and each thread its maker's.",
        ),
    ] = None,
    filter_by_user: Annotated[
        str | None,
        typer.Option(
            envvar="CRAG_FILTER_BY_USER",
            metavar="FIELD",
            help="Keep each user to their own documents: every run searches only chunks whose metadata FIELD is "
            "the caller's user name (ANDed with the request's filter, which cannot lift it). Needs --keys or "
            "$CRAG_API_KEY (whose user is 'default').",
        ),
    ] = None,
    allow_anonymous: Annotated[
        bool,
        typer.Option("--allow-anonymous", help="Listen beyond this machine without any key (--keys, $CRAG_API_KEY)."),
    ] = False,
    max_body_bytes: Annotated[
        int, typer.Option(min=1024, help="Largest request body accepted.")
    ] = DEFAULT_MAX_BODY_BYTES,
    max_batch: Annotated[
        int, typer.Option(min=1, help="Inputs per /crag/batch request (more: 413).")
    ] = DEFAULT_MAX_BATCH,
    max_runs: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Runs in flight at once per worker, a batch counting its inputs (more wait in the queue). "
            "Default: twice the worker's llama.cpp contexts (4 for one worker on 2 cores, 2 each for two).",
        ),
    ] = None,
    run_timeout: Annotated[
        float,
        typer.Option(min=0.1, help="Seconds a run may take, streamed or not; a longer one is stopped (504)."),
    ] = DEFAULT_RUN_TIMEOUT,
    allowed_hosts: Annotated[
        str | None,
        typer.Option(
            envvar="CRAG_ALLOWED_HOSTS",
            help="Host names requests may use besides localhost, 127.0.0.1, [::1] and --host, comma-separated "
            "('crag.example.com,*.example.com', or '*' for any); others get 400. Default with --host 0.0.0.0: any.",
        ),
    ] = None,
    cors_origins: Annotated[
        str | None,
        typer.Option(
            envvar="CRAG_CORS_ORIGINS",
            help="Web pages that may call the server from a browser, comma-separated origins "
            "('https://app.example.com', or '*'). Default: none (no CORS headers).",
        ),
    ] = None,
    max_queued: Annotated[
        int,
        typer.Option(
            min=0,
            help="Requests that wait for a run's slot, users taking turns (more: 503 with Retry-After; 0: no queue).",
        ),
    ] = DEFAULT_MAX_QUEUED,
    queue_wait: Annotated[
        float,
        typer.Option(
            min=0,
            help="Seconds a queued request waits at most, then 503 with Retry-After (keep under the proxy's timeout).",
        ),
    ] = DEFAULT_QUEUE_WAIT,
    compute_threads: Annotated[
        int | None,
        typer.Option(
            min=1, help="CPU threads per model and per request (default 1: requests run side by side, one per core)."
        ),
    ] = None,
    warm_up: Annotated[
        bool, typer.Option("--warm-up/--no-warm-up", help="Load every model before accepting requests.")
    ] = True,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            help="Worker processes, each with its own models (more than one: threads in Postgres, --threads-db).",
        ),
    ] = 1,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    *,
    settings: dict[str, Any],
) -> None:
    """Serve CRAG over HTTP with LangServe: POST /crag/invoke, /crag/batch, /crag/stream, /crag/stream_events.

    The systems CRAG is measured against answer beside it, at /rag/invoke, /tutorial_crag/invoke and so on.

    Every setting given here is the server's default; a request may change those marked "per request" on the
    configuration page (and thread_id), in config.configurable. With --keys FILE (one `user key` a line) or
    $CRAG_API_KEY, every request needs a key, and a thread is only its maker's.
    """
    for module in ("uvicorn", "fastapi", "langserve"):  # missing: one line naming the extra, not a traceback
        try:
            require(module, "serve")
        except MissingExtra as exc:
            fail(str(exc))
    import uvicorn

    from crag.serve.app import (
        KnowledgeBaseError,
        check_filter_by_user,
        check_knowledge_base,
        hosts_for,
        parse_hosts,
        parse_origins,
    )

    quiet_transformers()
    try:
        hosts = hosts_for(host, parse_hosts(allowed_hosts or ""))
        origins = parse_origins(cors_origins or "")
    except ValueError as exc:
        fail(str(exc))
    try:
        users = identities(os.environ.get("CRAG_API_KEY") or None, keys)
    except KeysError as exc:
        fail(str(exc))
    try:
        check_filter_by_user(filter_by_user, Users(users))
    except ValueError as exc:
        fail(str(exc))
    if not users and not is_local(host):
        if not allow_anonymous:
            fail(
                f"refusing to listen on {host} without a key: anyone who can reach it could use it and read every "
                "thread. Give --keys FILE (one `user key` a line, chmod 600) or set CRAG_API_KEY; or pass "
                "--allow-anonymous to serve anyone"
            )
        typer.secho(
            "warning: listening beyond this machine without a key (--allow-anonymous): anyone who can reach it "
            "can use it and read every thread",
            fg=typer.colors.YELLOW,
            err=True,
        )
    try:
        threads_location = resolve_threads(threads_db) if threads else None
    except ThreadsError as exc:
        fail(str(exc))
    if workers > 1 and threads_location is not None and not is_postgres(threads_location):
        fail(
            f"{workers} workers cannot share threads kept in a SQLite file ({threads_location}): give "
            "--threads-db postgresql://… (or $CRAG_THREADS_URL), or --no-threads"
        )
    try:
        context = Context(**settings)
        check_knowledge_base(context)  # before start-up, for a clean message rather than a traceback
    except (ValueError, KnowledgeBaseError, StoreError) as exc:
        fail(str(exc))
    if is_postgres(threads_location):
        try:  # reachable, and its tables made, once, before any worker starts: a clean message, not N tracebacks
            with threaded_graph(threads_location):
                pass
        except ThreadsError as exc:
            fail(str(exc))
    if workers > 1 and context.retriever is None and not context.chroma_url:
        typer.secho(
            f"note: {workers} workers each open the embedded Chroma folder {context.chroma_dir}; that is fine "
            "for answering, but stop the server before ingesting into it, or use a Chroma server (--chroma-url)",
            err=True,
        )
    _set_compute_threads(compute_threads, workers)  # first: the default of max_runs follows the contexts
    os.environ[SETTINGS_ENV] = json.dumps(
        {
            "context": settings,
            "server": {
                "max_body_bytes": max_body_bytes,
                "max_batch": max_batch,
                "max_runs": max_runs or default_max_runs(),
                "run_timeout": run_timeout,
                "allowed_hosts": hosts,
                "cors_origins": origins,
                "max_queued": max_queued,
                "queue_wait": queue_wait,
                "warm_up": warm_up,
                "require_documents": False,  # checked above, once
                "threads_db": str(threads_location) if threads_location is not None else None,
                "thread_ttl": thread_ttl,
                "keys_file": os.path.abspath(os.path.expanduser(keys)) if keys else None,
                "filter_by_user": filter_by_user,
            },
        }
    )
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    uvicorn.run(
        "crag.cli.serve:worker_app",
        factory=True,
        host=host,
        port=port,
        log_level=log_level,
        workers=workers,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
    )
