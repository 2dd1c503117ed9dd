"""`python -m lab evaluator build-faq`: FAQ questions against the real retriever over the FAQs' answers."""

from __future__ import annotations

import gzip
import json

from typer.testing import CliRunner

from crag.evaluator.pairs import read_pairs
from lab.cli import app

TOPICS = {
    "How do I delete lines that match a pattern?": "The d command removes every line the address selects, "
    "so an address made of a regular expression drops all lines it matches from the output stream.",
    "Why does my compressed file get bigger?": "Data that is already compressed, such as JPEG images or "
    "archives, has no redundancy left, and the container headers then add bytes instead of saving any.",
    "How can I see which process holds a file open?": "Run the listing tool with the file name as its "
    "argument; it prints the command, the process identifier and the user of every process with it open.",
}


def _faq(path, questions):
    lines = [
        f"{n}.{n}. {q}\n\n   {TOPICS[q]} " + "Filler words keep the answer long. " * 40 + "\n"
        for n, q in enumerate(questions, 1)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress("\n".join(lines).encode()))
    return path


def test_build_faq_labels_the_chunk_holding_each_answer(tmp_path):
    first = _faq(tmp_path / "sed" / "FAQ.gz", list(TOPICS)[:2])
    second = _faq(tmp_path / "lsof" / "00FAQ.gz", list(TOPICS)[2:])
    out = tmp_path / "data"
    result = CliRunner().invoke(
        app,
        [
            "evaluator",
            "build-faq",
            "--out",
            str(out),
            "--faq",
            str(first),
            "--faq",
            str(second),
            "--faq",
            str(tmp_path / "none.gz"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "3 questions from 2 FAQs" in result.output
    pairs = read_pairs(out / "faq.jsonl")
    manifest = json.loads((out / "faq-manifest.json").read_text())
    assert manifest["questions"] == 3 and set(manifest["files"]) == {str(first), str(second)}
    for group in {p.group for p in pairs}:
        members = [p for p in pairs if p.group == group]
        relevant = [p for p in members if p.label]
        assert len({p.question for p in members}) == 1 and relevant  # each answer is found in its top chunks
        topic = TOPICS[members[0].question]
        assert any(topic in p.passage for p in relevant)  # the chunk with the answer's start is relevant
        home = str(first) if members[0].question in list(TOPICS)[:2] else str(second)
        assert {p.source for p in relevant} == {home}  # never a chunk of the other FAQ
        assert not any(topic in p.passage for p in members if not p.label)
        assert all(p.question not in p.passage for p in members)  # questions are not in what is stored
    assert {p.title for p in pairs} == {"sed FAQ", "lsof FAQ"}


def test_build_faq_without_any_faq_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(
        app, ["evaluator", "build-faq", "--out", str(tmp_path), "--faq", str(tmp_path / "x.gz")]
    )
    assert result.exit_code != 0 and "no FAQ with questions found" in result.output
