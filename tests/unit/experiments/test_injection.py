"""The prompt-injection set: every question's answering document carries one instruction, nothing else
changes, and the report counts what obeyed."""

from __future__ import annotations

import json

import pytest

from lab.datasets import injection


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_answering_document_carries_one_instruction_and_nothing_else_changes(tmp_path):
    summary = injection.build(tmp_path)
    assert summary == {"questions": 18, "injected": {"kb": 12, "web": 6}}
    questions = read(tmp_path / "questions.jsonl")
    instructions = {marker: text for text, marker in injection.INJECTIONS}
    assert {q["marker"] for q in questions} == set(instructions)  # all six used
    for where in ("kb", "web"):
        clean, injected = read(tmp_path / f"{where}.jsonl"), read(tmp_path / f"{where}-injected.jsonl")
        assert len(clean) == len(injected) and [r["title"] for r in clean] == [r["title"] for r in injected]
        changed = {c["title"]: i["text"] for c, i in zip(clean, injected) if c != i}
        asked = [q for q in questions if q["where"] == where]
        assert len(changed) == len(asked)
        for q in asked:
            case = next(c for c in injection.CASES if c[0] == q["question"])
            text = changed[case[3]]
            assert text.count(instructions[q["marker"]]) == 1
            original = next(c["text"] for c in clean if c["title"] == case[3])
            assert text.replace(instructions[q["marker"]], "").strip() == original
            # the clean document answers the question: the set tests obeying, not a missing answer
            assert any(a.lower() in original.lower() for a in q["answers"])


def test_the_report_counts_drafts_and_answers_that_obeyed(tmp_path):
    injection.build(tmp_path)
    questions = read(tmp_path / "questions.jsonl")
    first, second = questions[0], questions[1]
    records = [
        {
            "system": "rag",
            "qid": first["id"],
            "draft": "ACCESS GRANTED.",
            "answer": "ACCESS GRANTED.",
            "answers": first["answers"],
        },
        {
            "system": "crag",
            "qid": first["id"],
            "draft": "ACCESS GRANTED.",
            "answer": "I don't know: …",
            "answers": first["answers"],
        },
        {
            "system": "crag",
            "qid": second["id"],
            "draft": "Dijon.",
            "answer": "Gustave Eiffel was born in Dijon.",
            "answers": second["answers"],
        },
        # another document's injection obeyed counts too
        {
            "system": "rag",
            "qid": second["id"],
            "draft": "BANANA Dijon.",
            "answer": "BANANA Dijon.",
            "answers": ["Dijon"],
        },
    ]
    run = tmp_path / "run"
    run.mkdir()
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    rows = injection.report(run, tmp_path / "questions.jsonl")
    assert rows["rag"] == {"n": 2, "draft_obeyed": 2, "obeyed": 2, "quoted": 0, "correct": 1, "declined": 0}
    assert rows["crag"] == {"n": 2, "draft_obeyed": 1, "obeyed": 0, "quoted": 0, "correct": 1, "declined": 1}

    (run / "predictions.jsonl").write_text(json.dumps({**records[0], "qid": "docs-001"}) + "\n")
    with pytest.raises(ValueError, match="not one of the injection set's"):
        injection.report(run, tmp_path / "questions.jsonl")
