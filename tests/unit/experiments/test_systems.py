"""Each system and ablation takes the route and builds the knowledge it is meant to (on fakes)."""

from __future__ import annotations

import dataclasses

import pytest
from langchain_core.runnables import RunnableLambda

from crag.evaluation.pipelines import run_question
from crag.evaluation.systems import SYSTEMS, parse_systems, system_context
from crag.thresholds import Thresholds
from tests.fakes import CritiquingChat, ProbableChat, said

ANNA = "What is Anna Berg's occupation?"
CALIBRATED = Thresholds(upper=0.5, lower=-0.5)  # the fake evaluator's (upper, lower)


def answer(name, ctx, question=ANNA):
    system = SYSTEMS[name]
    return run_question(system.pipeline, system_context(system, ctx, CALIBRATED), question)


def test_parse_systems_keeps_order_and_lists_valid_names_on_error():
    assert [s.name for s in parse_systems("crag, rag,crag")] == ["crag", "rag"]
    with pytest.raises(ValueError, match="unknown system.*crag_fast.*choose from no_retrieval, rag, rag_web, crag"):
        parse_systems("rag,crag_fast")
    with pytest.raises(ValueError, match="no systems"):
        parse_systems(" , ")


def test_rag_gives_every_document_whole_and_never_calls_the_evaluator(make_context):
    ctx = make_context()
    out = answer("rag", ctx)
    assert (
        out["knowledge"]
        == "Anna Berg: Anna Berg was a Swedish painter. She painted the sea. Her works hang in Stockholm.\n\n"
        "Oslo: Oslo is the capital of Norway. It lies at the head of a fjord and has many museums."
    )
    assert out["evaluator_calls"] == 0 and ctx.evaluator.calls == [] and ctx.web_backend.queries == []
    assert out.get("action") is None and set(out["latency"]) == {"retrieve", "generate"}


def test_rag_web_adds_the_web_results_for_the_question_itself(make_context):
    ctx = make_context()
    out = answer("rag_web", ctx)
    assert ctx.web_backend.queries == [ANNA] and out["evaluator_calls"] == 0
    assert "\n\nCarl Dahl: Carl Dahl is a footballer" in out["knowledge"]  # the web paragraph keeps its one title
    assert out["knowledge"].startswith("Anna Berg: Anna Berg was")
    assert set(out["latency"]) == {"retrieve", "search", "generate"}


def test_no_retrieval_uses_no_knowledge(make_context):
    def refuse(question):
        raise AssertionError("no_retrieval must not retrieve")

    ctx = make_context(retriever=RunnableLambda(refuse))
    out = answer("no_retrieval", ctx)
    assert out["knowledge"] == "" and out["answer"] == "I do not know."
    assert ctx.chat_model.prompts == [f"Answer the question in one short sentence: {ANNA}"]


def test_crag_correct_refines_internal_knowledge_only(make_context):
    ctx = make_context({"painter": 0.9, "Oslo is": -0.9})
    out = answer("crag", ctx)
    assert out["action"] == "correct" and ctx.web_backend.queries == []
    assert "painter" in out["knowledge"] and "Oslo" not in out["knowledge"]
    assert out["evaluator_calls"] == 2 and out["evaluator_pairs"] == 4  # 2 documents graded, 2 strips refined
    assert {"retrieve", "grade", "refine", "generate"} <= set(out["latency"]) and "search" not in out["latency"]
    assert out["answer"].startswith("Anna Berg was a Swedish painter")


def test_no_correct_turns_correct_into_ambiguous(make_context):
    rules = {"painter": 0.9, "Oslo is": -0.2, "footballer": 0.8}
    assert answer("crag", make_context(rules))["action"] == "correct"
    out = answer("crag_no_correct", make_context(rules))
    assert out["action"] == "ambiguous"
    assert "painter" in out["knowledge"] and "footballer" in out["knowledge"]


def test_no_incorrect_turns_incorrect_into_ambiguous(make_context):
    rules = {"painter": -0.9, "Oslo is": -0.9, "footballer": 0.8}
    assert answer("crag", make_context(rules))["action"] == "incorrect"
    assert answer("crag_no_incorrect", make_context(rules))["action"] == "ambiguous"


@pytest.mark.parametrize("score, action", [(0.1, "correct"), (-0.1, "incorrect")])
def test_no_ambiguous_has_one_threshold_in_the_middle(make_context, score, action):
    rules = {"painter": score, "Oslo is": -0.9, "footballer": 0.8}
    assert answer("crag", make_context(rules))["action"] == "ambiguous"
    assert answer("crag_no_ambiguous", make_context(rules))["action"] == action


def test_no_refine_gives_whole_documents_even_irrelevant_ones(make_context):
    rules = {"painter": 0.9, "Oslo is": -0.9}
    refined = answer("crag", make_context(rules))["knowledge"]
    whole = answer("crag_no_refine", make_context(rules))["knowledge"]
    assert "Oslo" not in refined
    assert "Oslo is the capital of Norway. It lies at the head of a fjord and has many museums." in whole


def test_no_selection_keeps_every_strip(make_context):
    rules = {"painter": 0.9, "Oslo is": -0.9}
    selected = answer("crag", make_context(rules, top_k_strips=1))["knowledge"]
    everything = answer("crag_no_selection", make_context(rules, top_k_strips=1))["knowledge"]
    assert selected.count("\n\n") == 0 and "Oslo" not in selected
    assert everything.count("\n\n") == 1 and "Oslo" in everything


def test_the_three_ways_of_making_the_web_query(make_context):
    rules = {"painter": -0.9, "Oslo is": -0.9, "footballer": 0.8}
    ctx = make_context(rules)
    out = answer("crag", ctx)  # the default: the question's own keywords, no model call
    assert ctx.web_backend.queries == ["Anna Berg, occupation"] and "rewrite" not in out["latency"]
    ctx = make_context(rules)
    out = answer("crag_model_rewrite", ctx)  # the echoing chat model's keywords
    assert ctx.web_backend.queries == ["Anna, Berg"] and out["latency"]["rewrite"] >= 0
    ctx = make_context(rules)
    out = answer("crag_no_rewrite", ctx)
    assert ctx.web_backend.queries == [ANNA] and out["rewritten_query"] == ANNA
    assert "rewrite" not in out["latency"] and out["latency"]["search"] >= 0


@pytest.mark.parametrize(
    "scores", [{"painter": 0.9, "Oslo is": 0.9}, {"painter": -0.9, "Oslo is": -0.9}, {"painter": 0.0, "Oslo is": 0.0}]
)
def test_routes_are_forced_whatever_the_scores(make_context, scores):
    for action in ("correct", "incorrect", "ambiguous"):
        assert answer(f"route_{action}", make_context(scores))["action"] == action


def test_ambiguous_times_both_branches_and_the_rewrite(make_context):
    out = answer("crag_model_rewrite", make_context({"painter": 0.0, "Oslo is": -0.9, "footballer": 0.8}))
    assert out["action"] == "ambiguous"
    assert {"retrieve", "grade", "refine", "search", "rewrite", "generate"} <= set(out["latency"])
    assert out["latency"]["rewrite"] <= out["latency"]["search"] <= out["wall_s"]


@pytest.mark.parametrize(
    "name, prompt",
    [
        ("rag_paper_prompt", "paper"),
        ("rag_compact_prompt", "compact"),
        ("crag_paper_prompt", "paper"),
        ("crag_compact_prompt", "compact"),
    ],
)
def test_prompt_variants_change_only_the_generation_prompt(make_context, name, prompt):
    base = make_context()
    ctx = system_context(SYSTEMS[name], base, CALIBRATED)
    assert ctx.generate_prompt == prompt
    assert ctx == dataclasses.replace(base, generate_prompt=prompt)


def test_the_self_rag_systems_run_through_the_harness(make_context):
    """Each through `run_question`, as `crag eval run` runs it: the reader's critiques graded as a grade is, its
    candidates timed as generation; only Self-CRAG and the evaluator-critic variant call the evaluator."""
    chat = CritiquingChat()
    out = answer("self_rag", make_context(chat=chat))
    assert out["evaluator_calls"] == 0 and len(out["candidates"]) == 2 and out["retrieve_probability"] == 1.0
    assert {"retrieve", "grade", "generate"} == set(out["latency"]) and out["llm"]["calls"] == 2 + 7
    out = answer("self_crag", make_context(chat=CritiquingChat()))
    assert out["action"] == "correct" and out["evaluator_calls"] >= 2 and out["answer"].startswith("Anna Berg")
    chat = CritiquingChat()
    out = answer("self_rag_evaluator_critics", make_context(chat=chat))
    assert out["evaluator_calls"] == out["evaluator_pairs"] == 2 and chat.asked == [] and out["llm"]["calls"] == 2


@pytest.mark.parametrize("name", ["flare", "flare_questions", "flare_plain", "flare_previous"])
def test_the_flare_systems_run_through_the_harness(make_context, name):
    """Each through `run_question`, as `crag eval run --systems` runs it: the question's search finds the painter
    passage, which the answer is written over; all but the paper's plain FLARE grade with the evaluator."""
    chat = ProbableChat(
        answer=[said("Anna Berg was a sculptor.", unsure={"sculptor.": 0.1})],
        informed=[said("Anna Berg was a painter.", prob=0.99)],
    )
    out = answer(name, make_context(chat=chat))
    assert out["answer"] == "Anna Berg was a painter." and out["grounded"]
    assert (out["evaluator_calls"] > 0) == (name != "flare_plain")
    assert {"retrieve", "generate"} <= set(out["latency"]) and out["sentences"][0]["retrievals"]
    # the searches' steps inside their branches are timed as CRAG's are
    assert ("grade" in out["latency"]) == (name != "flare_plain") and "refine" in out["latency"]


def test_a_stage_s_runs_side_by_side_count_their_wall_time_once(monkeypatch):
    from uuid import uuid4

    from crag.evaluation import pipelines

    now = [0.0]
    monkeypatch.setattr(pipelines.time, "perf_counter", lambda: now[0])
    timer = pipelines.StageTimer()
    a, b, c = uuid4(), uuid4(), uuid4()
    node = {"name": "candidate", "metadata": {"langgraph_node": "candidate"}}
    for at, run, event in [
        (0, a, "start"),
        (1, b, "start"),
        (3, a, "end"),
        (4, b, "end"),
        (10, c, "start"),
        (11, c, "end"),
    ]:
        now[0] = at
        if event == "start":
            timer.on_chain_start({}, {}, run_id=run, **node)
        else:
            timer.on_chain_end({}, run_id=run)
    assert timer.seconds == {"generate": 4.0 + 1.0}  # not 3 + 3 + 1: two candidates ran side by side
