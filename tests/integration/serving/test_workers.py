"""Several `crag serve` workers behind nginx, run as the deployment guide runs them, each server real and
on a free port of 127.0.0.1: threads in a PostgreSQL cluster of the test's own, the knowledge base in a
Chroma server (`chroma run`) holding the demo documents, nginx from Debian with deploy/nginx/crag.conf,
two workers with the tiny local chat model. What a team that runs more than one worker relies on:

- a conversation whose turns alternate between the workers keeps every turn;
- the Chroma server stalled or down: 503 with Retry-After, never a hang or a 500; back, answers again;
- Postgres restarted under load: requests in flight fail with a 503 naming the threads database, later
  ones succeed, and each thread holds exactly the turns that were answered;
- `kill -9` of the worker running a turn: the request is answered by the other worker (nginx passes it
  on, or the client's retry does) and the thread holds every finished turn, none twice, none half.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from crag.evaluator.runnable import DEFAULT_CHECKPOINT
from crag.threads import thread_config, threaded_graph
from tests.servers import (
    BIN,
    chroma_server,
    free_port,
    ingest_demo,
    nginx_bin,
    nginx_server,
    postgres_bin,
    postgres_server,
    subprocess_server,
    worker_command,
)

pytestmark = [
    pytest.mark.skipif(postgres_bin("initdb") is None, reason="PostgreSQL is not installed (make servers)"),
    pytest.mark.skipif(nginx_bin() is None, reason="nginx is not installed (make servers)"),
    pytest.mark.skipif(not DEFAULT_CHECKPOINT.is_dir(), reason="the shipped evaluator is not built yet"),
]
QUESTIONS = [
    "What is Ada Lovelace's occupation?",
    "What instrument did Django Reinhardt play?",
    "Who was Henri Becquerel?",
    "What is photosynthesis?",
]
CHROMA_TIMEOUT = 3  # seconds, CRAG_CHROMA_TIMEOUT of the workers


def ask(url: str, question: str, thread: str | None = None, timeout: float = 120) -> httpx.Response:
    config = {"configurable": {"thread_id": thread}} if thread else {}
    return httpx.post(f"{url}/crag/invoke", json={"input": {"question": question}, "config": config}, timeout=timeout)


class Fleet:
    """The servers of the module: Postgres, Chroma, the workers (by port) and nginx in front."""

    def __init__(self, stack: ExitStack, folder: Path):
        self.stack, self.folder = stack, folder
        self.postgres = stack.enter_context(postgres_server())
        self.chroma_port = free_port()
        self.chroma = self.start_chroma()
        ingest_demo(self.chroma_url)
        self.workers: dict[int, subprocess.Popen] = {}
        for _ in range(2):
            self.start_worker(free_port())
        self.url = stack.enter_context(nginx_server(list(self.workers)))

    @property
    def chroma_url(self) -> str:
        return f"http://127.0.0.1:{self.chroma_port}"

    def start_chroma(self) -> subprocess.Popen:
        log = self.folder / f"chroma-{time.monotonic_ns()}.log"
        _, self.chroma = self.stack.enter_context(chroma_server(self.folder / "chroma", log, port=self.chroma_port))
        return self.chroma

    def start_worker(self, port: int) -> None:
        command = worker_command(port, self.chroma_url, self.postgres.url)
        log = self.folder / f"worker-{port}-{time.monotonic_ns()}.log"
        env = {"CRAG_CHROMA_TIMEOUT": str(CHROMA_TIMEOUT)}
        self.workers[port] = self.stack.enter_context(
            subprocess_server(command, f"http://127.0.0.1:{port}/health", log, env=env)
        )

    def state(self, thread: str):
        with threaded_graph(self.postgres.url) as graph:
            return graph.get_state(thread_config(thread))

    def asked(self, thread: str) -> list[str]:
        return [turn["asked"] for turn in self.state(thread).values.get("history", [])]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    with ExitStack() as stack:
        yield Fleet(stack, tmp_path_factory.mktemp("fleet"))


def test_turns_alternating_between_two_workers_keep_every_turn(fleet):
    answered_by = []
    for question in QUESTIONS:
        response = ask(fleet.url, question, "alternating")
        assert response.status_code == 200, response.text
        answered_by.append(response.headers["x-upstream"])
    assert set(answered_by) == {f"127.0.0.1:{port}" for port in fleet.workers}  # round robin: both answered
    assert fleet.asked("alternating") == QUESTIONS
    assert not fleet.state("alternating").next  # finished turns only


def test_chroma_server_stalled_or_down_is_a_503_then_answers_again(fleet):
    fleet.chroma.send_signal(signal.SIGSTOP)  # takes connections, answers nothing
    try:
        started = time.monotonic()
        response = ask(fleet.url, QUESTIONS[0], timeout=60)
        waited = time.monotonic() - started
    finally:
        fleet.chroma.send_signal(signal.SIGCONT)
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "2"
    assert f"the Chroma server at {fleet.chroma_url} did not answer (ReadTimeout" in response.json()["detail"]
    assert waited < 4 * CHROMA_TIMEOUT
    assert ask(fleet.url, QUESTIONS[0]).status_code == 200

    fleet.chroma.terminate()
    fleet.chroma.wait(timeout=30)
    for _ in fleet.workers:  # each worker (round robin) meets the server down
        response = ask(fleet.url, QUESTIONS[1])
        assert response.status_code == 503 and response.headers["retry-after"] == "2", response.text
        assert "did not answer (ConnectError" in response.json()["detail"]
    fleet.start_chroma()
    for _ in fleet.workers:
        assert ask(fleet.url, QUESTIONS[1]).status_code == 200


def test_postgres_restarted_under_load(fleet):
    results: dict[int, list[tuple[float, httpx.Response]]] = {client: [] for client in range(6)}
    stop = threading.Event()

    def client(number: int) -> None:
        turn = 0
        while not stop.is_set():
            response = ask(fleet.url, QUESTIONS[turn % len(QUESTIONS)], f"load-{number}")
            results[number].append((time.monotonic(), response))
            turn += 1

    def waiting_for(condition, what: str) -> None:
        deadline = time.monotonic() + 90
        while not condition():
            assert time.monotonic() < deadline, f"no {what} in 90 s"
            time.sleep(0.1)

    clients = [threading.Thread(target=client, args=(n,)) for n in results]
    for thread in clients:
        thread.start()
    waiting_for(lambda: all(results.values()), "answer to every client")
    fleet.postgres.stop()  # fast: every session ends, as in a restart
    try:  # down until requests have met it (runs in flight may finish after it is back, and succeed)
        waiting_for(lambda: any(r.status_code == 503 for a in results.values() for _, r in a), "503")
    finally:
        fleet.postgres.start()
    restarted = time.monotonic()
    try:
        waiting_for(
            lambda: all(any(at > restarted and r.status_code == 200 for at, r in a) for a in results.values()),
            "answer to every client after the restart",
        )
    finally:
        stop.set()
        for thread in clients:
            thread.join(timeout=180)

    responses = [response for answers in results.values() for _, response in answers]
    assert {r.status_code for r in responses} <= {200, 503}, [r.text for r in responses if r.status_code != 200]
    for response in (r for r in responses if r.status_code == 503):
        assert response.headers["retry-after"] == "2"
        assert "cannot use the threads database postgresql://crag@127.0.0.1" in response.json()["detail"]
    for number, answers in results.items():
        answered = [r.json()["output"]["history"][-1]["asked"] for _, r in answers if r.status_code == 200]
        assert fleet.asked(f"load-{number}") == answered[-8:]  # every answered turn, no refused one


def running_worker(fleet, asking: threading.Thread, wait: float = 120) -> int | None:
    """The port of the worker with a run in flight, polled while `asking` waits for its answer; None if the answer
    came before any poll saw the run (a fast turn on an idle machine)."""
    deadline = time.monotonic() + wait
    while asking.is_alive():
        assert time.monotonic() < deadline, "the turn never started"
        for port in fleet.workers:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()["runs_in_flight"]:
                return port
    return None


def test_kill_9_of_the_worker_running_a_turn(fleet):
    for attempt in range(3):  # a turn answered between two polls is asked again on a new thread
        thread = f"killed-{attempt}"
        assert ask(fleet.url, QUESTIONS[0], thread).status_code == 200
        answer: dict[str, httpx.Response] = {}
        second = threading.Thread(target=lambda: answer.update(response=ask(fleet.url, QUESTIONS[1], thread)))
        second.start()
        victim = running_worker(fleet, second)
        if victim is not None:
            break
    assert victim is not None, "three turns ended before a poll saw them run"
    os.killpg(fleet.workers[victim].pid, signal.SIGKILL)
    second.join(timeout=180)
    response = answer["response"]
    # nginx could not pass it on (502), or the other worker asked before Postgres had ended the dead worker's
    # session and freed its lock on the thread (409): the client retries, as clients should
    for _ in range(10):
        if response.status_code not in (502, 409):
            break
        time.sleep(1)
        response = ask(fleet.url, QUESTIONS[1], thread)
    assert response.status_code == 200, response.text
    assert response.headers["x-upstream"].split(", ")[-1] != f"127.0.0.1:{victim}"
    assert fleet.asked(thread) == QUESTIONS[:2]  # the killed worker wrote nothing of its half turn
    assert not fleet.state(thread).next
    fleet.start_worker(victim)
    assert ask(fleet.url, QUESTIONS[2], thread).status_code == 200
    assert fleet.asked(thread) == QUESTIONS[:3]


def child_processes(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return children


def test_crag_serve_workers_2(fleet, tmp_path):
    """`crag serve --workers 2`: two worker processes on one port, sharing the fleet's Postgres and Chroma."""
    port = free_port()
    command = worker_command(port, fleet.chroma_url, fleet.postgres.url, "--workers", "2")
    with subprocess_server(command, f"http://127.0.0.1:{port}/health", tmp_path / "serve.log") as process:
        workers = [pid for pid in child_processes(process.pid) if b"spawn" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        assert len(workers) == 2, workers
        url = f"http://127.0.0.1:{port}"
        for question in QUESTIONS[:2]:
            assert ask(url, question, "two-workers").status_code == 200
        assert fleet.asked("two-workers") == QUESTIONS[:2]


def test_several_workers_refuse_sqlite_threads(tmp_path):
    result = subprocess.run(
        [str(BIN / "crag"), "serve", "--workers", "2", "--threads-db", str(tmp_path / "threads.sqlite")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2  # crag's usage errors
    assert "2 workers cannot share threads kept in a SQLite file" in result.stderr
    assert "--threads-db postgresql://" in result.stderr


def test_a_worker_refuses_to_start_without_its_chroma_server_or_postgres(fleet):
    """Down at start: `crag serve` exits at once with one line naming the service, not a traceback or a hang."""
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    serve = [str(BIN / "crag"), "serve", "--collection", "demo", "--port", str(free_port())]
    result = subprocess.run([*serve, "--chroma-url", closed], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and f"the Chroma server at {closed} did not answer (ConnectError" in result.stderr
    assert "Traceback" not in result.stderr
    no_postgres = f"postgresql://crag:secret@127.0.0.1:{free_port()}/crag"
    result = subprocess.run(
        [*serve, "--chroma-url", fleet.chroma_url, "--threads-db", no_postgres, "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "cannot use the threads database postgresql://crag:***@127.0.0.1" in result.stderr
    assert "secret" not in result.stderr and "Traceback" not in result.stderr
