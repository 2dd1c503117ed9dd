"""The admission queue (crag.serve.admission.Runs) and the Guard waiting in it: order, turns between users,
the bounds (queue full, wait limit) refused with a Retry-After that reflects the queue, and slots given back
when a waiting request is cancelled or its client leaves."""

from __future__ import annotations

import asyncio
import json

import pytest

from crag.serve.admission import RETRY_AFTER_SECONDS, Busy, Runs
from crag.serve.guard import Guard


def no_jitter(low: float, high: float) -> float:
    return 1.0


async def queue_up(runs: Runs, admitted: list, *requests: tuple[str, str]) -> list[asyncio.Task]:
    """Start each (user, name) request; `admitted` gets the name once it holds its slot (and keeps it)."""

    async def one(user: str, name: str, count: int = 1) -> None:
        await runs.acquire(user, count)
        admitted.append(name)

    tasks = []
    for user, name, *count in requests:
        tasks.append(asyncio.ensure_future(one(user, name, *count)))
        await asyncio.sleep(0)  # arrive in this order
    return tasks


async def release_all(runs: Runs, count: int) -> None:
    for _ in range(count):
        runs.release(1)
        await asyncio.sleep(0)


async def test_a_free_slot_is_taken_at_once_and_the_rest_wait_in_arrival_order():
    runs = Runs(max_runs=2, max_queued=8, queue_wait=5)
    admitted: list[str] = []
    await queue_up(runs, admitted, *[("ann", f"r{i}") for i in range(5)])
    assert admitted == ["r0", "r1"] and runs.in_flight == 2 and runs.queued == 3
    await release_all(runs, 3)
    assert admitted == ["r0", "r1", "r2", "r3", "r4"] and runs.queued == 0 and runs.in_flight == 2


async def test_users_take_turns_and_each_users_requests_keep_their_order():
    runs = Runs(max_runs=1, max_queued=8, queue_wait=5)
    admitted: list[str] = []
    await queue_up(runs, admitted, ("ann", "a0"), ("ann", "a1"), ("ann", "a2"), ("ann", "a3"), ("bob", "b1"))
    await queue_up(runs, admitted, ("cy", "c1"), ("bob", "b2"))
    await release_all(runs, 6)
    # ann's flood is not served before bob and cy: one each in turn
    assert admitted == ["a0", "a1", "b1", "c1", "a2", "b2", "a3"]


async def test_a_newcomer_never_passes_the_queue():
    runs = Runs(max_runs=1, max_queued=8, queue_wait=5)
    admitted: list[str] = []
    await queue_up(runs, admitted, ("ann", "a0"), ("ann", "a1"))
    runs.release(1)  # a slot frees: it is a1's, though nobody has run since
    await queue_up(runs, admitted, ("bob", "b1"))
    await asyncio.sleep(0)
    assert admitted == ["a0", "a1"] and runs.queued == 1


async def test_a_batch_holds_its_turn_until_its_slots_are_free():
    runs = Runs(max_runs=2, max_queued=8, queue_wait=5)
    admitted: list[str] = []
    await queue_up(runs, admitted, ("ann", "a0"), ("bob", "batch", 2), ("cy", "c1"))
    assert admitted == ["a0"]  # one slot free, but the batch needs two and c1 does not pass it
    await release_all(runs, 1)
    assert admitted == ["a0", "batch"] and runs.in_flight == 2


async def test_a_full_queue_refuses_at_once_with_a_retry_after_from_its_length():
    runs = Runs(max_runs=2, max_queued=2, queue_wait=5, jitter=no_jitter)
    runs.run_seconds = 10.0
    await queue_up(runs, [], ("ann", "a0"), ("ann", "a1"), ("ann", "a2"), ("ann", "a3"))
    with pytest.raises(Busy) as refused:
        await asyncio.wait_for(runs.acquire("ann"), 0.1)  # at once, not after the wait limit
    # 2 in flight + 2 queued, 10 s a run, 2 at a time: the queue ahead drains in 20 s
    assert refused.value.retry_after == 20 and "2 requests queued" in str(refused.value)


async def test_retry_after_is_jittered_within_bounds_and_never_below_the_floor():
    draws = iter([0.5, 1.5, 1.5])
    runs = Runs(max_runs=1, max_queued=0, queue_wait=5, jitter=lambda low, high: next(draws))
    runs.run_seconds = 8.0
    await runs.acquire("ann")
    retry_afters = []
    for _ in range(2):
        with pytest.raises(Busy) as refused:
            await runs.acquire("bob")
        retry_afters.append(refused.value.retry_after)
    assert retry_afters == [4, 12]
    runs.run_seconds = 0.1
    with pytest.raises(Busy) as refused:
        await runs.acquire("bob")
    assert refused.value.retry_after == RETRY_AFTER_SECONDS


async def test_one_user_cannot_fill_the_queue_against_another():
    runs = Runs(max_runs=1, max_queued=3, queue_wait=5)
    admitted: list[str] = []
    tasks = await queue_up(runs, admitted, ("ann", "a0"), ("ann", "a1"), ("ann", "a2"), ("ann", "a3"))
    await queue_up(runs, admitted, ("bob", "b1"))  # the queue is full of ann's: her latest makes room
    await asyncio.sleep(0)
    assert isinstance(tasks[3].exception(), Busy) and "'ann' holds the most" in str(tasks[3].exception())
    await release_all(runs, 3)
    assert admitted == ["a0", "a1", "b1", "a2"]
    await queue_up(runs, admitted, ("bob", "b2"), ("ann", "a4"), ("bob", "b3"))
    with pytest.raises(Busy):  # full again; bob holds one more than ann: pushing him out would not be fairer
        await runs.acquire("ann")


async def test_the_wait_limit_refuses_with_retry_after_and_leaves_the_queue():
    runs = Runs(max_runs=1, max_queued=4, queue_wait=0.05, jitter=no_jitter)
    await runs.acquire("ann")
    with pytest.raises(Busy) as refused:
        await runs.acquire("bob")
    assert "waited 0.05 s" in str(refused.value) and refused.value.retry_after >= RETRY_AFTER_SECONDS
    assert runs.queued == 0 and runs.in_flight == 1


async def test_a_request_cancelled_while_queued_leaves_and_the_next_moves_up():
    runs = Runs(max_runs=1, max_queued=4, queue_wait=5)
    admitted: list[str] = []
    tasks = await queue_up(runs, admitted, ("ann", "a0"), ("bob", "b1"), ("cy", "c1"))
    tasks[1].cancel()
    await asyncio.sleep(0)
    assert runs.queued == 1
    await release_all(runs, 1)
    assert admitted == ["a0", "c1"] and runs.in_flight == 1


async def test_slots_handed_to_a_request_cancelled_in_the_same_instant_are_passed_on():
    runs = Runs(max_runs=1, max_queued=4, queue_wait=5)
    admitted: list[str] = []
    tasks = await queue_up(runs, admitted, ("ann", "a0"), ("bob", "b1"), ("cy", "c1"))
    runs.release(1)  # b1 is handed the slot ...
    tasks[1].cancel()  # ... and cancelled before it resumes
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert tasks[1].cancelled() and admitted == ["a0", "c1"] and runs.in_flight == 1 and runs.queued == 0


async def test_admitted_measures_a_run_for_the_retry_after_estimate():
    times = iter([100.0, 104.0, 200.0, 210.0])
    runs = Runs(max_runs=1, max_queued=1, queue_wait=5, clock=lambda: next(times))
    for _ in range(2):
        async with runs.admitted("ann"):
            assert runs.in_flight == 1
    assert runs.in_flight == 0 and runs.run_seconds == pytest.approx(0.8 * 4 + 0.2 * 10)


# the Guard in front of an app: a queued request runs once a slot frees; one whose client leaves holds none


class Client:
    """An ASGI client of one POST /crag/invoke: its body, then a disconnect once `leave` is set."""

    def __init__(self) -> None:
        self.leave = asyncio.Event()
        self.sent: list[dict] = []
        self.body = json.dumps({"input": {"question": "who?"}}).encode()

    async def receive(self) -> dict:
        if self.body:
            body, self.body = self.body, b""
            return {"type": "http.request", "body": body, "more_body": False}
        await self.leave.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int | None:
        return next((m["status"] for m in self.sent if m["type"] == "http.response.start"), None)


SCOPE = {"type": "http", "method": "POST", "path": "/crag/invoke", "headers": [(b"content-type", b"application/json")]}


async def test_the_guard_queues_a_run_and_drops_one_whose_client_left():
    finish = asyncio.Event()
    ran: list[int] = []

    async def app(scope, receive, send):
        ran.append(len(ran))
        await finish.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    guard = Guard(app, max_runs=1, max_queued=4, queue_wait=5)
    first, leaving, queued = Client(), Client(), Client()
    tasks = []
    for client in (first, leaving, queued):
        tasks.append(asyncio.ensure_future(guard(dict(SCOPE), client.receive, client.send)))
        await asyncio.sleep(0.01)
    assert ran == [0] and guard.runs.queued == 2
    leaving.leave.set()
    await asyncio.sleep(0.01)
    assert tasks[1].done() and tasks[1].exception() is None  # gone, nothing answered
    assert leaving.sent == [] and guard.runs.queued == 1
    finish.set()
    await asyncio.wait_for(asyncio.gather(tasks[0], tasks[2]), 1)
    assert first.status == queued.status == 200 and ran == [0, 1]
    assert guard.runs.in_flight == 0 and guard.runs.queued == 0


async def test_the_guard_answers_503_with_the_queues_retry_after_when_the_wait_runs_out():
    async def app(scope, receive, send):
        await asyncio.sleep(1)

    guard = Guard(app, max_runs=1, max_queued=4, queue_wait=0.05)
    running, waiting = Client(), Client()
    task = asyncio.ensure_future(guard(dict(SCOPE), running.receive, running.send))
    await asyncio.sleep(0.01)
    await guard(dict(SCOPE), waiting.receive, waiting.send)
    assert waiting.status == 503
    headers = dict(waiting.sent[0]["headers"])
    assert int(headers[b"retry-after"]) >= RETRY_AFTER_SECONDS
    assert b"waited 0.05 s" in waiting.sent[1]["body"]
    task.cancel()
