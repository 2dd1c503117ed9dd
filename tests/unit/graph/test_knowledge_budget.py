"""Knowledge by a budget (`Context.knowledge_tokens`), whole documents when the grade is unsure, strips the
reader picks (`Context.choose_strips`) and quotes the reader judges (`Context.judge_quotes`)."""

from __future__ import annotations

import dataclasses

import pytest
from langchain_core.documents import Document

from crag import resources
from crag.graphs.crag import graph
from crag.knowledge.budget import fill
from crag.prompts import QUOTE_ANSWER
from crag.records import Strip
from crag.text import count_tokens
from tests.fakes import fake_chat

QUESTION = "Where was Anna Berg born?"
PAINTER = "Anna Berg was a Swedish painter. She painted the sea. Her works hang in Stockholm."
BIRTH = "Anna Berg was born in Uppsala in 1891. She studied in Paris and later in Rome, where her teachers were the landscape painters of the day."
HOUSE = "The Berg house stands by the lake. It was built in 1850 by the painter's grandfather."
DOCS = [
    Document(page_content=PAINTER, metadata={"title": "Anna Berg", "source": "kb/painter.txt"}),
    Document(page_content=BIRTH, metadata={"title": "Anna Berg", "source": "kb/birth.txt"}),
    Document(page_content=HOUSE, metadata={"title": "Berg house", "source": "kb/house.txt"}),
]


def strip(text: str, doc: int, start: int = 0) -> Strip:
    return Strip(text=text, score=0.5, selection_score=0.5, lifted=True, title="t", source="s",
                 origin="internal", doc=doc, start=start, end=start + len(text))  # fmt: skip


def test_fill_adds_whole_documents_by_rank_while_they_fit_and_replaces_their_strips():
    kept = [strip("Her works hang in Stockholm.", 0, 54)]
    budget = count_tokens(PAINTER) + count_tokens(HOUSE)  # the first and the third fit, not the second too
    knowledge, taken = fill(kept, DOCS, [0.9, -0.2, 0.1], budget)
    assert taken == {0, 2}
    assert [s["text"] for s in knowledge] == [PAINTER, HOUSE]  # document order, the strip replaced by its page
    assert [s["score"] for s in knowledge] == [0.9, 0.1] and knowledge[1]["end"] == len(HOUSE)


def test_fill_keeps_strips_of_documents_that_do_not_fit_and_nothing_over_the_budget():
    kept = [strip("Anna Berg was born in Uppsala in 1891.", 1)]
    knowledge, taken = fill(kept, DOCS, [0.0, 0.0, 0.0], count_tokens(kept[0]["text"]) + 5)
    assert taken == set() and knowledge == kept
    knowledge, taken = fill([], DOCS, [], 0)
    assert knowledge == [] and taken == set()


def test_fill_counts_a_documents_own_kept_strips_as_already_given():
    kept = [strip(BIRTH, 1)]
    knowledge, taken = fill(kept, DOCS, [0.0, 0.0, 0.0], count_tokens(BIRTH))
    assert taken == {1} and [s["text"] for s in knowledge] == [BIRTH]


def _run(make_context, *replies, rules=None, **settings):
    chat = fake_chat(*replies)
    base = {"rewrite": "keywords", "top_k_strips": 1, "further_strips": 0, "strip_set_weight": 0.0, **settings}
    ctx = dataclasses.replace(make_context(rules or {"painter": 0.9}, docs=DOCS, **base), chat_model=chat)
    return graph.invoke({"question": QUESTION}, context=ctx), chat.prompts


def test_a_budget_gives_the_reader_whole_documents_after_the_kept_strip(make_context):
    result, [prompt] = _run(make_context, "Anna Berg was born in Uppsala.", knowledge_tokens=1000)
    assert result["action"] == "correct"
    assert all(text in prompt for text in (PAINTER, BIRTH, HOUSE))
    assert result["answer"] == "Anna Berg was born in Uppsala." and result["grounded"] is True
    # without it, the one kept strip (the painter page's) is all the reader sees
    result, [prompt] = _run(make_context, "I don't know.", retry_prompt=None, quote_threshold=2.0)
    assert "Uppsala" not in prompt


def test_the_reader_picks_the_strips_that_answer(make_context, monkeypatch):
    monkeypatch.setattr(resources, "choose", lambda ctx, question, passages: [0.05, 0.9, 0.05][: len(passages)])
    result, [prompt] = _run(make_context, "Anna Berg was born in Uppsala.", choose_strips=3, refine_mode="selection")
    assert [s["text"] for s in result["internal_knowledge"]] == [BIRTH]
    assert "Uppsala" in prompt and "Stockholm" not in prompt


def test_when_the_reader_cannot_tell_every_candidate_is_kept(make_context, monkeypatch):
    # equal shares: a provider that named no passage, or a local model whose first token is none of the numbers
    monkeypatch.setattr(resources, "choose", lambda ctx, question, passages: [1 / len(passages)] * len(passages))
    result, _ = _run(make_context, "Anna Berg was born in Uppsala.", choose_strips=3, refine_mode="selection")
    assert len(result["internal_knowledge"]) == 3


@pytest.mark.parametrize(("verdict", "quoted"), [(0.8, True), (-0.6, False), (0.0, True)])
def test_a_quote_is_shown_only_when_the_reader_judges_it_answers(make_context, monkeypatch, verdict, quoted):
    monkeypatch.setattr(resources, "answers", lambda ctx, question, passage: verdict)
    result, _ = _run(make_context, "I don't know.", retry_prompt=None, quote_threshold=-1.0, judge_quotes=True)
    assert result["quoted"] is quoted
    assert (result["answer"] == QUOTE_ANSWER.format(quote=PAINTER)) is quoted
