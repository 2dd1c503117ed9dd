"""Threads: the graph with a SQLite checkpointer, for the CLI and the server.

A thread id keeps a conversation across runs and restarts: the checkpoint holds the state of its
last turn and the last few questions and answers (`history`), which follow-up questions use.
Without a thread id nothing is stored. The compiled graph in `crag.graph` has no checkpointer on
purpose: the Agent Server (`langgraph dev`) brings its own.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

DEFAULT_THREADS_DB = ".crag/threads.sqlite"
THREAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")


class InvalidThreadId(ValueError):
    """A thread id that cannot be used; the message says why."""


def threads_db(path: str | os.PathLike | None = None) -> Path:
    """The SQLite file: the argument, else $CRAG_THREADS_DB, else .crag/threads.sqlite; its folder is created."""
    db = Path(path or os.environ.get("CRAG_THREADS_DB") or DEFAULT_THREADS_DB).expanduser()
    db.parent.mkdir(parents=True, exist_ok=True)
    return db


def check_thread_id(thread_id: Any) -> str:
    if not isinstance(thread_id, str) or not THREAD_ID.fullmatch(thread_id):
        raise InvalidThreadId(
            f"invalid thread id {thread_id!r}: use 1-128 letters, digits or . _ : @ -, starting with a letter or digit"
        )
    return thread_id


def thread_config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": check_thread_id(thread_id)}}


@contextmanager
def threaded_graph(path: str | os.PathLike | None = None) -> Iterator[Any]:
    """The CRAG graph checkpointed to SQLite, for synchronous use (the CLI)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from crag.graph import build_graph

    with SqliteSaver.from_conn_string(str(threads_db(path))) as saver:
        yield build_graph().compile(checkpointer=saver, name="crag")


@asynccontextmanager
async def athreaded_graph(path: str | os.PathLike | None = None) -> AsyncIterator[Any]:
    """The CRAG graph checkpointed to SQLite, for asynchronous use (the server)."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from crag.graph import build_graph

    async with AsyncSqliteSaver.from_conn_string(str(threads_db(path))) as saver:
        yield build_graph().compile(checkpointer=saver, name="crag")
