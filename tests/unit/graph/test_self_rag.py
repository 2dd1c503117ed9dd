"""Self-RAG, Self-CRAG and Self-RAG with CRAG's critics as graphs beside CRAG (crag/graphs/self_rag.py,
self_crag.py, self_rag_evaluator.py): retrieval on demand, a candidate per passage, the critiques' segment
score choosing the answer, Self-CRAG over CRAG's kept strips, and routing that only reads the state."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver

from crag import resources
from crag.answers.critiques import best, relevance_of, segment_score, support_of
from crag.evaluation.systems import parse_systems
from crag.graphs import BUILDERS, build, compiled
from crag.graphs.self_rag import fan_out
from crag.nodes.candidate import branches, knowledge_sets
from crag.nodes.on_demand import after_decision
from crag.passages import passage
from crag.state import add_candidates
from tests.fakes import ANSWER, DOCS, CritiquingChat, ScriptedChat, fake_context

QUESTION = "What is Anna Berg's occupation?"
FIRST_SENTENCES = ["Anna Berg was a Swedish painter.", "Carl Dahl is a footballer from Oslo."]


def ask(system: str, ctx, question: str = QUESTION) -> dict:
    return compiled(system).invoke({"question": question}, context=ctx)


def test_the_reader_judges_documents_a_help_and_they_are_retrieved():
    ctx = fake_context(chat_model=CritiquingChat())
    out = ask("self_rag", ctx)
    assert out["retrieve_probability"] == 1.0 and len(out["documents"]) == 2
    assert ctx.chat_model.asked[0] == "retrieve" and out["answer"] == FIRST_SENTENCES[0] and out["grounded"]


def test_judged_no_help_the_model_answers_from_memory_ungrounded():
    def refuse(question):
        raise AssertionError("no retrieval was judged needed")

    ctx = fake_context(chat_model=CritiquingChat(retrieve="no"), retriever=RunnableLambda(refuse))
    out = ask("self_rag", ctx)
    assert out["retrieve_probability"] == 0.0 and out["documents"] == [] and out["candidates"] == []
    assert out["answer"] == ANSWER and out["replaced"] is None  # stands, though nothing supports it
    assert not out["grounded"] and out["given"] == [] and out["sources"] == []
    assert ctx.chat_model.asked == ["retrieve"]


def test_a_threshold_of_zero_always_retrieves_without_asking():
    ctx = fake_context(chat_model=CritiquingChat(retrieve="no"), self_rag_retrieve_threshold=0.0)
    out = ask("self_rag", ctx)
    assert out["retrieve_probability"] is None and len(out["candidates"]) == 2
    assert "retrieve" not in ctx.chat_model.asked


def test_one_candidate_per_passage_each_written_over_its_passage_alone():
    ctx = fake_context(chat_model=CritiquingChat())
    out = ask("self_rag", ctx)
    candidates = out["candidates"]
    assert [c["n"] for c in candidates] == [1, 2]
    assert [[s["text"] for s in c["strips"]] for c in candidates] == [[d.page_content] for d in DOCS]
    assert [c["draft"] for c in candidates] == FIRST_SENTENCES
    assert ctx.chat_model.asked[1:] == ["isrel", "issup", "isuse"] * 2 or sorted(ctx.chat_model.asked[1:]) == sorted(
        ["isrel", "issup", "isuse"] * 2
    )  # the branches run side by side: their critiques may interleave


def test_the_segment_score_is_self_rag_s():
    # run_short_form.py: w_rel*P(rel) + w_sup*(P(full) + 0.5 P(partial)) + w_use*sum(u_i P(i)), u = -1 … 1
    assert segment_score(0.6, [0.2, 0.5, 0.3], [0.1, 0.1, 0.2, 0.3, 0.3]) == pytest.approx(
        1.0 * 0.6 + 1.0 * (0.2 + 0.5 * 0.5) + 0.5 * (-1 * 0.1 - 0.5 * 0.1 + 0 * 0.2 + 0.5 * 0.3 + 1 * 0.3)
    )
    assert segment_score(0.5, [], []) == 0.5  # critiques not read count 0, as in their code
    assert best([{"n": 1, "score": 1.0}, {"n": 2, "score": 1.0}])["n"] == 1  # a tie: the earlier passage


def test_the_best_scoring_candidate_answers_though_another_passage_is_more_relevant(monkeypatch):
    said = {  # by passage: (ISREL, ISSUP, ISUSE) probabilities
        "Anna Berg": ([0.6, 0.4], [0.2, 0.5, 0.3], [0.1, 0.1, 0.2, 0.3, 0.3]),  # 0.6 + 0.45 + 0.5 * 0.30 = 1.2
        "Carl Dahl": ([0.9, 0.1], [0.1, 0.2, 0.7], [0.5, 0.2, 0.1, 0.1, 0.1]),  # 0.9 + 0.20 - 0.5 * 0.45 = 0.875
    }

    def critique(ctx, kinds, question, passage=None, answer=None):
        rel, sup, use = next(v for name, v in said.items() if name in passage)
        return {"isrel": rel, "issup": sup, "isuse": use}

    monkeypatch.setattr(resources, "critique", critique)
    out = ask("self_rag", fake_context(chat_model=CritiquingChat(), self_rag_retrieve_threshold=0.0))
    assert [c["score"] for c in out["candidates"]] == [pytest.approx(1.2), pytest.approx(0.875)]
    assert [c["relevant"] for c in out["candidates"]] == [0.6, 0.9]
    assert out["answer"] == FIRST_SENTENCES[0] and out["given"] == out["candidates"][0]["strips"]
    assert [s["id"] for s in out["sources"]] == [1] and out["knowledge"].startswith("Anna Berg: Anna Berg was")


LONGER = [  # refinement cuts the first into two strips of three sentences and keeps the one naming the painter
    passage(
        "Anna Berg was born in Uppsala. She studied in Paris. She had two brothers. "
        "Anna Berg was a Swedish painter. She painted the sea. Her works hang in Stockholm.",
        title="Anna Berg",
        source="kb/anna.txt",
    ),
    DOCS[1],
]


def test_self_crag_writes_a_candidate_over_each_of_crag_s_knowledge_sets_whatever_the_action():
    """As the CRAG authors built it: your documents' kept strips, the web's, and both, each one passage."""
    chat = CritiquingChat(relevant=("painter",))
    ctx = fake_context(chat_model=chat, retriever=RunnableLambda(lambda q: list(LONGER)))
    out = ask("self_crag", ctx)
    assert (
        out["action"] == "correct" and len(out["documents"]) == 2
    )  # graded Correct, and the web searched all the same
    internal, external = out["internal_knowledge"], out["external_knowledge"]
    assert internal and external and [s["origin"] for s in external] == ["external"] * len(external)
    assert [c["strips"] for c in out["candidates"]] == [internal, external, internal + external]
    assert [s["text"] for s in internal] == [
        "Anna Berg was born in Uppsala. She studied in Paris. She had two brothers.",
        "Anna Berg was a Swedish painter. She painted the sea. Her works hang in Stockholm.",
    ]  # the first document cut in two, the second (rejected by the evaluator) not kept
    chosen = max(out["candidates"], key=lambda c: c["score"])
    assert out["given"] == chosen["strips"] and out["answer"] == chosen["answer"]


def test_self_crag_without_a_web_reads_its_documents_strips_alone():
    out = ask("self_crag", fake_context(chat_model=CritiquingChat(), web_backend="none"))
    assert [c["strips"] for c in out["candidates"]] == [out["internal_knowledge"]]  # one set: no copies of it


def test_self_crag_judged_no_help_never_grades():
    ctx = fake_context(chat_model=CritiquingChat(retrieve="no"))
    out = ask("self_crag", ctx)
    assert out["answer"] == ANSWER and out.get("action") is None and ctx.evaluator.calls == []


def test_the_evaluator_critics_ask_the_reader_no_critique():
    chat = CritiquingChat(structured=True)
    ctx = fake_context(chat_model=chat)
    out = ask("self_rag_evaluator_critics", ctx)
    assert chat.asked == [] and chat.structured_calls == 0  # not even whether to retrieve
    assert sorted(chat.written) == FIRST_SENTENCES  # one answer per document: the reader only writes
    assert sorted(ctx.evaluator.calls) == sorted([[d.page_content] for d in DOCS])  # ISREL: one passage a call
    first, second = out["candidates"]
    assert first["relevant"] == pytest.approx(relevance_of(0.9)) and first["support"] == [1.0, 0.0, 0.0]
    assert second["relevant"] == pytest.approx(relevance_of(-0.9)) and second["support"] == [0.0, 0.0, 1.0]
    assert first["usefulness"] == second["usefulness"] == []
    assert first["score"] == pytest.approx(0.95 + 1.0) and out["answer"] == FIRST_SENTENCES[0]


def test_the_grounding_check_as_issup():
    whole, some, none = ([{"sources": [1]}], [{"sources": [1]}, {"sources": []}], [{"sources": []}])
    assert support_of(whole) == [1.0, 0.0, 0.0] and support_of(some) == [0.0, 1.0, 0.0]
    assert support_of(none) == support_of([]) == [0.0, 0.0, 1.0]


def test_a_provider_with_structured_output_critiques_through_it():
    chat = CritiquingChat(structured=True)
    out = ask("self_rag", fake_context(chat_model=chat))
    assert chat.structured_calls == 1 + 3 * 2 and out["answer"] == FIRST_SENTENCES[0]


def test_nothing_retrieved_says_so_without_a_candidate():
    ctx = fake_context(chat_model=CritiquingChat(), retriever=RunnableLambda(lambda q: []))
    out = ask("self_rag", ctx)
    assert out["candidates"] == [] and out["given"] == [] and out["answer"].startswith("I don't know")


def test_a_new_turn_on_a_thread_starts_its_candidates_afresh():
    graph = build("self_rag").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    ctx = fake_context(chat_model=CritiquingChat())
    graph.invoke({"question": QUESTION}, context=ctx, config=config)
    ctx = fake_context(chat_model=CritiquingChat(), retriever=RunnableLambda(lambda q: [DOCS[1]]))
    out = graph.invoke({"question": "What does Carl Dahl play?"}, context=ctx, config=config)
    assert [c["strips"][0]["text"] for c in out["candidates"]] == [DOCS[1].page_content]


def test_candidates_keep_the_passage_order_whichever_branch_finishes_first():
    two, one = {"n": 2}, {"n": 1}
    assert add_candidates(add_candidates([], [two]), [one]) == [one, two]
    assert add_candidates([one, two], []) == [] and add_candidates([one], None) == [one]


def test_every_self_rag_system_is_a_graph_and_an_evaluation_system():
    names = ["self_rag", "self_crag", "self_rag_evaluator_critics"]
    assert set(names) <= set(BUILDERS)
    assert [s.pipeline for s in parse_systems("rag,crag," + ",".join(names))][2:] == names
    assert {"decide_retrieval", "candidate", "select", "quote", "finish"} <= set(compiled("self_rag").get_graph().nodes)
    assert {"grade", "refine", "passages", "candidate"} <= set(compiled("self_crag").get_graph().nodes)
    assert "decide_retrieval" not in compiled("self_rag_evaluator_critics").get_graph().nodes


def test_an_answer_without_a_grade_prints(capsys):
    from crag.cli.render import print_run

    print_run(ask("self_rag", fake_context(chat_model=CritiquingChat())))
    out = capsys.readouterr().out
    assert "documents would help: P(yes) 1.00" in out and "action:" not in out
    assert " *[1] +2.50  rel 1.00  sup 1.00/0.00/0.00  use 5.0  Anna Berg was a Swedish painter." in out


STRIP = st.fixed_dictionaries(
    {"text": st.text(max_size=20), "title": st.text(max_size=5), "origin": st.sampled_from(["internal", "external"])}
)
STATES = st.fixed_dictionaries(
    {
        "question": st.text(max_size=20),
        "action": st.sampled_from([None, "correct", "incorrect", "ambiguous"]),
        "internal_knowledge": st.lists(STRIP, max_size=3),
        "external_knowledge": st.lists(STRIP, max_size=3),
        "retrieve_probability": st.none() | st.floats(0, 1),
    }
)


class Runtime:
    def __init__(self, ctx):
        self.context = ctx


@given(STATES, st.floats(0, 1))
def test_routing_only_reads_the_state_and_the_context(state, threshold):
    ctx = fake_context(chat_model=ScriptedChat(), self_rag_retrieve_threshold=threshold)
    before = copy.deepcopy(state)
    for passages in (branches, knowledge_sets):
        assert fan_out(passages)(state) == fan_out(passages)(state) and state == before
        sent = fan_out(passages)(state)
        assert sent == ["no passages"] or [s.arg["n"] for s in sent] == list(range(1, len(sent) + 1))
    assert after_decision(state, Runtime(ctx)) == after_decision(state, Runtime(ctx)) and state == before
