"""Threads: the graph with a SQLite checkpointer, for the CLI and the server.

A thread id keeps a conversation across runs and restarts: the checkpoint holds the state of its
last turn and the last few questions and answers (`history`), which follow-up questions use.
Without a thread id nothing is stored. The compiled graph in `crag.graph` has no checkpointer on
purpose: the Agent Server (`langgraph dev`) brings its own.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from crag.graph import build_graph

DEFAULT_THREADS_DB = ".crag/threads.sqlite"
THREAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")


TURN_WAIT = 600.0  # seconds a turn waits for another turn of its thread (a slow local answer takes a minute)


class InvalidThreadId(ValueError):
    """A thread id that cannot be used; the message says why."""


class ThreadsError(RuntimeError):
    """A threads database that cannot be used (a folder, under a file, unwritable, corrupt) or a busy thread."""


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
    """Hold one thread for one turn, across processes: a second turn on it waits for the first.

    Both turns read the thread's last checkpoint; run at once, each writes its own successor of it
    and the thread keeps one of the two turns. A file lock beside the database (one per thread)
    serialises them; `on_wait` is called once if the turn has to wait.
    """
    db = threads_db(path)
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
        raise ThreadsError(
            f"thread {thread_id!r} is still busy with another turn after {wait:g} s; try again later"
        ) from None
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


def thread_config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": check_thread_id(thread_id)}}


@contextmanager
def threaded_graph(path: str | os.PathLike | None = None) -> Iterator[Any]:
    """The CRAG graph checkpointed to SQLite, for synchronous use (the CLI)."""
    db = threads_db(path)
    try:
        with SqliteSaver.from_conn_string(str(db)) as saver:
            saver.setup()  # now, so an unwritable or corrupt file fails before any work
            yield build_graph().compile(checkpointer=saver, name="crag")
    except sqlite3.Error as exc:  # also what a corrupt file raises in the middle of a turn
        raise _unusable(db, exc) from exc


def memory_graph() -> Any:
    """The CRAG graph checkpointed in this process's memory: threads that end with it (`crag chat` without
    --thread), the same turns and follow-ups as the SQLite ones but nothing written to disk."""
    return build_graph().compile(checkpointer=InMemorySaver(), name="crag")


@asynccontextmanager
async def athreaded_graph(path: str | os.PathLike | None = None) -> AsyncIterator[Any]:
    """The CRAG graph checkpointed to SQLite, for asynchronous use (the server)."""
    db = threads_db(path)
    try:
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
            await saver.setup()
            yield build_graph().compile(checkpointer=saver, name="crag")
    except sqlite3.Error as exc:
        raise _unusable(db, exc) from exc
