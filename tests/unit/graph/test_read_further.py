"""Reading further: when the model says it does not know over the kept strips, it is shown the next ones once."""

from __future__ import annotations

import dataclasses

import pytest
from langchain_core.documents import Document

from crag.evaluation.systems import NEVER
from crag.graphs.crag import graph
from crag.knowledge.refinement import refine, refine_pages
from crag.prompts import QUOTE_ANSWER
from crag.settings import Context
from tests.fakes import FakeEvaluator, FakeWeb, fake_chat

QUESTION = "Where was Anna Berg born?"
PAINTER = "Anna Berg was a Swedish painter. She painted the sea. Her works hang in Stockholm."
BIRTH = "Anna Berg was born in Uppsala in 1891. She studied in Paris."
# the painter page is graded relevant (Correct) and its strip kept; the page that answers is graded
# irrelevant, so its one strip is only the next of refinement's ranking
DOCS = [
    Document(page_content=PAINTER, metadata={"title": "Anna Berg", "source": "kb/painter.txt"}),
    Document(page_content=BIRTH, metadata={"title": "Anna Berg", "source": "kb/birth.txt"}),
]


def asked(make_context, *replies, docs=DOCS, **kw):
    """The final state and the answer prompts sent, for a model that gives `replies` in turn."""
    chat = fake_chat(*replies)
    settings = {"rewrite": "keywords", "top_k_strips": 1, "further_strips": 1, **kw}
    ctx = dataclasses.replace(make_context({"painter": 0.9}, docs=docs, **settings), chat_model=chat)
    return graph.invoke({"question": QUESTION}, context=ctx), chat.prompts


def test_a_decline_over_the_kept_strips_reads_the_next_ones_and_that_answer_stands(make_context):
    result, prompts = asked(make_context, "I don't know.", "Anna Berg was born in Uppsala.")
    assert len(prompts) == 2
    assert "painter" in prompts[0] and "Uppsala" not in prompts[0]
    assert "Uppsala" in prompts[1] and "painter" not in prompts[1]  # the further strips alone
    assert result["answer"] == "Anna Berg was born in Uppsala." and result["grounded"] is True
    assert result["read_further"] is True and result["first_draft"] == "I don't know."
    assert result["further_draft"] == result["draft"] == "Anna Berg was born in Uppsala."
    assert result["quoted"] is False and result["asked_again"] is False and result["replaced"] is None
    # numbered after the kept strip, as the knowledge holds them: the citation points at the birth page
    assert [s["text"] for s in result["further_knowledge"]] == [BIRTH]
    assert result["citations"][0]["sources"] == [2]
    [source] = result["sources"]
    assert source["id"] == 2 and source["source"] == "kb/birth.txt" and source["doc"] == 1
    assert result["knowledge"].index("painter") < result["knowledge"].index("Uppsala")


def test_a_further_answer_that_does_not_stand_leaves_the_first_path(make_context):
    # declined again over the further strips: the kept strip is quoted, as without reading further
    result, prompts = asked(make_context, "I don't know.", "I don't know.")
    assert len(prompts) == 2 and result["read_further"] is False and result["further_draft"] == "I don't know."
    assert result["quoted"] is True and result["answer"] == QUOTE_ANSWER.format(quote=PAINTER)
    assert result["sources"][0]["source"] == "kb/painter.txt"  # numbered among the kept strips only
    # unsupported over the further strips: withheld there, so the first path goes on to its second ask
    result, prompts = asked(
        make_context, "I don't know.", "She was born on the Moon.", "I don't know.", quote_threshold=NEVER
    )
    assert len(prompts) == 3 and prompts[2].startswith("Refer to the")  # the paper prompt, over the kept strip
    assert "painter" in prompts[2] and "Uppsala" not in prompts[2]
    assert (
        result["read_further"] is False and result["asked_again"] is True and result["first_draft"] == "I don't know."
    )
    assert result["further_draft"] == "She was born on the Moon."


@pytest.mark.parametrize(
    "replies, settings",
    [
        (["Anna Berg was a Swedish painter."], {}),  # the first answer is not a decline
        (["She was an astronaut."], {}),  # withheld, not declined: the model did not say it does not know
        (["I don't know."], {"further_strips": 0}),  # switched off
    ],
)
def test_the_next_strips_are_read_only_after_the_models_own_decline(make_context, replies, settings):
    result, prompts = asked(make_context, *replies, **settings)
    assert len(prompts) == 1 and result["read_further"] is False and result["further_draft"] == ""


def test_incorrect_never_reads_the_retrieved_documents_further(make_context):
    web = FakeWeb(
        [Document(page_content="Anna Berg was a Swedish painter of the sea.", metadata={"title": "Anna Berg"})]
    )
    chat = fake_chat("I don't know.")
    ctx = dataclasses.replace(
        make_context({}, web=web, docs=DOCS, rewrite="keywords", top_k_strips=1, quote_threshold=NEVER), chat_model=chat
    )
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["action"] == "incorrect" and result["further_knowledge"] == []
    assert result["read_further"] is False and "Uppsala" not in "".join(chat.prompts)


def test_refine_pages_gives_the_next_strips_in_document_order_without_the_threshold():
    passages = [
        Document(page_content=f"Strip {w} is here. It has words. And more words.", metadata={"title": w})
        for w in ("alpha", "beta", "gamma", "delta")
    ]
    scorer = FakeEvaluator({"alpha": 0.9, "gamma": 0.8, "delta": 0.7, "beta": -0.95})
    settings = {"mode": "excerption", "top_k": 2, "threshold": -0.5, "origin": "internal"}
    kept, further = refine_pages("which strip?", passages, scorer, further=2, **settings)
    assert [s["title"] for s in kept] == ["alpha", "gamma"]
    assert [s["title"] for s in further] == ["beta", "delta"]  # in document order; beta under the threshold
    assert refine("which strip?", passages, scorer, **settings) == kept
    assert refine_pages("which strip?", passages, scorer, **settings)[1] == []  # none asked for


def test_further_strips_must_not_be_negative():
    with pytest.raises(ValueError, match="further_strips must be at least 0"):
        Context(further_strips=-1)


def test_the_plain_and_json_views_say_the_model_read_further(make_context, capsys):
    from crag.cli.render import print_run, summary

    result, _ = asked(make_context, "I don't know.", "Anna Berg was born in Uppsala.")
    print_run(result)
    out = capsys.readouterr().out
    assert 'read further: over the kept strips the model said "I don\'t know."' in out
    assert "kb/birth.txt" in out  # the source the answer rests on
    shown = summary(result)
    assert shown["read_further"] is True and shown["further_draft"] == "Anna Berg was born in Uppsala."
    assert [s["text"] for s in shown["further_knowledge"]] == [BIRTH]
