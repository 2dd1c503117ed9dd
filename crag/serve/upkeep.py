"""The upkeep of a server's threads: each keeps only its latest checkpoint (all the next turn reads), and a
thread idle longer than the server's `--thread-ttl` is deleted by a sweep every worker runs on its own.

Through the checkpointers' own API where it has one: `alist`, `aget_tuple`, `adelete_thread`, and Postgres's
`aprune(strategy="keep_latest")`. langgraph-checkpoint-sqlite has no prune, so SQLite's is two statements
on its own tables, under the saver's lock."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.checkpoint.base.id import UUID
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

DEFAULT_THREAD_TTL = 7 * 24 * 3600.0  # seconds a thread may stay idle before a sweep deletes it; 0: never
SWEEP_PAGE = 100  # checkpoints listed at a time while looking for idle threads
UUID_EPOCH = 0x01B21DD213814000  # 100 ns steps from 1582-10-15 (UUIDs' epoch) to 1970-01-01

logger = logging.getLogger("crag.serve")


def sweep_every(ttl: float) -> float:
    """Seconds between two sweeps: a quarter of the TTL, between 1 s and an hour."""
    return min(max(ttl / 4, 1.0), 3600.0)


def checkpoint_id_at(seconds: float) -> str:
    """The smallest checkpoint id LangGraph could make at Unix time `seconds`. Its ids are UUIDv6
    (`langgraph.checkpoint.base.id.uuid6`), time first, so they sort as their times do, and `alist(before=...)`
    with this one lists exactly the checkpoints made before that time."""
    stamp = int(seconds * 10_000_000) + UUID_EPOCH
    return str(UUID(int=((stamp >> 12) & 0xFFFFFFFFFFFF) << 80 | (stamp & 0x0FFF) << 64, version=6))


async def prune(saver: Any, key: str) -> None:
    """Keep only the latest checkpoint of thread `key` (per namespace), with what it refers to."""
    if not isinstance(saver, AsyncSqliteSaver):
        await saver.aprune([key], strategy="keep_latest")
        return
    # langgraph-checkpoint-sqlite 3.1 has no prune: what Postgres's keep_latest does, for SQLite's two tables
    async with saver.lock:
        await saver.conn.execute(
            """DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id < (
                   SELECT max(k.checkpoint_id) FROM checkpoints AS k
                   WHERE k.thread_id = checkpoints.thread_id AND k.checkpoint_ns = checkpoints.checkpoint_ns)""",
            (key,),
        )
        await saver.conn.execute(
            """DELETE FROM writes WHERE thread_id = ? AND NOT EXISTS (
                   SELECT 1 FROM checkpoints AS k WHERE k.thread_id = writes.thread_id
                   AND k.checkpoint_ns = writes.checkpoint_ns AND k.checkpoint_id = writes.checkpoint_id)""",
            (key,),
        )
        await saver.conn.execute(
            "UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE thread_id = ?", (key,)
        )  # its parent is gone, as Postgres's prune leaves it
        await saver.conn.commit()


async def idle_threads(saver: Any, cutoff: str) -> list[str]:
    """The threads with a checkpoint older than checkpoint id `cutoff`, newest first: with every thread pruned
    to its latest, these are the idle ones (and the threads of older checkpoints not pruned yet)."""
    found: dict[str, None] = {}
    before = cutoff
    while True:
        page = [
            one.config["configurable"]
            async for one in saver.alist(None, before={"configurable": {"checkpoint_id": before}}, limit=SWEEP_PAGE)
        ]
        found.update(dict.fromkeys(c["thread_id"] for c in page))
        if len(page) < SWEEP_PAGE:
            return list(found)
        before = page[-1]["checkpoint_id"]


async def expire(
    saver: Any, ttl: float, delete: Callable[[str, str], Awaitable[bool]], now: float | None = None
) -> int:
    """Delete every thread whose latest checkpoint is older than `ttl` seconds; the number deleted.
    `delete(key, cutoff)` deletes one if it is still idle, under its turn lock (see CragService.expire)."""
    cutoff = checkpoint_id_at((time.time() if now is None else now) - ttl)
    deleted = 0
    for key in await idle_threads(saver, cutoff):
        deleted += bool(await delete(key, cutoff))
    return deleted


async def sweep_forever(saver: Any, ttl: float, delete: Callable[[str, str], Awaitable[bool]]) -> None:
    """`expire` now and every `sweep_every(ttl)` seconds, until cancelled (the server's shutdown). Several
    workers sweeping one Postgres each do the same work: a thread deleted twice is deleted once."""
    while True:
        try:
            if deleted := await expire(saver, ttl, delete):
                logger.info("deleted %d thread(s) idle for more than %g s", deleted, ttl)
        except Exception as exc:  # the database down for a while: the next sweep tries again
            logger.warning("the sweep of idle threads failed (%s); trying again in %g s", exc, sweep_every(ttl))
        await asyncio.sleep(sweep_every(ttl))
