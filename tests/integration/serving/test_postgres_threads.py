"""Threads in a real PostgreSQL (started on 127.0.0.1 by the test): kept across workers, one turn at a time
per thread across connections (the advisory lock), and a turn lost without it."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import psycopg
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda

from crag.settings import Context
from crag.threads import (
    ThreadBusy,
    ThreadsError,
    ThreadsUnavailable,
    _lock_key,
    athread_turn,
    athreaded_graph,
    thread_config,
    thread_turn,
    threaded_graph,
    threads_location,
)
from tests.fakes import DOCS, FakeEvaluator, FakeWeb
from tests.servers import postgres_bin, postgres_server

pytestmark = pytest.mark.skipif(postgres_bin("initdb") is None, reason="PostgreSQL is not installed (make servers)")


@pytest.fixture(scope="module")
def postgres():
    with postgres_server() as server:
        yield server.url


class SlowChat(BaseChatModel):
    """Answers after `delay` seconds, so that two turns overlap."""

    delay: float = 0.0
    reply: str = "A painter."

    @property
    def _llm_type(self) -> str:
        return "slow"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        time.sleep(self.delay)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.reply))])


def context(delay: float = 0.0) -> Context:
    return Context(
        evaluator=FakeEvaluator({"painter": 0.9}),
        chat_model=SlowChat(delay=delay),
        retriever=RunnableLambda(lambda q: list(DOCS)),
        web_backend=FakeWeb([]),
    )


def ask(url: str, thread: str, question: str, *, lock: bool, delay: float = 0.0) -> dict:
    """One turn as one worker runs it: its own pool (`threaded_graph`), the turn lock when asked."""
    with threaded_graph(url) as graph:
        if lock:
            with thread_turn(thread, url):
                return graph.invoke({"question": question}, config=thread_config(thread), context=context(delay))
        return graph.invoke({"question": question}, config=thread_config(thread), context=context(delay))


def history(url: str, thread: str) -> list[str]:
    with threaded_graph(url) as graph:
        return [t["asked"] for t in graph.get_state(thread_config(thread)).values.get("history", [])]


def test_a_url_chooses_postgres_and_a_thread_is_kept_across_workers(postgres, monkeypatch):
    assert threads_location(postgres) == postgres
    monkeypatch.setenv("CRAG_THREADS_URL", postgres)
    assert threads_location(None) == postgres  # the environment's URL before the SQLite default
    ask(postgres, "kept", "What is Anna Berg's occupation?", lock=True)
    ask(postgres, "kept", "Where did she live?", lock=True)  # another pool: as another worker
    assert history(postgres, "kept") == ["What is Anna Berg's occupation?", "Where did she live?"]


def test_two_overlapping_turns_keep_both_with_the_lock_and_lose_one_without(postgres):
    """Both turns read the thread's last checkpoint; without the lock each writes its successor of it and
    the thread keeps one of them. With it the second waits for the first and builds on it."""
    for lock, thread in ((False, "unlocked"), (True, "locked")):
        ask(postgres, thread, "What is Anna Berg's occupation?", lock=lock)
        runs = [
            threading.Thread(target=ask, args=(postgres, thread, q), kwargs={"lock": lock, "delay": 1.0})
            for q in ("Where did she live?", "When was she born?")
        ]
        for run in runs:
            run.start()
            time.sleep(0.2)  # the second starts while the first is answering
        for run in runs:
            run.join(timeout=60)
        turns = history(postgres, thread)
        if lock:
            assert len(turns) == 3, turns
        else:
            assert len(turns) == 2, turns  # a turn lost: what the lock is for


def test_a_busy_thread_waits_then_says_so_and_a_dead_holder_frees_it(postgres):
    holder = psycopg.connect(postgres, autocommit=True)
    holder.execute("SELECT pg_advisory_lock(%s)", (_lock_key("busy"),))
    waited = []
    # the server answers it as a database that is down: 503 and Retry-After, for the client to try again
    with pytest.raises(ThreadsUnavailable, match="still busy with another turn after 0.5 s"):
        with thread_turn("busy", postgres, wait=0.5, on_wait=lambda: waited.append(True)):
            pass
    assert waited == [True]
    holder.close()  # the holding process gone (its session ends): Postgres releases the lock by itself
    with thread_turn("busy", postgres, wait=5):
        pass


def test_an_unreachable_database_is_a_clear_error_without_its_password(tmp_path):
    url = "postgresql://crag:s3cret@127.0.0.1:1/nothing"
    with pytest.raises(ThreadsError) as caught:
        with threaded_graph(url):
            pass
    assert "s3cret" not in str(caught.value) and "crag:***@127.0.0.1:1" in str(caught.value)
    with pytest.raises(ThreadsError, match="cannot use the threads database"):
        with thread_turn("t", url):
            pass


def test_workers_starting_together_set_the_schema_up_once(postgres):
    fresh = postgres.rsplit("/", 1)[0] + "/fresh"
    with psycopg.connect(postgres, autocommit=True) as conn:
        conn.execute("CREATE DATABASE fresh")
    errors = []

    def start() -> None:
        try:
            with threaded_graph(fresh):
                pass
        except Exception as exc:  # any failure of a starting worker is the finding
            errors.append(exc)

    workers = [threading.Thread(target=start) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert not any(worker.is_alive() for worker in workers), "a starting worker hung"
    assert errors == []
    with threaded_graph(fresh) as graph:  # and the schema works
        graph.invoke({"question": "Who is Anna Berg?"}, config=thread_config("fresh"), context=context())


def test_the_server_side_async_graph_and_turn_lock(postgres):
    async def main() -> tuple[int, bool]:
        async with athreaded_graph(postgres) as graph:
            async with athread_turn(postgres, "async"):
                await graph.ainvoke({"question": "Who is Anna Berg?"}, thread_config("async"), context=context())
                # held: a second taker is told at once, without waiting
                started = time.monotonic()
                try:
                    async with athread_turn(postgres, "async"):
                        pass
                    blocked = False
                except ThreadBusy:
                    blocked = time.monotonic() - started < 1.0
            state = await graph.aget_state(thread_config("async"))
            return len(state.values["history"]), blocked

    turns, blocked = asyncio.run(main())
    assert turns == 1 and blocked


def test_users_threads_and_delete_on_postgres(postgres, serve, tmp_path):
    """Owned threads and DELETE /threads/{id} on the shared Postgres saver and its advisory turn lock."""
    from tests.fakes import fake_context

    keys = tmp_path / "keys"
    keys.write_text("alice alice-key-0123456789\nbob bob-key-0123456789abc\n")
    keys.chmod(0o600)
    url = serve(context=fake_context(), threads_db=postgres, keys_file=keys)
    alice, bob = {"X-API-Key": "alice-key-0123456789"}, {"X-API-Key": "bob-key-0123456789abc"}

    def ask(who, question, thread):
        body = {"input": {"question": question}, "config": {"configurable": {"thread_id": thread}}}
        response = httpx.post(f"{url}/crag/invoke", json=body, headers=who, timeout=30)
        assert response.status_code == 200, response.text
        return [turn["asked"] for turn in response.json()["output"]["history"]]

    assert ask(alice, "What is Anna Berg's occupation?", "pg-anna") == ["What is Anna Berg's occupation?"]
    assert ask(bob, "Where do her works hang?", "pg-anna") == ["Where do her works hang?"]
    assert httpx.delete(f"{url}/threads/pg-anna", headers=bob).status_code == 204  # Bob's own
    assert httpx.delete(f"{url}/threads/pg-anna", headers=bob).status_code == 404
    assert len(ask(alice, "Where do her works hang?", "pg-anna")) == 2  # Alice's is untouched
    assert httpx.delete(f"{url}/threads/pg-anna", headers=alice).status_code == 204
    assert ask(alice, "Where do her works hang?", "pg-anna") == ["Where do her works hang?"]


def test_thread_life_across_two_workers_on_postgres(postgres, serve):
    """Two servers on one Postgres, as two workers: a turn on one makes the other answer 409 at once; a
    thread keeps one checkpoint; a retried request (same request_id) on the other worker writes no turn."""
    from tests.integration.serving.test_thread_life import FOLLOW_UPS, QUESTION, asked, in_background, slow_context
    from tests.integration.serving.test_thread_life import ask as ask_server

    slow, fast = serve(context=slow_context(6.0), threads_db=postgres, warm_up=False), serve(threads_db=postgres)
    first, result = in_background(ask_server, slow, QUESTION, thread_id="pg-life", request_id="r-1")
    time.sleep(1.0)
    for route in ("invoke", "stream"):
        body = {"input": {"question": FOLLOW_UPS[0]}, "config": {"configurable": {"thread_id": "pg-life"}}}
        sent = time.monotonic()
        refused = httpx.post(f"{fast}/crag/{route}", json=body, timeout=30)
        assert refused.status_code == 409 and "is answering another question" in refused.text, refused.text
        assert first.is_alive() and time.monotonic() - sent < 3.0  # while the first turn runs
    first.join(timeout=30)
    assert asked(result[0]) == [QUESTION]
    assert asked(ask_server(fast, QUESTION, thread_id="pg-life", request_id="r-1")) == [QUESTION]  # saved: not again
    for number, question in enumerate(FOLLOW_UPS, start=2):
        assert len(asked(ask_server(fast, question, thread_id="pg-life", request_id=f"r-{number}"))) == number
    with psycopg.connect(postgres, autocommit=True) as conn:
        kept = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = 'pg-life'").fetchone()[0]
    assert kept == 1


def test_idle_threads_expire_on_postgres(postgres, serve):
    with psycopg.connect(postgres, autocommit=True) as conn:
        conn.execute("CREATE DATABASE life")
    url = postgres.rsplit("/", 1)[0] + "/life"
    from tests.integration.serving.test_thread_life import QUESTION, asked
    from tests.integration.serving.test_thread_life import ask as ask_server

    server = serve(threads_db=url, thread_ttl=4)
    serve(threads_db=url, thread_ttl=4)  # a second worker sweeping the same threads: harmless
    started = time.monotonic()
    assert asked(ask_server(server, QUESTION, thread_id="old")) == [QUESTION]
    time.sleep(3)
    assert asked(ask_server(server, QUESTION, thread_id="recent")) == [QUESTION]

    def kept() -> set[str]:
        with psycopg.connect(url, autocommit=True) as conn:
            return {row[0] for row in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}

    while "old" in kept() and time.monotonic() - started < 15:
        time.sleep(0.2)
    assert kept() == {"recent"} and time.monotonic() - started >= 4
