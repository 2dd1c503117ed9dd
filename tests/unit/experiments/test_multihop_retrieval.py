"""The multi-hop retrieval measure: the knowledge base built from the pairs, what reached the knowledge, and
systems run on fakes (single-time retrieval against FLARE's searches)."""

from __future__ import annotations

import pytest
from langchain_core.runnables import RunnableLambda

from crag.passages import passage
from lab.benchmarks.multihop_retrieval import knowledge_base, limited, measure, measured, read_questions, summarize
from tests.fakes import ProbableChat, fake_context, said

PAIRS = [
    {"source": "hotpotqa", "qid": "h-0", "question": "Where was the painter of The Sea born?", "title": "The Sea",
     "text": "The Sea is a painting by Anna Berg.", "label": 1},
    {"source": "hotpotqa", "qid": "h-0", "question": "Where was the painter of The Sea born?", "title": "Anna Berg",
     "text": "Anna Berg was born in Oslo.", "label": 1},
    {"source": "hotpotqa", "qid": "h-0", "question": "Where was the painter of The Sea born?", "title": "Oslo",
     "text": "Oslo is the capital of Norway.", "label": 0},
    {"source": "musique", "qid": "m-0", "question": "Who painted The Sea?", "title": "The Sea",
     "text": "The Sea is a painting by Anna Berg.", "label": 1},
]  # fmt: skip


def test_every_paragraph_is_stored_once_and_each_question_knows_its_supporting_ones():
    questions = read_questions(PAIRS)
    assert [(q["qid"], len(q["paragraphs"])) for q in questions] == [("h-0", 3), ("m-0", 1)]
    passages, supporting = knowledge_base(questions)
    assert [p.key for p in passages] == ["h-0-0", "h-0-1", "h-0-2"]  # m-0's paragraph is h-0's first
    assert supporting == {"h-0": ["h-0-0", "h-0-1"], "m-0": ["h-0-0"]}
    assert [q["qid"] for q in limited(questions * 3, 1)] == ["h-0", "m-0"]


def test_every_supporting_paragraph_must_reach_the_knowledge():
    given = {"given": [{"source": "h-0-0"}, {"source": "h-0-2"}]}
    assert measured(given, ["h-0-0", "h-0-1"]) == {
        "knowledge_sources": ["h-0-0", "h-0-2"],
        "supporting_reached": 1,
        "all": False,
        "any": True,
    }
    assert measured({"given": [{"source": "h-0-1"}, {"source": "h-0-0"}]}, ["h-0-0", "h-0-1"])["all"]


def test_single_time_retrieval_and_flare_on_fakes(tmp_path):
    """The question's search finds the first hop only; a search with FLARE's draft (which names Anna Berg) finds
    the second: RAG reaches one supporting paragraph, FLARE both."""
    first = passage("The Sea is a painting by Anna Berg.", title="The Sea", source="h-0-0")
    second = passage("Anna Berg was born in Oslo.", title="Anna Berg", source="h-0-1")
    question = "Where was the painter of The Sea born?"

    def search(query: str):
        return [first] if query == question else [second, first]

    chat = ProbableChat(answer=[said("Anna Berg was born in Oslo.", unsure={"Oslo.": 0.2})],
                        informed=[said("Anna Berg was born in Oslo.", prob=0.99)], knows="Oslo")  # fmt: skip
    ctx = fake_context(chat_model=chat, retriever=RunnableLambda(search), web_backend="none",
                       recheck_threshold=None, flare_correct=False)  # fmt: skip
    questions = read_questions(PAIRS)[:1]
    rows = measure(questions, {"h-0": ["h-0-0", "h-0-1"]}, ctx, "rag,flare", tmp_path / "rows.jsonl", progress=False)
    by = {r["system"]: r for r in rows}
    assert (by["rag"]["all"], by["rag"]["supporting_reached"]) == (False, 1)
    assert (by["flare"]["all"], by["flare"]["supporting_reached"]) == (True, 2)
    summary = summarize(rows)
    assert summary["flare"]["all_supporting"] == 1.0 and summary["rag / hotpotqa"]["all_supporting"] == 0.0
    assert summary["rag"]["llm_calls"] >= 1
    # a rerun measures nothing again
    again = measure(questions, {"h-0": ["h-0-0", "h-0-1"]}, ctx, "rag,flare", tmp_path / "rows.jsonl", progress=False)
    assert again == rows and len((tmp_path / "rows.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize("limit", [None, 5])
def test_no_limit_or_a_large_one_keeps_every_question(limit):
    assert len(limited(read_questions(PAIRS), limit)) == 2
