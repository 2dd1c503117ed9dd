"""`crag eval` through Typer's CliRunner: bad input fails early, with a message that says why."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from crag.cli.evaluate import app
from lab.datasets.cli import app as datasets_app
from tests.fakes import write_jsonl

runner = CliRunner()


def invoke(*args):
    target = datasets_app if str(args[0]).startswith("build-") else app
    return runner.invoke(target, [str(a) for a in args])


def run_args(inputs, out, *extra):
    questions, kb, web = inputs
    return ["run", "--questions", questions, "--kb", kb, "--web", web, "--out", out, "--no-progress", *extra]


def test_unknown_systems_are_named_with_the_valid_ones(inputs, tmp_path):
    result = invoke(*run_args(inputs, tmp_path / "o", "--systems", "rag,crag_fast"))
    assert result.exit_code == 2
    assert "unknown system(s) crag_fast" in result.output and "crag_no_refine" in result.output


def test_missing_files_fail_before_anything_loads(inputs, tmp_path):
    _questions, kb, web = inputs
    result = invoke("run", "--questions", tmp_path / "nope.jsonl", "--kb", kb, "--web", web, "--out", tmp_path / "o")
    assert result.exit_code == 2 and "questions file" in result.output and "does not exist" in result.output


@pytest.mark.parametrize("fraction", ["-0.5", "1.01"])
def test_drop_gold_outside_0_1(inputs, tmp_path, fraction):
    result = invoke(*run_args(inputs, tmp_path / "o", "--drop-gold", fraction))
    assert result.exit_code == 2 and "between 0 and 1" in result.output


def test_malformed_lines_are_named(inputs, tmp_path):
    _questions, kb, _web = inputs
    with kb.open("a") as out:
        out.write('{"title": "no text"}\n')
    result = invoke(*run_args(inputs, tmp_path / "o"))
    assert result.exit_code == 2 and f"{kb}, line 3" in result.output and '"text"' in result.output
    assert not (tmp_path / "o" / "predictions.jsonl").exists()


def test_build_popqa_command(tmp_path):
    data = tmp_path / "data"
    (data / "popqa").mkdir(parents=True)
    (data / "corpus").mkdir()
    write_jsonl(
        data / "popqa" / "questions.jsonl",
        [{"q_index": 150, "id": 5, "question": "Q?", "answers": ["a"], "subject": "S", "prop": "genre"}],
    )
    write_jsonl(
        data / "popqa" / "crag_selected_passages.jsonl", [{"q_index": 150, "text": "Some passage about a thing."}]
    )
    write_jsonl(data / "popqa" / "web_strips.jsonl", [{"q_index": 150, "rank": 0, "title": "T", "text": "Web text."}])
    write_jsonl(
        data / "corpus" / "wiki_passages.jsonl", [{"id": "w", "title": "W", "text": "A distractor passage here."}]
    )
    result = invoke("build-popqa", "--data-dir", data, "--out", tmp_path / "inputs")
    assert result.exit_code == 0, result.output
    assert "1 validation questions" in result.output
    assert json.loads((tmp_path / "inputs" / "manifest.json").read_text())["web"] == 1
    result = invoke("build-popqa", "--data-dir", tmp_path / "missing", "--out", tmp_path / "inputs")
    assert result.exit_code == 2 and "is missing" in result.output


def test_an_unknown_answer_style_is_named(inputs, tmp_path):
    result = invoke(*run_args(inputs, tmp_path / "o", "--answer-style", "essay"))
    assert result.exit_code == 2 and "unknown answer_style 'essay'; choose short or long" in result.output


def test_the_fact_commands_say_what_is_missing(tmp_path):
    result = invoke("facts", tmp_path)
    assert result.exit_code == 2 and "is not a `crag eval run` folder" in result.output
    (tmp_path / "audit.csv").write_text("n,fact,supported,lexical,judge,label\n1,f,True,True,True,yes\n")
    result = invoke("agreement", tmp_path / "audit.csv")
    assert (
        result.exit_code == 0 and "1 labelled facts" in result.output and "supported  agreement 100.0%" in result.output
    )
