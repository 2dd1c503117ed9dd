"""One end-to-end run on the real default models (shipped evaluator, MiniLM, SmolLM2) over the demo data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crag.cli.main import app
from crag.evaluator.runnable import DEFAULT_CHECKPOINT

DEMO = Path(__file__).resolve().parents[2] / "crag" / "demo"
pytestmark = pytest.mark.skipif(not DEFAULT_CHECKPOINT.is_dir(), reason="the shipped evaluator is not built yet")


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    chroma = tmp_path_factory.mktemp("chroma")
    result = CliRunner().invoke(app, ["ingest", str(DEMO / "kb"), "--chroma-dir", str(chroma), "--no-progress"])
    assert result.exit_code == 0, result.output
    again = CliRunner().invoke(app, ["ingest", str(DEMO / "kb"), "--chroma-dir", str(chroma), "--no-progress"])
    assert "0 added" in again.output  # re-ingesting changes nothing
    return chroma


def _ask(chroma: Path, question: str, *extra: str) -> dict:
    result = CliRunner().invoke(
        app, ["ask", question, "--json", "--chroma-dir", str(chroma), "--web-index", str(DEMO / "web.jsonl"), *extra]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_demo_questions_take_all_three_actions(demo_store):
    questions = (DEMO / "questions.txt").read_text().splitlines()
    runs = [_ask(demo_store, q) for q in questions]
    assert [r["action"] for r in runs] == ["correct", "incorrect", "ambiguous"]
    correct, incorrect, ambiguous = runs
    assert correct["sources"] and {s["origin"] for s in correct["sources"]} == {"internal"}
    assert "Ada Lovelace" in correct["knowledge"]
    assert incorrect["rewritten_query"] and {s["origin"] for s in incorrect["sources"]} == {"external"}
    assert "Reinhardt" in incorrect["knowledge"]
    assert {s["origin"] for s in ambiguous["sources"]} <= {"internal", "external"}
    for run in runs:
        assert run["answer"] and len(run["documents"]) == 10
        assert all(-1 <= d["score"] <= 1 for d in run["documents"])


def test_bad_question_is_a_clear_cli_error(demo_store):
    result = CliRunner().invoke(app, ["ask", "   ", "--chroma-dir", str(demo_store)])
    assert result.exit_code == 2 and "empty" in result.output


def test_human_output_and_stream(demo_store):
    result = CliRunner().invoke(
        app,
        [
            "ask",
            "What is Ada Lovelace's occupation?",
            "--stream",
            "--chroma-dir",
            str(demo_store),
            "--web-index",
            str(DEMO / "web.jsonl"),
        ],
    )
    assert result.exit_code == 0, result.output
    for part in (
        "· retrieved 10 documents",
        "· graded: CORRECT",
        "· refined:",
        "answer: ",
        "sources:",
        "[1] Ada Lovelace",
    ):
        assert part in result.output


def test_thread_follow_up_across_processes(demo_store, tmp_path):
    """Two CLI runs on one thread: the second (a fresh graph and connection) resolves "she"."""
    db = str(tmp_path / "threads.sqlite")
    first = _ask(demo_store, "What is Ada Lovelace's occupation?", "--thread", "demo", "--threads-db", db)
    second = _ask(demo_store, "Where was she born?", "--thread", "demo", "--threads-db", db)
    assert first["history"][0]["asked"] == "What is Ada Lovelace's occupation?"
    assert second["question"] == "Where was Ada Lovelace born?"
    assert [t["asked"] for t in second["history"]] == ["What is Ada Lovelace's occupation?", "Where was she born?"]
    assert len(second["documents"]) == 10 and second["documents"][0]["title"] == "Ada Lovelace"
