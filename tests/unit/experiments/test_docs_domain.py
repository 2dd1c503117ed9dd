"""The documentation-domain validation set: hand-written questions that are well formed, pages that render
deterministically, evidence that picks out one to three of the chunks `crag ingest` makes of its page, and
a build that fails with one clear line. No models, no Chroma: the corpus is rendered once per module."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections import Counter, defaultdict

import pytest
from typer.testing import CliRunner

from crag.evaluation.inputs import read_questions
from crag.indexing.pipeline import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, load_documents, split_documents
from lab.datasets import docs_domain
from lab.datasets.cli import app
from lab.datasets.docs_domain import (
    QUESTIONS_FILE,
    SOURCES,
    STYLES,
    Source,
    SourceMissing,
    build_docs,
    is_relevant,
    load_questions,
    render,
)
from tests.fakes import write_jsonl

QUESTIONS = [json.loads(line) for line in QUESTIONS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
FIELDS = {"id", "question", "answers", "doc", "evidence", "style"}
MAX_EVIDENCE_CHUNKS = 3
STRIPS = [
    {"q_index": 1, "rank": 0, "title": "Ada Lovelace", "text": "Ada Lovelace was a mathematician."},
    {"q_index": 1, "rank": 1, "title": "Ada Lovelace", "text": "  "},
    {"q_index": 2, "rank": 0, "title": "Oslo", "text": "Oslo is the capital of Norway."},
]


def _man_page(name: str, section: str) -> None:
    """Skip the test when man, or this page, is not installed here."""
    if shutil.which("man") is None:
        pytest.skip("man is not installed")
    if subprocess.run(["man", "-w", section, name], capture_output=True).returncode != 0:
        pytest.skip(f"man page {name}({section}) is not installed")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    (data / "popqa").mkdir()
    write_jsonl(data / "popqa" / "web_strips.jsonl", STRIPS)
    return data


@pytest.fixture(scope="module")
def built(tmp_path_factory, data_dir):
    """(out, manifest) of the real corpus; every question's page must render, so man pages are needed."""
    for source in SOURCES:
        if source.kind == "man":
            _man_page(source.name, source.section)
    out = tmp_path_factory.mktemp("docs-inputs")
    return out, build_docs(out, data_dir)


def test_packaged_questions_are_well_formed():
    assert len(QUESTIONS) >= 60
    for q in QUESTIONS:
        assert set(q) == FIELDS, q.get("id")
        assert q["style"] in STYLES, q["id"]
        assert q["question"].strip() and q["question"] == " ".join(q["question"].split()), q["id"]
        assert q["answers"] and all(isinstance(a, str) and a.strip() == a and a for a in q["answers"]), q["id"]
        assert q["evidence"] and all(isinstance(e, str) and 2 <= len(e.split()) <= 14 for e in q["evidence"]), q["id"]
    ids = [q["id"] for q in QUESTIONS]
    assert len(set(ids)) == len(ids)
    per_doc = Counter(q["doc"] for q in QUESTIONS)
    assert set(per_doc) == {s.stem for s in SOURCES}, "every source is asked about and no question is orphaned"
    assert min(per_doc.values()) >= 2 and max(per_doc.values()) <= 6, per_doc
    styles = Counter(q["style"] for q in QUESTIONS)
    assert set(styles) == set(STYLES) and min(styles.values()) >= len(QUESTIONS) // 10, styles


def test_the_harness_reader_accepts_the_packaged_questions():
    assert [q.qid for q in read_questions(QUESTIONS_FILE)] == [q["id"] for q in QUESTIONS]
    assert [q["doc"] for q in load_questions()] == [q["doc"] for q in QUESTIONS]


def test_sources_have_unique_stems():
    stems = [s.stem for s in SOURCES]
    assert len(set(stems)) == len(stems) and {"json", "git-rebase", "signal.7"} <= set(stems)


def test_pydoc_renders_deterministically():
    text = render(Source("pydoc", "json"))
    assert text.startswith("Python Library Documentation: package json") and "sort_keys" in text
    assert "\nFILE\n" not in text and " at 0x" not in text  # no install path, no memory addresses
    assert render(Source("pydoc", "hashlib")) == render(Source("pydoc", "hashlib"))  # set reprs in hash order
    with pytest.raises(SourceMissing, match="cannot be imported"):
        render(Source("pydoc", "no_such_module_here"))


def test_man_page_renders_without_hyphenation():
    _man_page("git-stash", "1")
    text = render(Source("man", "git-stash", "1"))
    assert "Stash the changes in a dirty working directory away" in text
    assert "\u2010" not in text and "\b" not in text and max(map(len, text.splitlines())) <= 200
    with pytest.raises(SourceMissing, match="not installed"):
        render(Source("man", "no-such-page-for-crag", "1"))


def test_build_writes_pages_questions_kb_web_and_manifest(built):
    out, manifest = built
    pages = sorted(p.stem for p in (out / "docs").glob("*.txt"))
    assert pages == sorted(s.stem for s in SOURCES) and manifest["missing"] == []
    assert (out / "questions.jsonl").read_bytes() == QUESTIONS_FILE.read_bytes()
    kb = [json.loads(line) for line in (out / "kb.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["title"] for r in kb] == [r["id"] for r in kb] == [s.stem for s in SOURCES]
    for record, source in zip(kb, manifest["sources"]):
        text = (out / "docs" / f"{record['title']}.txt").read_text(encoding="utf-8")
        assert record["text"] == text and len(text.encode()) <= docs_domain.MAX_BYTES
        assert source["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    web = [json.loads(line) for line in (out / "web.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [w["title"] for w in web] == ["Ada Lovelace", "Oslo"]  # the blank strip is dropped
    assert all(set(w) == {"title", "text", "url"} for w in web)
    assert manifest["counts"] == {"docs": len(SOURCES), "questions": len(QUESTIONS), "kb": len(SOURCES), "web": 2}
    assert manifest["python"] and json.loads((out / "manifest.json").read_text()) == manifest


def test_every_question_hits_one_to_three_chunks_of_its_page(built):
    """The relevance labels: a chunk is relevant iff it holds an evidence phrase; chunked as `crag ingest` does."""
    out, _ = built
    chunks = split_documents(
        load_documents([out / "docs"]).documents, chunk_size=DEFAULT_CHUNK_SIZE, chunk_overlap=DEFAULT_CHUNK_OVERLAP
    )
    by_title = defaultdict(list)
    for chunk in chunks:
        by_title[chunk.metadata["title"]].append(chunk.page_content)
    assert set(by_title) == {s.stem for s in SOURCES}  # a .txt file's title is its stem
    wrong = {}
    for q in QUESTIONS:
        hits = sum(is_relevant(text, q["evidence"]) for text in by_title[q["doc"]])
        if not 1 <= hits <= MAX_EVIDENCE_CHUNKS:
            wrong[q["id"]] = hits
    assert not wrong, f"evidence chunks outside 1..{MAX_EVIDENCE_CHUNKS}: {wrong}"


def test_the_built_questions_file_reads_back(built):
    out, _ = built
    questions = read_questions(out / "questions.jsonl")
    assert len(questions) == len(QUESTIONS) and all(q.extra["doc"] and q.extra["evidence"] for q in questions)


def _one_question(tmp_path, **changes):
    record = {
        "id": "t-1",
        "question": "How do I sort keys?",
        "answers": ["sort_keys"],
        "doc": "json",
        "evidence": ["will be sorted by key"],
        "style": "how-to",
        **changes,
    }
    return write_jsonl(tmp_path / "questions.jsonl", [record])


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"evidence": ["this phrase is not in the json docs"]},
            "question t-1: evidence 'this phrase is not in the json docs' is not in json.txt",
        ),
        ({"doc": "no-such-page-for-crag"}, "doc 'no-such-page-for-crag' (question t-1) did not render: "),
        ({"doc": "csv"}, "doc 'csv' (question t-1) did not render: it is not one of the sources"),
        ({"style": "rant"}, "has style 'rant'"),
        ({"evidence": []}, 'needs "evidence"'),
    ],
)
def test_build_fails_with_one_clear_line(tmp_path, data_dir, changes, message):
    sources = (Source("pydoc", "json"), Source("man", "no-such-page-for-crag", "1"))
    with pytest.raises(ValueError) as info:
        build_docs(tmp_path / "out", data_dir, questions=_one_question(tmp_path, **changes), sources=sources)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "out").exists()  # nothing written


def test_build_docs_command(tmp_path, data_dir, monkeypatch):
    monkeypatch.setattr(docs_domain, "SOURCES", (Source("pydoc", "json"), Source("pydoc", "textwrap")))
    monkeypatch.setattr(docs_domain, "QUESTIONS_FILE", _one_question(tmp_path))
    runner = CliRunner()
    result = runner.invoke(app, ["build-docs", "--out", str(tmp_path / "inputs"), "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    assert "2 pages in" in result.output and "1 questions" in result.output and "web 2 strips" in result.output
    assert sorted(p.name for p in (tmp_path / "inputs" / "docs").iterdir()) == ["json.txt", "textwrap.txt"]
    result = runner.invoke(app, ["build-docs", "--out", str(tmp_path / "x"), "--data-dir", str(tmp_path / "none")])
    assert result.exit_code == 2 and "web_strips.jsonl is missing" in result.output
