"""The threads database from outside: concurrent turns in two processes, unusable files, long ids."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from crag.threads import InvalidThreadId, ThreadsError, thread_config, thread_turn, threaded_graph

ROOT = Path(__file__).resolve().parents[3]  # the child process imports tests.fakes from here

# one turn in its own process, as `crag ask --thread T` takes it; the retriever is slow so that the
# two turns overlap
TURN = textwrap.dedent("""
    import sys, time
    from tests.fakes import DOCS, FakeEvaluator, FakeWeb, fake_chat
    from langchain_core.runnables import RunnableLambda
    from crag.settings import Context
    from crag.threads import thread_config, thread_turn, threaded_graph

    db, question, answer = sys.argv[1:4]
    slow = RunnableLambda(lambda q: (time.sleep(1.5), list(DOCS))[1])
    ctx = Context(evaluator=FakeEvaluator({"painter": 0.9}), chat_model=fake_chat(answer), retriever=slow,
                  web_backend=FakeWeb([]))
    with thread_turn("T", db, on_wait=lambda: print("waited", flush=True)):
        with threaded_graph(db) as g:
            g.invoke({"question": question}, config=thread_config("T"), context=ctx)
""")


def test_two_processes_taking_turns_on_one_thread_keep_both_turns(tmp_path):
    db = tmp_path / "threads.sqlite"
    turns = [
        ("What is Anna Berg's occupation?", "A Swedish painter."),
        ("Where do Anna Berg's works hang?", "In Stockholm."),
    ]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", TURN, str(db), q, a],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for q, a in turns
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outputs]
    with threaded_graph(db) as g:
        history = g.get_state(thread_config("T")).values["history"]
    assert sorted(t["asked"] for t in history) == sorted(q for q, _ in turns)  # no turn lost


def test_a_turn_that_cannot_get_its_thread_says_so(tmp_path):
    db = tmp_path / "threads.sqlite"
    waited = []
    with thread_turn("T", db):
        with pytest.raises(ThreadsError, match="thread 'T' is still busy"):
            with thread_turn("T", db, wait=0.2, on_wait=lambda: waited.append(1)):
                pass
        with thread_turn("other", db, wait=0.2):  # other threads are not held up
            pass
    assert waited == [1]
    with thread_turn("T", db, wait=0.2):  # released
        pass


def _corrupt(db: Path) -> Path:
    db.write_bytes(b"this is not a SQLite database" * 100)
    return db


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp, "is a folder"),
        (lambda tmp: (tmp / "file").write_text("x") and tmp / "file" / "threads.sqlite", "cannot create the folder"),
        (lambda tmp: _corrupt(tmp / "threads.sqlite"), "cannot use the threads database"),
    ],
)
def test_an_unusable_threads_database_is_a_clear_error(tmp_path, make, message):
    with pytest.raises(ThreadsError, match=message), threaded_graph(make(tmp_path)):
        pass


def test_a_huge_thread_id_is_not_echoed_whole():
    with pytest.raises(InvalidThreadId) as caught:
        thread_config("a/" * 50_000)
    assert len(str(caught.value)) < 300 and "100002 characters" in str(caught.value)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp, "is a folder"),
        (lambda tmp: (tmp / "file").write_text("x") and tmp / "file" / "threads.sqlite", "cannot create the folder"),
        (lambda tmp: _corrupt(tmp / "threads.sqlite"), "cannot use the threads database"),
    ],
)
def test_crag_ask_on_an_unusable_threads_database_prints_one_line(tmp_path, make, message):
    from typer.testing import CliRunner

    from crag.cli.main import app

    result = CliRunner().invoke(app, ["ask", "Who is Anna Berg?", "--thread", "T", "--threads-db", str(make(tmp_path))])
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and output.startswith("error: ") and message in output, result.output
