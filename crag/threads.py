"""Threads: the graph with a checkpointer, a SQLite file or a shared Postgres, for the CLI and the server.
One turn at a time per thread, across processes: a file lock beside the SQLite file, else a Postgres
advisory lock. The server checkpoints a turn when it ends, so a killed worker leaves the last finished turn."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from crag.graphs import build
from crag.runtime.errors import Unavailable
from crag.runtime.extras import require

DEFAULT_THREADS_DB = ".crag/threads.sqlite"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
CONNECT_TIMEOUT = 10  # seconds to reach Postgres (every connection, and the pool's first)
POOL_SIZE = 8  # connections a process keeps to Postgres for its checkpoints
SETUP_LOCK = 7_083_823_410_001  # advisory lock key: workers starting at once set the schema up one by one
THREAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
OWNER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")  # a server's user (crag.serve.keys.USER)
TURN_DURABILITY = "exit"  # LangGraph's durability for a server's turns: checkpoint when the turn ends, not per step


TURN_WAIT = 600.0  # seconds a turn waits for another turn of its thread (a slow local answer takes a minute)


class InvalidThreadId(ValueError):
    """A thread id that cannot be used; the message says why."""


class ThreadsError(RuntimeError):
    """A threads database that cannot be used (a folder, under a file, unwritable, corrupt) or a busy thread."""


class ThreadsUnavailable(ThreadsError, Unavailable):
    """The threads' Postgres cannot be reached or went away (refused, restarted, timed out): retry later."""


class ThreadBusy(ThreadsError):
    """A turn is running on the thread (in this process or another): the server answers 409 at once."""

    def __init__(self, key: str):
        thread_id = key.rpartition("/")[2]  # the owner's own id, not the checkpointer's `owner/id` key
        super().__init__(f"thread {thread_id!r} is answering another question: send this one once that answer has come")


def is_postgres(location: object) -> bool:
    return isinstance(location, str) and location.lower().startswith(POSTGRES_SCHEMES)


def redacted(url: str) -> str:
    """A Postgres URL without its password, for messages."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


def threads_location(location: str | os.PathLike | None = None) -> Path | str:
    """A `postgresql://` URL or the SQLite file: the argument, $CRAG_THREADS_URL, $CRAG_THREADS_DB, the default."""
    chosen = location or os.environ.get("CRAG_THREADS_URL") or os.environ.get("CRAG_THREADS_DB") or None
    if is_postgres(chosen):
        return str(chosen)
    return threads_db(chosen)


def threads_db(path: str | os.PathLike | None = None) -> Path:
    """The SQLite file: the argument, else $CRAG_THREADS_DB, else .crag/threads.sqlite; its folder is created."""
    db = Path(path or os.environ.get("CRAG_THREADS_DB") or DEFAULT_THREADS_DB).expanduser()
    if db.is_dir():
        raise ThreadsError(f"the threads database {db} is a folder: give a file path (--threads-db, $CRAG_THREADS_DB)")
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file where a folder should be, no permission
        raise ThreadsError(f"cannot create the folder of the threads database {db}: {exc.strerror or exc}") from exc
    return db


def _unusable(db: Path, exc: Exception) -> ThreadsError:
    return ThreadsError(
        f"cannot use the threads database {db}: {exc} (move it away to start afresh, or give another with --threads-db)"
    )


@contextmanager
def thread_turn(
    thread_id: str, path: str | os.PathLike | None = None, wait: float = TURN_WAIT, on_wait: Any = None
) -> Iterator[None]:
    """Hold one thread for one turn, across processes: run at once, two turns would each write a successor
    of the same checkpoint and one would be lost. `on_wait` is called once if the turn has to wait."""
    location = threads_location(path)
    if isinstance(location, str):
        with _postgres_turn(location, check_thread_id(thread_id), wait, on_wait):
            yield
        return
    db = location
    folder = db.with_name(db.name + ".locks")
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise ThreadsError(f"cannot create the thread locks folder {folder}: {exc.strerror or exc}") from exc
    lock = FileLock(folder / f"{check_thread_id(thread_id)}.lock")
    try:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            if on_wait is not None:
                on_wait()
            lock.acquire(timeout=wait)
    except Timeout:
        raise _busy(thread_id, wait, ThreadsError) from None
    try:
        yield
    finally:
        lock.release()


def check_thread_id(thread_id: Any) -> str:
    if not isinstance(thread_id, str) or not THREAD_ID.fullmatch(thread_id):
        shown = repr(thread_id)
        shown = shown if len(shown) <= 60 else f"{shown[:50]}... ({len(shown)} characters)"  # never echo a 100 KB id
        raise InvalidThreadId(
            f"invalid thread id {shown}: use 1-128 letters, digits or . _ : @ -, starting with a letter or digit"
        )
    return thread_id


def owned_thread(owner: str | None, thread_id: str) -> str:
    """The checkpointer's key of `owner`'s thread `thread_id`: `owner/thread_id`, or the id itself without an
    owner (the CLI, a server without keys or with $CRAG_API_KEY alone). Neither a user name nor a thread id
    holds a "/", so no id of one user names another's thread, nor an unowned one."""
    check_thread_id(thread_id)
    if owner is None:
        return thread_id
    if not isinstance(owner, str) or not OWNER.fullmatch(owner):
        raise ValueError(f"invalid thread owner {str(owner)[:70]!r}")
    return f"{owner}/{thread_id}"


def check_thread_key(key: Any) -> str:
    """A thread id or an `owned_thread` key; `InvalidThreadId` otherwise."""
    owner, _, thread_id = key.rpartition("/") if isinstance(key, str) else ("", "", key)
    check_thread_id(thread_id)
    if owner and not OWNER.fullmatch(owner):
        raise InvalidThreadId(f"invalid thread owner in {key[:70]!r}")
    return key


def thread_config(thread_id: str) -> dict[str, Any]:
    """The run config for `thread_id`; raises `InvalidThreadId` for an id that cannot be used."""
    return {"configurable": {"thread_id": check_thread_id(thread_id)}}


def _lock_key(thread_id: str) -> int:
    """64 bits of the thread id's hash, signed as Postgres's bigint is."""
    return int.from_bytes(hashlib.sha256(f"crag-thread:{thread_id}".encode()).digest()[:8], "big", signed=True)


def _postgres_error(url: str, exc: Exception) -> ThreadsError:
    """ThreadsUnavailable for a server that is down or too slow (a retry may succeed), else ThreadsError."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    psycopg, pools = require("psycopg", "postgres"), require("psycopg_pool", "postgres")
    kind = ThreadsUnavailable if isinstance(exc, psycopg.OperationalError | pools.PoolTimeout) else ThreadsError
    return kind(f"cannot use the threads database {redacted(url)}: {reason}")


def _busy(thread_id: str, wait: float, kind: type[ThreadsError] = ThreadsUnavailable) -> ThreadsError:
    # on Postgres unavailable for now, as a down database is: a server answers 503 and the client tries again later
    return kind(f"thread {thread_id!r} is still busy with another turn after {wait:g} s; try again later")


@contextmanager
def _postgres_turn(url: str, thread_id: str, wait: float, on_wait: Any) -> Iterator[None]:
    """Hold the thread's advisory lock on a connection of its own; polled, so that the wait has a limit."""
    psycopg = require("psycopg", "postgres")
    key = _lock_key(thread_id)
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as exc:
        raise _postgres_error(url, exc) from exc
    with conn:
        try:
            held = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]
            if not held:
                if on_wait is not None:
                    on_wait()
                deadline = time.monotonic() + wait
                while not held:
                    if time.monotonic() > deadline:
                        raise _busy(thread_id, wait)
                    time.sleep(0.1)
                    held = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]
        except psycopg.Error as exc:
            raise _postgres_error(url, exc) from exc
        try:
            yield
        finally:
            with contextlib.suppress(psycopg.Error):  # a lost connection has released it already
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


@asynccontextmanager
async def athread_turn(location: Path | str, thread_id: str) -> AsyncIterator[None]:
    """`thread_turn` for the server, which does not wait: `ThreadBusy` at once if another process holds the
    thread. Nothing for SQLite, whose one server process serialises turns itself. `thread_id` is the
    checkpointer's key (`owned_thread`)."""
    if not isinstance(location, str):
        yield
        return
    psycopg = require("psycopg", "postgres")
    key = _lock_key(check_thread_key(thread_id))
    try:
        conn = await psycopg.AsyncConnection.connect(location, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as exc:
        raise _postgres_error(location, exc) from exc
    async with conn:
        try:
            held = (await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))).fetchone())[0]
        except psycopg.Error as exc:
            raise _postgres_error(location, exc) from exc
        if not held:
            raise ThreadBusy(thread_id)
        try:
            yield
        except (psycopg.OperationalError, require("psycopg_pool", "postgres").PoolTimeout) as exc:
            raise _postgres_error(location, exc) from exc  # the checkpointer's, during the turn
        finally:
            with contextlib.suppress(psycopg.Error):
                await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


async def athread_busy(location: Path | str, thread_id: str) -> bool:
    """Whether another process holds the thread's turn lock now (always False for SQLite: one process).
    A transaction-level try-lock in one autocommit statement: taken and let go at once, it only asks."""
    if not isinstance(location, str):
        return False
    psycopg = require("psycopg", "postgres")
    key = _lock_key(check_thread_key(thread_id))
    try:
        async with await psycopg.AsyncConnection.connect(
            location, autocommit=True, connect_timeout=CONNECT_TIMEOUT
        ) as conn:
            return not (await (await conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,))).fetchone())[0]
    except psycopg.Error as exc:
        raise _postgres_error(location, exc) from exc


def _pool_options(pool_class: Any) -> dict[str, Any]:
    """The options of a pool of `pool_class`: psycopg_pool's ConnectionPool or AsyncConnectionPool."""
    dict_row = require("psycopg.rows", "postgres").dict_row
    return {
        "min_size": 1,
        "max_size": POOL_SIZE,
        # what langgraph-checkpoint-postgres's own from_conn_string sets on its connection
        "kwargs": {
            "autocommit": True,
            "prepare_threshold": 0,
            "row_factory": dict_row,
            "connect_timeout": CONNECT_TIMEOUT,
        },
        "open": False,
        "check": pool_class.check_connection,  # after a Postgres restart, not a dead connection
        "timeout": CONNECT_TIMEOUT,
    }


@contextmanager
def _postgres_graph(url: str, system: str) -> Iterator[Any]:
    psycopg = require("psycopg", "postgres")
    pools = require("psycopg_pool", "postgres")
    PostgresSaver = require("langgraph.checkpoint.postgres", "postgres").PostgresSaver
    ConnectionPool, PoolTimeout = pools.ConnectionPool, pools.PoolTimeout

    try:
        # one connection first: a refused connection, a wrong password or a missing database fails now with
        # Postgres's own words, where the pool would retry them until its timeout
        psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT).close()
        with ConnectionPool(url, **_pool_options(ConnectionPool)) as pool:
            pool.open(wait=True, timeout=CONNECT_TIMEOUT)
            saver = PostgresSaver(pool)
            with pool.connection() as conn:
                # polled, not waited for in pg_advisory_lock: the schema's CREATE INDEX CONCURRENTLY waits for
                # every open transaction, a waiting pg_advisory_lock included, and the two would wait forever
                while not conn.execute("SELECT pg_try_advisory_lock(%s) AS held", (SETUP_LOCK,)).fetchone()["held"]:
                    time.sleep(0.1)
                try:
                    saver.setup()  # now, so an unreachable server or a missing right fails before any work
                finally:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))
            yield build(system).compile(checkpointer=saver, name=system)
    except (psycopg.Error, PoolTimeout) as exc:
        raise _postgres_error(url, exc) from exc


@asynccontextmanager
async def _apostgres_saver(url: str) -> AsyncIterator[Any]:
    psycopg = require("psycopg", "postgres")
    pools = require("psycopg_pool", "postgres")
    AsyncPostgresSaver = require("langgraph.checkpoint.postgres.aio", "postgres").AsyncPostgresSaver
    AsyncConnectionPool, PoolTimeout = pools.AsyncConnectionPool, pools.PoolTimeout

    try:
        await (
            await psycopg.AsyncConnection.connect(url, connect_timeout=CONNECT_TIMEOUT)
        ).close()  # see _postgres_graph
        async with AsyncConnectionPool(url, **_pool_options(AsyncConnectionPool)) as pool:
            await pool.open(wait=True, timeout=CONNECT_TIMEOUT)
            saver = AsyncPostgresSaver(pool)
            async with pool.connection() as conn:
                query = "SELECT pg_try_advisory_lock(%s) AS held"
                while not (await (await conn.execute(query, (SETUP_LOCK,))).fetchone())["held"]:
                    await asyncio.sleep(0.1)  # polled: see _postgres_graph
                try:
                    await saver.setup()
                finally:
                    await conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))
            yield saver
    except (psycopg.Error, PoolTimeout) as exc:
        raise _postgres_error(url, exc) from exc


@contextmanager
def threaded_graph(path: str | os.PathLike | None = None, system: str = "crag") -> Iterator[Any]:
    """The system's graph (`crag.graphs.BUILDERS`) checkpointed to SQLite or Postgres (`threads_location`), for
    synchronous use.

    A context manager yielding the compiled graph; pass `thread_config(id)` as each run's config."""
    location = threads_location(path)
    if isinstance(location, str):
        with _postgres_graph(location, system) as graph:
            yield graph
        return
    db = location
    try:
        with SqliteSaver.from_conn_string(str(db)) as saver:
            saver.setup()  # now, so an unwritable or corrupt file fails before any work
            yield build(system).compile(checkpointer=saver, name=system)
    except sqlite3.Error as exc:  # also what a corrupt file raises in the middle of a turn
        raise _unusable(db, exc) from exc


def memory_graph(system: str = "crag") -> Any:
    """The system's graph checkpointed in this process's memory (`crag chat` without --thread)."""
    return build(system).compile(checkpointer=InMemorySaver(), name=system)


@asynccontextmanager
async def athreaded_graphs(path: str | os.PathLike | None, systems: list[str]) -> AsyncIterator[dict[str, Any]]:
    """Each system's graph checkpointed to SQLite or Postgres through one saver, for asynchronous use (the
    server): {system: graph}."""
    location = threads_location(path)
    if isinstance(location, str):
        async with _apostgres_saver(location) as saver:
            yield {name: build(name).compile(checkpointer=saver, name=name) for name in systems}
        return
    db = location
    try:
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
            await saver.setup()
            yield {name: build(name).compile(checkpointer=saver, name=name) for name in systems}
    except sqlite3.Error as exc:
        raise _unusable(db, exc) from exc


@asynccontextmanager
async def athreaded_graph(path: str | os.PathLike | None = None, system: str = "crag") -> AsyncIterator[Any]:
    """The system's graph checkpointed to SQLite or Postgres, for asynchronous use."""
    async with athreaded_graphs(path, [system]) as graphs:
        yield graphs[system]


__all__ = ["thread_config", "threaded_graph"]  # what callers outside the package use
