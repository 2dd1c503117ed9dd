"""The harness on the real models and the shared data (slow: `make test-slow`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crag.cli.evaluate import app

DATA = Path(os.environ.get("CRAG_DATA_DIR") or Path(__file__).resolve().parents[4] / "shared" / "data")

pytestmark = pytest.mark.slow


def test_rag_and_crag_end_to_end_on_the_real_models(inputs, tmp_path):
    questions, kb, web = inputs
    out = tmp_path / "run"
    args = [
        "run",
        "--questions",
        questions,
        "--kb",
        kb,
        "--web",
        web,
        "--out",
        out,
        "--chroma-dir",
        tmp_path / "chroma",
        "--systems",
        "rag,crag",
        "--no-progress",
    ]
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert set(results) == {"rag", "crag"} and all(r["n"] == 2 and r["errors"] == 0 for r in results.values())
    assert sum(results["crag"]["actions"].values()) == 2 and results["crag"]["evaluator_calls"] >= 1
    assert results["crag"]["latency"]["grade"] > 0 and results["rag"]["latency"]["generate"] > 0
    again = CliRunner().invoke(app, [str(a) for a in args])  # resumed: nothing left, the collection is reused
    assert again.exit_code == 0 and len((out / "predictions.jsonl").read_text().splitlines()) == 4


@pytest.mark.skipif(not (DATA / "popqa" / "questions.jsonl").is_file(), reason="shared data not found")
def test_build_popqa_from_the_shared_data(tmp_path):
    from crag.evaluation.inputs import drop_gold, read_passages, read_questions
    from lab.datasets.popqa import build_popqa

    manifest = build_popqa(DATA, tmp_path)
    assert manifest["questions"] == 300 and manifest["web"] == 3221
    questions, kb = read_questions(tmp_path / "questions.jsonl"), read_passages(tmp_path / "kb.jsonl")
    assert len(kb) == sum(manifest["kb"].values()) > 7000
    assert all(p.title == "" for p in kb[: manifest["kb"]["selected_passages"]])
    kept, dropped = drop_gold(kb, questions, 1.0)
    assert dropped and len(kept) + len(dropped) == len(kb)
