"""Admission on a real uvicorn server (127.0.0.1) with fake models: a run past `max_runs` waits in the queue
and is answered once a slot frees; one that waits past `queue_wait` gets a 503 with Retry-After."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
from langchain_core.runnables import RunnableLambda

from tests.fakes import DOCS, fake_context

BODY = json.dumps({"input": {"question": "What is Anna Berg's occupation?"}}).encode()


def slow_context(seconds: float):
    def retrieve(question):
        time.sleep(seconds)
        return list(DOCS)

    context = fake_context()
    context.retriever = RunnableLambda(retrieve)
    return context


def ask(url: str) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = httpx.post(f"{url}/crag/invoke", content=BODY, headers={"content-type": "application/json"}, timeout=30)
    return response, time.monotonic() - started


def health(url: str) -> dict:
    return httpx.get(f"{url}/health", timeout=5).json()


def wait_for(predicate, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "the server never reached the expected state"
        time.sleep(0.02)


def test_a_queued_request_is_answered_once_a_slot_frees(serve):
    url = serve(context=slow_context(1.5), max_runs=1, queue_wait=10, warm_up=False)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(ask, url)
        wait_for(lambda: health(url)["runs_in_flight"] == 1)
        second = pool.submit(ask, url)
        wait_for(lambda: health(url)["runs_queued"] == 1)  # waiting, not refused
        (one, _), (two, waited) = first.result(), second.result()
    assert one.status_code == two.status_code == 200 and two.json()["output"]["answer"]
    assert waited > 2.0  # it ran after the first (1.5 s left of it) and took its own 1.5 s
    assert health(url)["runs_in_flight"] == 0 and health(url)["runs_queued"] == 0


def test_a_request_that_waits_past_the_limit_gets_503_with_retry_after(serve):
    url = serve(context=slow_context(3.0), max_runs=1, queue_wait=0.5, warm_up=False)
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(ask, url)
        wait_for(lambda: health(url)["runs_in_flight"] == 1)
        busy, waited = ask(url)
        assert busy.status_code == 503 and int(busy.headers["retry-after"]) >= 2
        assert "waited 0.5 s" in busy.json()["detail"] and 0.4 < waited < 2.5
        assert running.result()[0].status_code == 200
