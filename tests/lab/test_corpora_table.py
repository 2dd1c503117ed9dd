"""The corpora's table (lab/benchmarks/corpora_table.py) from hand-made records: paired against RAG, runs from
several folders of one corpus joined, questions kept only when every system answered them."""

from __future__ import annotations

import json
import sys

from lab.benchmarks import corpora_table


def _write(folder, records):
    folder.mkdir(parents=True)
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records) + '{"torn')


def _record(system, qid, correct, answerable=True, abstained=False, seconds=2.0):
    return {
        "system": system,
        "qid": qid,
        "answerable": answerable,
        "correct": correct,
        "abstained": abstained,
        "knowledge_recall": correct,
        "documents_with_answer": [True],
        "knowledge_tokens": 100,
        "wall_s": seconds,
    }


def test_each_system_beside_rag_on_the_questions_all_answered(tmp_path, monkeypatch, capsys):
    rag = [_record("rag", f"q{i}", i < 2, seconds=10.0) for i in range(4)] + [
        _record("rag", "u", False, answerable=False, seconds=10.0)
    ]
    crag = [_record("crag", f"q{i}", i < 3, seconds=4.0) for i in range(4)] + [
        _record("crag", "u", False, answerable=False, abstained=True, seconds=4.0)
    ]
    _write(tmp_path / "manual" / "base", rag + crag)
    _write(tmp_path / "manual" / "variants", [_record("crag_x", f"q{i}", True) for i in range(3)])  # q3 not yet
    monkeypatch.setattr(sys, "argv", ["corpora_table", "--root", str(tmp_path), "--systems", "crag,crag_x"])
    corpora_table.main()
    out = capsys.readouterr().out
    assert "| manual | rag | 3 + 0 | 66.7% |" in out  # u and q3 are left out: crag_x has not answered them
    assert "| manual | crag | 3 + 0 | 100.0% | +33.3 [" in out
    assert "(0.40×)" in out
    assert "crag_x: mean accuracy over 1 corpora 100.0%, − RAG +33.3" in out
