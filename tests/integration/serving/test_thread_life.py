"""The life of a thread on `crag serve` (SQLite; test_postgres_threads.py repeats it on Postgres): one
checkpoint kept per thread however many turns, idle threads deleted after --thread-ttl, 409 at once for a
second request on a busy thread, and a retried request (same request_id) answered from its saved turn."""

from __future__ import annotations

import sqlite3
import threading
import time

import httpx
from langchain_core.runnables import RunnableLambda
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from typer.testing import CliRunner

from crag.cli.main import app as cli
from crag.serve.upkeep import checkpoint_id_at
from tests.fakes import DOCS, fake_context
from tests.servers import running

QUESTION = "What is Anna Berg's occupation?"
FOLLOW_UPS = ["Where do her works hang?", "When did she live?", "Who taught her?"]


def ask(url: str, question: str, timeout: float = 30, headers: dict | None = None, **configurable) -> httpx.Response:
    body = {"input": {"question": question}, "config": {"configurable": configurable}}
    return httpx.post(f"{url}/crag/invoke", json=body, timeout=timeout, headers=headers)


def asked(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [turn["asked"] for turn in response.json()["output"]["history"]]


def slow_context(seconds: float):
    """Fakes whose retriever takes `seconds`, so that a turn is still running when the next request comes."""

    def retrieve(question):
        time.sleep(seconds)
        return list(DOCS)

    return fake_context(retriever=RunnableLambda(retrieve))


def checkpoints(db, thread: str) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (thread,)).fetchone()[0]


def in_background(call, *args, **kwargs) -> tuple[threading.Thread, list]:
    result: list = []
    thread = threading.Thread(target=lambda: result.append(call(*args, **kwargs)))
    thread.start()
    return thread, result


def test_a_checkpoint_id_for_a_time_sorts_as_that_time():
    now = time.time()
    assert checkpoint_id_at(now - 1) < checkpoint_id_at(now) < checkpoint_id_at(now + 0.001)
    assert checkpoint_id_at(now)[14] == "6"  # a UUIDv6, as LangGraph's own


def test_a_thread_keeps_one_checkpoint_however_many_turns(serve, tmp_path):
    url = serve(threads_db=tmp_path / "threads.sqlite")
    for number, question in enumerate([QUESTION, *FOLLOW_UPS], start=1):
        assert len(asked(ask(url, question, thread_id="anna"))) == number
        assert checkpoints(tmp_path / "threads.sqlite", "anna") == 1
    streamed = httpx.post(
        f"{url}/crag/stream",
        json={"input": {"question": QUESTION}, "config": {"configurable": {"thread_id": "anna"}}},
        timeout=30,
    )
    assert streamed.status_code == 200 and "event: end" in streamed.text
    assert checkpoints(tmp_path / "threads.sqlite", "anna") == 1
    assert len(asked(ask(url, "And after that?", thread_id="anna"))) == 6  # every turn in the one kept


def test_idle_threads_expire_and_recent_ones_stay(serve, tmp_path):
    db = tmp_path / "threads.sqlite"
    url = serve(threads_db=db, thread_ttl=4)  # a sweep every second
    started = time.monotonic()
    assert asked(ask(url, QUESTION, thread_id="old")) == [QUESTION]
    time.sleep(3)
    assert asked(ask(url, QUESTION, thread_id="recent")) == [QUESTION]
    while checkpoints(db, "old") and time.monotonic() - started < 15:
        time.sleep(0.2)
    assert checkpoints(db, "old") == 0, "an idle thread was not deleted"
    assert time.monotonic() - started >= 4  # not before its time
    assert checkpoints(db, "recent") == 1  # idle about 2 s of its 4
    assert asked(ask(url, FOLLOW_UPS[0], thread_id="old")) == [FOLLOW_UPS[0]]  # the id starts afresh


def test_no_expiry_with_a_ttl_of_zero(serve, tmp_path):
    db = tmp_path / "threads.sqlite"
    url = serve(threads_db=db, thread_ttl=0)
    assert asked(ask(url, QUESTION, thread_id="kept")) == [QUESTION]
    with sqlite3.connect(db) as conn:  # made a year ago, as far as its checkpoint id says
        conn.execute("UPDATE checkpoints SET checkpoint_id = ?", (checkpoint_id_at(time.time() - 365 * 86400),))
    time.sleep(1.5)
    assert checkpoints(db, "kept") == 1


def test_a_second_request_on_a_busy_thread_is_refused_at_once(serve, tmp_path):
    url = serve(context=slow_context(6.0), warm_up=False)
    first, result = in_background(ask, url, QUESTION, thread_id="busy")
    time.sleep(1.0)  # the first turn is running
    for route, body in (
        ("invoke", {"input": {"question": FOLLOW_UPS[0]}, "config": {"configurable": {"thread_id": "busy"}}}),
        ("stream", {"input": {"question": FOLLOW_UPS[0]}, "config": {"configurable": {"thread_id": "busy"}}}),
        ("stream_events", {"input": {"question": FOLLOW_UPS[0]}, "config": {"configurable": {"thread_id": "busy"}}}),
        ("batch", {"inputs": [{"question": FOLLOW_UPS[0]}], "config": {"configurable": {"thread_id": "busy"}}}),
    ):
        sent = time.monotonic()
        refused = httpx.post(f"{url}/crag/{route}", json=body, timeout=30)
        assert refused.status_code == 409, (route, refused.status_code, refused.text)
        assert first.is_alive() and time.monotonic() - sent < 3.0, route  # while the first turn runs
        assert refused.json()["detail"] == (
            "thread 'busy' is answering another question: send this one once that answer has come"
        )
    assert httpx.delete(f"{url}/threads/busy", timeout=30).status_code == 409
    assert httpx.get(f"{url}/health").json()["runs_in_flight"] == 1  # the refused ones hold no slot
    cli_error = CliRunner().invoke(cli, ["ask", FOLLOW_UPS[0], "--server", url, "--thread", "busy"])
    assert cli_error.exit_code == 2 and cli_error.output.strip() == (
        "error: the thread is busy (409): thread 'busy' is answering another question: send this one once that "
        "answer has come"
    )
    other = ask(url, QUESTION, thread_id="other")  # another thread is not held up
    assert asked(other) == [QUESTION]
    first.join(timeout=30)
    assert asked(result[0]) == [QUESTION]
    assert asked(ask(url, FOLLOW_UPS[0], thread_id="busy")) == [QUESTION, FOLLOW_UPS[0]]  # free again


def test_a_retried_request_is_answered_from_its_saved_turn(serve, tmp_path):
    db = tmp_path / "threads.sqlite"
    url = serve(threads_db=db)
    first = ask(url, QUESTION, thread_id="anna", request_id="q-1")
    again = ask(url, QUESTION, thread_id="anna", request_id="q-1")
    assert asked(first) == asked(again) == [QUESTION]  # one turn, not two
    first_output, again_output = first.json()["output"], again.json()["output"]
    assert again_output == first_output  # the saved answer, timings and all: nothing ran again
    assert asked(ask(url, FOLLOW_UPS[0], thread_id="anna", request_id="q-2")) == [QUESTION, FOLLOW_UPS[0]]
    # only the last saved turn is answered again: q-1 after q-2 is a new turn
    assert len(asked(ask(url, QUESTION, thread_id="anna", request_id="q-1"))) == 3
    # without a thread_id, the request id names the thread the server makes, so its retry finds it
    made, retried = ask(url, QUESTION, request_id="q-9"), ask(url, QUESTION, request_id="q-9")
    assert made.json()["output"]["thread_id"] == retried.json()["output"]["thread_id"]
    assert asked(retried) == [QUESTION] and checkpoints(db, made.json()["output"]["thread_id"]) == 1
    streamed = httpx.post(
        f"{url}/crag/stream",
        json={"input": {"question": QUESTION}, "config": {"configurable": {"request_id": "q-9"}}},
        timeout=30,
    )
    assert streamed.status_code == 200 and streamed.text.count("event: data") == 1  # the saved state, once
    bad = ask(url, QUESTION, thread_id="anna", request_id="a/b")
    assert bad.status_code == 422 and "invalid request id 'a/b'" in bad.text


def test_crag_ask_retries_with_its_request_id_and_the_turn_is_written_once(serve, tmp_path):
    """A proxy in front of the server passes the first request on, then answers 502 as if the worker had died
    after saving the turn: `crag ask --server` sends it again, with the same request id."""
    db = tmp_path / "threads.sqlite"
    upstream = serve(threads_db=db)
    bodies: list[bytes] = []

    async def proxy(request: Request) -> Response:
        body = await request.body()
        bodies.append(body)
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.post(
                f"{upstream}{request.url.path}", content=body, headers={"content-type": "application/json"}
            )
        if len(bodies) == 1:
            return Response("bad gateway", status_code=502)
        return Response(answer.content, status_code=answer.status_code, media_type="application/json")

    with running(Starlette(routes=[Route("/{path:path}", proxy, methods=["POST"])])) as front:
        result = CliRunner().invoke(cli, ["ask", QUESTION, "--server", front, "--thread", "anna", "--json"])
    assert result.exit_code == 0, result.output
    assert len(bodies) == 2 and bodies[0] == bodies[1] and b'"request_id"' in bodies[0]
    assert asked(ask(upstream, FOLLOW_UPS[0], thread_id="anna")) == [QUESTION, FOLLOW_UPS[0]]  # once, not twice
