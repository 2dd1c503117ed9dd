"""The tutorial's CRAG as a baseline graph (crag/graphs/tutorial.py): the chat model grades each document,
any "no" sends the model's rewrite of the question to the web, knowledge whole, no evaluator."""

from __future__ import annotations

from crag.graphs import BUILDERS, compiled
from crag.models.judge import relevance
from tests.fakes import ANSWER, DOCS, FakeWeb, GradingChat, fake_context

QUESTION = "What is Anna Berg's occupation?"


def ask(ctx):
    return compiled("tutorial_crag").invoke({"question": QUESTION}, context=ctx)


def test_all_relevant_answers_from_the_documents_without_the_web():
    ctx = fake_context(chat_model=GradingChat(relevant=("Anna Berg", "Carl Dahl")))
    out = ask(ctx)
    assert out["action"] == "correct" and out["labels"] == ["correct", "correct"] and out["scores"] == [1.0, 1.0]
    assert ctx.web_backend.queries == [] and ctx.evaluator.calls == []  # no evaluator at all
    assert [s["text"] for s in out["internal_knowledge"]] == [d.page_content for d in DOCS]  # whole, no refinement
    assert out["answer"] == ANSWER


def test_any_irrelevant_document_sends_the_model_s_rewrite_to_the_web():
    ctx = fake_context(chat_model=GradingChat())
    out = ask(ctx)
    assert out["action"] == "ambiguous" and out["labels"] == ["correct", "incorrect"]
    assert out["rewritten_query"] == "Anna Berg, occupation" and ctx.web_backend.queries == ["Anna Berg, occupation"]
    assert [s["doc"] for s in out["internal_knowledge"]] == [0]  # the relevant document, at its rank
    assert [s["origin"] for s in out["given"]] == ["internal", "external"] and out["web_status"] == "searched"
    assert "judged 1 of 2 documents relevant" in out["reason"]


def test_nothing_relevant_and_no_web_declines():
    ctx = fake_context(chat_model=GradingChat(relevant=("Nobody",)), web_backend="none")
    out = ask(ctx)
    assert out["action"] == "incorrect" and out["internal_knowledge"] == [] and out.get("rewritten_query", "") == ""
    assert out["given"] == [] and out["answer"] != ANSWER


def test_a_failing_web_search_is_reported_not_raised():
    ctx = fake_context(chat_model=GradingChat(), web_backend=FakeWeb(error=OSError("web down")))
    out = ask(ctx)
    assert out["web_status"] == "failed" and "web down" in out["web_error"] and out["answer"] == ANSWER


def test_a_provider_with_structured_output_grades_through_it():
    model = GradingChat(structured=True)
    assert relevance(model, QUESTION, DOCS[0].page_content) == 1.0
    assert relevance(model, QUESTION, DOCS[1].page_content) == -1.0
    assert model.structured_calls == 2
    assert relevance(GradingChat(), QUESTION, DOCS[0].page_content) == 1.0  # without it, the reply's first word


def test_every_system_has_a_graph_with_its_steps():
    assert {"crag", "rag", "tutorial_crag"} <= set(BUILDERS)
    nodes = set(compiled("tutorial_crag").get_graph().nodes)
    assert {"grade_documents", "transform_query", "web_search", "generate", "quote", "finish"} <= nodes
