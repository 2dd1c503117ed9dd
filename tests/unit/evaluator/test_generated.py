"""Generated training questions: what is read, what is never read, how replies are parsed, and resuming."""

from __future__ import annotations

import gzip
import itertools
import json

import pytest

from crag.evaluator.training.questions import parse_questions, typo_style, with_derived
from lab.datasets.docs_domain import SOURCES
from lab.datasets.manuals import Source
from lab.evaluator import generated
from lab.evaluator.cli_generate import held_out
from lab.evaluator.generated import (
    Exclusions,
    candidate_passages,
    generate_questions,
    man_sources,
    page_passages,
    spread,
)

PROSE = " ".join(f"The option --flag{i} makes the tool print every matching line with its number." for i in range(40))

REPLY = """1. How do I print line numbers with the tool?
2. **Detail question:** Which option prints the `number` of each matching line?
3. "line numbers??"
"""


def test_parse_takes_each_numbered_style_once_without_labels_or_quotes():
    got = parse_questions(REPLY + "1. A second first line is ignored\n")
    assert got == {
        "how-to": "How do I print line numbers with the tool?",
        "detail": "Which option prints the `number` of each matching line?",
        "casual": "line numbers??",
    }
    assert parse_questions("Sure! Here are some questions.") == {}
    assert parse_questions("1. ok\n2. What now?") == {"detail": "What now?"}  # a one-word line is no question


def test_derived_styles_come_from_the_model_questions():
    got = with_derived(parse_questions(REPLY))
    assert got["lower"] == "how to print line numbers with the tool"
    assert got["keywords"] == "option prints number each matching line"
    assert got["typo"] != got["detail"] and sorted(got["typo"]) == sorted(got["detail"])
    assert typo_style("How do I do it?") is None  # no word long enough to mistype
    assert with_derived({"casual": "hi there"}) == {"casual": "hi there"}
    assert "keywords" not in with_derived({"detail": "What is it?"})  # no content word to search with


def test_pages_give_a_few_readable_chunks_and_no_licence_text():
    passages = page_passages("man", "man:tool.1", "tool", PROSE, per_source=2)
    assert len(passages) == 2 and len({p.id for p in passages}) == 2
    assert passages[0].text.startswith("The option --flag0")  # the page's first chunk is always one
    licence = "COPYRIGHT\n" + PROSE
    assert all("COPYRIGHT" not in p.text for p in page_passages("man", "man:x.1", "x", licence, per_source=5))
    assert page_passages("man", "man:x.1", "x", "too short") == []


def test_spread_caps_each_family_and_takes_one_of_each_first():
    names = [f"gcloud_{i}" for i in range(50)] + ["ls", "tar", "git-log", "git-am"]
    order = spread(names, family=lambda n: n.split("_")[0].split("-")[0], name=str, seed=0, cap=3)
    assert sum(n.startswith("gcloud") for n in order) == 3
    assert {n.split("_")[0].split("-")[0] for n in order[:4]} == {"gcloud", "ls", "tar", "git"}


def test_the_validation_pages_and_faq_files_are_never_read(tmp_path, monkeypatch):
    man = tmp_path / "man" / "man1"
    man.mkdir(parents=True)
    for source in SOURCES:
        if source.kind == "man":
            (tmp_path / "man" / f"man{source.section}").mkdir(exist_ok=True)
            (tmp_path / "man" / f"man{source.section}" / f"{source.name}.{source.section}.gz").write_bytes(b"")
    (man / "other.1.gz").write_bytes(b"")
    doc = tmp_path / "doc"
    (doc / "sed").mkdir(parents=True)
    (doc / "sed" / "README").write_text(PROSE)
    (doc / "python3-foo").mkdir()
    (doc / "python3-foo" / "README.md").write_text(PROSE)  # kept for the held-out package-docs check
    rendered = []

    def fake_render(source: Source) -> str:
        rendered.append(source)
        return PROSE

    monkeypatch.setattr(generated, "render", fake_render)
    exclude = Exclusions(man=held_out().man, pydoc=held_out().pydoc, files=frozenset({str(doc / "sed" / "README")}))
    passages = list(candidate_passages(exclude=exclude, man_root=tmp_path / "man", doc_root=doc))
    validation = {s.stem for s in SOURCES}
    assert {s.name for s in rendered if s.kind == "man"} == {"other"}
    assert not any(s.name in validation for s in rendered)
    assert {p.kind for p in passages} == {"man", "pydoc"}  # the FAQ-like file and the Python package's are left out
    assert all(not p.source.startswith("doc:") for p in passages)


def test_man_sources_reads_names_and_sections(tmp_path):
    for name in ("ls.1.gz", "openssl-req.1ssl.gz", "README"):
        (tmp_path / "man1").mkdir(exist_ok=True)
        (tmp_path / "man1" / name).write_bytes(b"")
    assert {(s.name, s.section) for s in man_sources(tmp_path, ("1",))} == {("ls", "1"), ("openssl-req", "1ssl")}


def test_generation_resumes_and_survives_a_torn_last_line(tmp_path):
    out = tmp_path / "q.jsonl"
    passages = [generated.Passage(f"id{i}", "man", f"man:t{i}.1", f"t{i}", PROSE) for i in range(5)]
    asked = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        return REPLY

    first = generate_questions(passages, ask, out, limit=2, progress=False)
    assert first["written"] == 2 and len(asked) == 2
    with out.open("a") as sink:
        sink.write('{"id": "id2", "torn')  # a run killed mid-write
    second = generate_questions(passages, ask, out, limit=10, progress=False)
    assert second == {**second, "written": 3, "already": 2}
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == [f"id{i}" for i in range(5)]
    assert records[0]["questions"]["casual"] == "line numbers??" and "typo" in records[0]["questions"]
    assert PROSE[:200] in asked[0]


@pytest.mark.parametrize("raw", [b"", b"\x1f\x8b broken"])
def test_unreadable_documentation_files_are_skipped(tmp_path, raw):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "README.gz").write_bytes(raw)
    (tmp_path / "pkg2").mkdir()
    (tmp_path / "pkg2" / "README.gz").write_bytes(gzip.compress(PROSE.encode()))
    got = list(itertools.islice(generated._doc_pages(sorted(tmp_path.rglob("README.gz"))), 5))
    assert [title for _, title, text in got if text] == ["pkg2 README"]  # the broken one skipped, the empty one empty


def _page(topic: str, sections: int) -> str:
    """A page of `sections` ~900-character sections, each about its own numbered setting."""
    return "\n\n".join(
        f"{topic.upper()} SECTION {i}\n"
        + " ".join([f"The {topic} setting number{i} controls the {topic} value {i}."] * 14)
        for i in range(sections)
    )


def test_round_trip_keeps_findable_questions_and_labels_the_retrievers_other_results():
    from lab.evaluator.generated_pairs import HybridIndex, generated_pairs, is_dev_page, pool_chunks

    pages = {"man:alpha.1": _page("alpha", 6), "man:beta.1": _page("beta", 6), "man:gamma.1": _page("gamma", 6)}
    chunks = pool_chunks([{"source": s, "title": s[4:-2], "text": ""} for s in pages], pages)
    target = next(c for c in chunks if c.source == "man:alpha.1" and c.position == 3)
    record = {
        "id": "r1",
        "kind": "man",
        "source": "man:alpha.1",
        "title": "alpha",
        "text": target.text,
        "questions": {
            "detail": "What does the alpha setting number3 control?",
            "keywords": "weather in paris tomorrow",
        },
    }
    index = HybridIndex(pool_chunks([record], pages), progress=False)
    splits, stats = generated_pairs([record], index, progress=False)
    assert stats["kept_by_style"] == {"detail": 1.0, "keywords": 0.0}  # the unrelated query fails the round trip
    pairs = splits["dev" if is_dev_page("man:alpha.1") else "train"]
    assert [p.label for p in pairs].count(1) == 1 and pairs[0].passage == " ".join(target.text.split())
    negatives = [p for p in pairs if p.label == 0]
    assert negatives and all(
        f"number{i} " not in p.passage for p in negatives for i in (2, 3, 4)
    )  # neighbours left out
    assert all(p.group == "generated:r1:detail" for p in pairs)


def test_a_question_written_for_two_chunks_of_one_page_is_left_out():
    from lab.evaluator.generated_pairs import HybridIndex, generated_pairs, pool_chunks

    pages = {"man:alpha.1": _page("alpha", 6), "man:beta.1": _page("beta", 6)}
    chunks = pool_chunks([{"source": s, "title": s[4:-2], "text": ""} for s in pages], pages)
    first, fourth = (next(c for c in chunks if c.source == "man:alpha.1" and c.position == i) for i in (0, 3))
    same = "How do I set the alpha value?"
    records = [
        {"id": f"r{i}", "kind": "man", "source": "man:alpha.1", "title": "alpha", "text": chunk.text,
         "questions": {"how-to": same, "detail": f"What does the alpha setting number{i} control?"}}
        for i, chunk in ((0, first), (3, fourth))
    ]  # fmt: skip
    index = HybridIndex(pool_chunks(records, pages), progress=False)
    splits, stats = generated_pairs(records, index, progress=False)
    asked = {p.question for ps in splits.values() for p in ps}
    assert same not in asked and stats["asked_on_two_chunks"] == 2 and stats["questions"] == 2
