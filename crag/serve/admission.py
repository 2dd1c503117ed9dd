"""Admission of runs into one server process: at most `max_runs` in flight (a batch counts its inputs); past
that a request waits in a bounded queue, users taking turns (round robin, each user's requests in arrival
order), for at most `queue_wait` seconds. A request that finds the queue full, or whose wait runs out, is
refused with `Busy`, whose `retry_after` is the time the queue ahead should take to drain, jittered so that
the refused do not all come back at once.

asyncio.Semaphore was the model (a future per waiter, a slot handed over on release, a waiter cancelled after
it was handed a slot gives it back), but it has no bound, no wait limit and no turns between users, so this is
written out here."""

from __future__ import annotations

import asyncio
import math
import os
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

# runs in flight per worker, past which requests queue: twice its llama.cpp contexts (one run reading while another
# retrieves or grades). More only contend for the contexts and lose the queue's order among them: on 2 cores 8 runs
# per worker measured p99 61-84 s, twice the contexts 45-48 s at the same throughput
# (docs/reports/2026-12-07-fair-admission.md)
RUNS_PER_CONTEXT = 2
DEFAULT_MAX_RUNS = 4  # a worker alone on 2 cores (two contexts); `crag serve` derives it: default_max_runs()
DEFAULT_MAX_QUEUED = 64
DEFAULT_QUEUE_WAIT = 120.0  # a full queue (64) drains in about 80 s at 4 runs of 5 s: room for a slower machine
RETRY_AFTER_SECONDS = 2  # before any run has ended, and the least a refusal asks
MAX_RETRY_AFTER_SECONDS = 300
JITTER = 0.5  # Retry-After is drawn from [1 - JITTER, 1 + JITTER] × the queue's estimated drain time
SMOOTHING = 0.2  # weight of the latest run in the running mean of a run's seconds


def default_max_runs() -> int:
    """Runs in flight for this worker: RUNS_PER_CONTEXT × its llama.cpp contexts ($CRAG_LLM_INSTANCES, which
    `crag serve` sets from the cores and workers)."""
    return RUNS_PER_CONTEXT * max(1, int(os.environ.get("CRAG_LLM_INSTANCES", "1") or 1))


class Busy(Exception):
    """Refused: the server is full and its queue too, or the wait ran out. `retry_after` in whole seconds."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(f"{message}; retry in {retry_after} s")
        self.retry_after = retry_after


@dataclass(eq=False)
class _Waiter:
    user: Hashable
    runs: int
    granted: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())


def _holds_slots(waiter: _Waiter) -> bool:
    granted = waiter.granted
    return granted.done() and not granted.cancelled() and granted.exception() is None


class Runs:
    """The runs in flight in this process and the requests queued for a slot; `admitted(user, runs)` holds
    `runs` slots for its block, after waiting its turn."""

    def __init__(
        self,
        max_runs: int = DEFAULT_MAX_RUNS,
        max_queued: int = DEFAULT_MAX_QUEUED,
        queue_wait: float = DEFAULT_QUEUE_WAIT,
        *,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[float, float], float] = random.uniform,
    ):
        if max_runs < 1 or max_queued < 0 or queue_wait < 0:
            raise ValueError(
                f"max_runs must be ≥ 1, max_queued and queue_wait ≥ 0: got {max_runs}, {max_queued}, {queue_wait}"
            )
        self.max_runs, self.max_queued, self.queue_wait = max_runs, max_queued, queue_wait
        self.in_flight = 0
        self.run_seconds: float | None = None  # running mean of a run's time in its slot
        self._clock, self._jitter = clock, jitter
        self._queues: dict[Hashable, deque[_Waiter]] = {}  # per user; its key order is the turn order

    @property
    def queued(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    @asynccontextmanager
    async def admitted(self, user: Hashable, runs: int = 1) -> AsyncIterator[None]:
        """Hold `runs` slots for the block, once they are free and it is this request's turn; `Busy` if the
        queue is full or the wait runs out. Cancelled while waiting, the request leaves the queue."""
        await self.acquire(user, runs)
        started = self._clock()
        try:
            yield
        finally:
            self.release(runs, self._clock() - started)

    async def acquire(self, user: Hashable, runs: int = 1) -> None:
        """Take `runs` slots, waiting in the queue if need be (`Busy` past its bounds); `release` gives them back."""
        if runs > self.max_runs:
            raise ValueError(f"{runs} runs can never be admitted: the limit is {self.max_runs}")
        if not self._queues and self.in_flight + runs <= self.max_runs:
            self.in_flight += runs
            return
        if self.queued >= self.max_queued and not self._make_room(user):
            raise Busy(f"busy: {self.in_flight} runs in flight and {self.queued} requests queued", self._retry_after())
        waiter = _Waiter(user, runs)
        self._queues.setdefault(user, deque()).append(waiter)
        try:
            async with asyncio.timeout(self.queue_wait):
                await waiter.granted
        except TimeoutError:
            if _holds_slots(waiter):
                return  # handed the slots in the same instant as the time ran out: keep them
            self._leave(waiter)
            raise Busy(
                f"busy: waited {self.queue_wait:g} s for one of {self.max_runs} runs, {self.queued} requests still queued",
                self._retry_after(),
            ) from None
        except BaseException:  # cancelled (the client left, or shutdown), or refused to make room
            if _holds_slots(waiter):
                self.release(runs)  # handed the slots just as it was cancelled: pass them on
            else:
                self._leave(waiter)
            raise

    def release(self, runs: int, seconds: float | None = None) -> None:
        """Give back `runs` slots (`seconds`: how long they were held) and hand them to the next in turn."""
        self.in_flight -= runs
        if seconds is not None:
            mean = self.run_seconds
            self.run_seconds = seconds if mean is None else (1 - SMOOTHING) * mean + SMOOTHING * seconds
        self._grant()

    def _grant(self) -> None:
        """Admit the head of each user's queue in turn while its runs fit; a batch that does not fit yet
        holds its turn (nobody passes it, so it is not starved by single runs)."""
        while self._queues:
            user, queue = next(iter(self._queues.items()))
            waiter = queue[0]
            if self.in_flight + waiter.runs > self.max_runs:
                return
            queue.popleft()
            del self._queues[user]
            if queue:
                self._queues[user] = queue  # to the back of the turn order
            self.in_flight += waiter.runs
            waiter.granted.set_result(None)

    def _leave(self, waiter: _Waiter) -> None:
        queue = self._queues.get(waiter.user)
        if queue is not None and waiter in queue:
            queue.remove(waiter)
            if not queue:
                del self._queues[waiter.user]
            self._grant()  # a batch at the head may have been holding up smaller runs behind it

    def _make_room(self, user: Hashable) -> bool:
        """The queue is full: if `user` has fewer requests queued than the user with the most, that user's
        latest request is refused to make room (so one user cannot fill the queue); else False."""
        if not self._queues:  # no queue at all (max_queued 0)
            return False
        mine = len(self._queues.get(user, ()))
        most = max(self._queues, key=lambda u: len(self._queues[u]))
        if len(self._queues[most]) <= mine + 1:
            return False
        evicted = self._queues[most][-1]
        self._leave(evicted)
        message = f"busy: the queue is full and user {most!r} holds the most of it"
        evicted.granted.set_exception(Busy(message, self._retry_after()))
        return True

    def _retry_after(self) -> int:
        """Whole seconds until the queue ahead should have drained, jittered; at least RETRY_AFTER_SECONDS."""
        ahead = sum(w.runs for queue in self._queues.values() for w in queue) + self.in_flight
        drain = (self.run_seconds or RETRY_AFTER_SECONDS) * ahead / self.max_runs
        jittered = drain * self._jitter(1 - JITTER, 1 + JITTER)
        return min(MAX_RETRY_AFTER_SECONDS, max(RETRY_AFTER_SECONDS, math.ceil(jittered)))
