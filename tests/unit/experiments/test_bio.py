"""The Biography inputs: questions in the paper's wording per split, every topic's passages in one index, the
own-page passages as the evidence and the web."""

from __future__ import annotations

import json

import pytest

from crag.evaluation.inputs import read_passages, read_questions
from lab.datasets.bio import bio_inputs, build_bio
from tests.fakes import write_jsonl


def _passages(index: int, topic: str, own: list[int]) -> list[dict]:
    """A topic's ten passages, those ranked in `own` from its own page (ranks 0 and 1 the same text)."""
    records = []
    for rank in range(10):
        text = f"{topic} passage {1 if rank < 2 else rank}" if rank in own else f"Other {index} {rank}"
        title = topic if rank in own else f"Someone Else {rank}"
        records.append(
            {
                "source": "bio",
                "qid": f"bio-{index}",
                "question": f"Who is {topic}?",
                "topic": topic,
                "rank": rank,
                "title": title,
                "text": text,
                "label": int(rank in own),
            }
        )
    return records


RECORDS = [*_passages(301, "Ann Example", [0, 1, 5]), *_passages(150, "Bo Sample", []), *_passages(299, "Cy Test", [2])]


def test_the_splits_take_their_topics_in_index_order():
    questions, kb, web = bio_inputs(list(reversed(RECORDS)), "tuning")
    assert [q["id"] for q in questions] == ["bio-150", "bio-299"]
    assert questions[1] == {
        "id": "bio-299",
        "question": "Tell me a bio of Cy Test.",
        "answers": ["Cy Test"],
        "topic": "Cy Test",
        "task": "bio",
        "evidence": ["Cy Test passage 2"],
    }
    assert questions[0]["evidence"] == []  # no own-page passage: the fact judge has nothing to read
    assert len(kb) == 20 and kb[0]["id"] == "bio-150-0"  # every passage of the split's topics, one index
    assert [w["text"] for w in web] == ["Cy Test passage 2"]


def test_the_evidence_and_the_web_hold_each_own_page_text_once():
    questions, kb, web = bio_inputs(RECORDS, "table")
    assert questions[0]["evidence"] == ["Ann Example passage 1", "Ann Example passage 5"]
    assert [(w["title"], w["url"]) for w in web] == [
        ("Ann Example", "local://Ann%20Example#bio-301-0"),
        ("Ann Example", "local://Ann%20Example#bio-301-5"),
    ]
    assert {r["id"] for r in kb} == {f"bio-301-{n}" for n in range(10)}


def test_build_writes_inputs_crag_eval_run_reads(tmp_path):
    data = tmp_path / "data"
    (data / "relevance").mkdir(parents=True)
    write_jsonl(data / "relevance" / "bio_contriever_top10.jsonl", RECORDS)
    manifest = build_bio(data, tmp_path / "out", "table")
    assert (manifest["questions"], manifest["kb"], manifest["web"], manifest["without_evidence"]) == (1, 10, 2, 0)
    (question,) = read_questions(tmp_path / "out" / "questions.jsonl")
    assert question.qid == "bio-301" and question.extra["evidence"] == [
        "Ann Example passage 1",
        "Ann Example passage 5",
    ]
    assert len(read_passages(tmp_path / "out" / "kb.jsonl")) == 10
    assert len(read_passages(tmp_path / "out" / "web.jsonl", "web")) == 2
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["split"] == "table"


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="unknown split 'test'"):
        bio_inputs(RECORDS, "test")
    with pytest.raises(ValueError, match="not a Bio question id: 'popqa-3'"):
        bio_inputs([{**RECORDS[0], "qid": "popqa-3"}], "table")
    with pytest.raises(ValueError, match="no Bio topics in table"):
        bio_inputs([r for r in RECORDS if r["qid"] != "bio-301"], "table")
