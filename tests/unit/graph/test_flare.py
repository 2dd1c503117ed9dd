"""FLARE as a graph beside CRAG (crag/graphs/flare.py, crag/nodes/flare*.py): the look-ahead's trigger (a token
below θ), its masked query (tokens below β left out) and generated questions, the loop's end, CRAG's correction
of each search, the previous-sentence baseline, and token probabilities read from a provider's log-probabilities."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from crag.answers.lookahead import masked, sentence_end, unsure, unsure_terms
from crag.evaluation.systems import SYSTEMS, parse_systems
from crag.graphs import BUILDERS, compiled
from crag.models.token_probs import ended, from_logprobs, with_probabilities
from crag.records import Token
from tests.fakes import DOCS, FakeWeb, ProbableChat, fake_context, said

QUESTION = "Tell me about Anna Berg."
ANNA, CARL = DOCS
DRAFT = "Anna Berg was a Danish sculptor."  # what the model writes from memory, unsure of two words
FIXED = "Anna Berg was a Swedish painter."  # what it writes over a passage that says so
SECOND = "She painted the sea."


def chat(**kw) -> ProbableChat:
    """Unsure of "Danish" (0.2) and "sculptor." (0.1) from memory; sure of everything over the painter passage."""
    return ProbableChat(
        answer=[said(DRAFT, unsure={"Danish": 0.2, "sculptor.": 0.1}), said(SECOND)],
        informed=[said(FIXED, prob=0.99), said(SECOND, prob=0.99)],
        **kw,
    )


def context(model=None, **settings):
    """The question's search finds only Carl Dahl (graded irrelevant, and no web): the first sentence is drafted
    from memory; any other search finds Anna Berg. `searched` keeps the queries."""
    searched: list[str] = []

    def search(query: str) -> list[Document]:
        searched.append(query)
        return [CARL] if query == QUESTION else [ANNA, CARL]

    ctx = fake_context(
        chat_model=model or chat(), retriever=RunnableLambda(search), web_backend="none", recheck_threshold=None
    )
    for name, value in settings.items():
        setattr(ctx, name, value)
    return ctx, searched


def ask(ctx) -> dict:
    return compiled("flare").invoke({"question": QUESTION}, context=ctx)


def test_an_unsure_token_sends_the_sentence_to_a_search_with_its_unsure_tokens_masked():
    ctx, searched = context()
    out = ask(ctx)
    first, second = out["sentences"]
    assert searched == [QUESTION, "Anna Berg was a"]  # "Danish" (0.2) and "sculptor." (0.1) are below β = 0.4
    assert first["lookahead"] == DRAFT and first["rewritten"] and first["sentence"] == FIXED
    assert [t["text"] for t in first["unsure"]] == [" Danish", " sculptor."] and first["confidence"] == pytest.approx(
        0.1
    )
    assert first["queries"] == [QUESTION, "Anna Berg was a"]
    # drafted over the painter passage the second sentence is sure: kept as written, no search
    assert second == {**second, "lookahead": SECOND, "sentence": SECOND, "rewritten": False, "queries": []}
    assert out["answer"] == f"{FIXED} {SECOND}" and out["grounded"]  # "Swedish painter" is in the passage
    assert [s["title"] for s in out["given"]] == ["Anna Berg"]  # Carl Dahl was graded out each time


def test_below_theta_only_a_search_is_made_and_sure_drafts_stand():
    ctx, searched = context(flare_threshold=0.05)  # no token is that unsure
    out = ask(ctx)
    assert searched == [QUESTION] and out["answer"] == f"{DRAFT} {SECOND}"
    assert not any(s["rewritten"] for s in out["sentences"])
    assert not out["grounded"] and out["replaced"] is None  # written from memory, it stands ungrounded


def test_each_search_is_graded_and_refined_by_crags_evaluator():
    ctx, _ = context()
    out = ask(ctx)
    question_search, sentence_search = out["sentences"][0]["retrievals"]
    assert question_search == {
        "query": QUESTION,
        "documents": ["Carl Dahl"],
        "action": "incorrect",
        "scores": [-0.9],
        "kept": 0,  # Incorrect, and no web to search: nothing kept, the draft is written from memory
    }
    assert sentence_search["action"] == "correct" and sentence_search["scores"] == [0.9, -0.9]
    assert ctx.evaluator.calls[0] == [CARL.page_content]


def test_a_search_that_finds_nothing_relevant_goes_to_the_web_as_configured():
    ctx, _ = context()
    ctx.web_backend = FakeWeb([])  # configured, but it finds nothing
    ctx.rewrite = "off"
    ask(ctx)
    assert ctx.web_backend.queries[0] == QUESTION  # the question's search was Incorrect: the web, as CRAG does


def test_without_correction_the_documents_are_read_whole_as_the_paper_does():
    ctx, _ = context(flare_correct=False)
    updates = list(compiled("flare").stream({"question": QUESTION}, context=ctx, stream_mode="updates"))
    assert "search_whole" in {node for update in updates for node in update}
    assert "search" not in {node for update in updates for node in update}
    ctx, _ = context(flare_correct=False)
    out = ask(ctx)
    first = out["sentences"][0]
    assert [r["action"] for r in first["retrievals"]] == [None, None]
    assert ctx.evaluator.calls == []  # nothing graded
    assert "Carl Dahl is a footballer" in ctx.chat_model.prompts[0]  # the question's document, whole


def test_generated_questions_ask_about_the_unsure_terms():
    ctx, searched = context(flare_query="questions")
    out = ask(ctx)
    assert searched[1:] == ["Who or what is Danish sculptor?"]  # the two unsure words, 1 token apart: one term
    asked = [p for p in ctx.chat_model.prompts if "ask a question" in p]
    assert asked and asked[0].startswith(DRAFT)  # the answer so far and the draft before the ask
    assert out["sentences"][0]["sentence"] == FIXED


def test_previous_sentence_retrieval_searches_before_every_sentence_and_never_rewrites():
    ctx, searched = context(flare_query="previous")
    out = ask(ctx)
    assert searched == [QUESTION, DRAFT]  # before the first: the question; before the second: the first
    assert [s["rewritten"] for s in out["sentences"]] == [False, False]
    assert out["sentences"][0]["sentence"] == DRAFT  # drafted from memory: the question's search found nothing


@pytest.mark.parametrize(
    ("settings", "count"),
    [({"flare_sentences": 2}, 2), ({"max_answer_tokens": 8}, 1), ({}, 3)],
    ids=["sentence cap", "token cap", "the reply's end"],
)
def test_the_answer_ends_at_its_caps_or_with_the_models_reply(settings, count):
    sentences = ["One two three four five six seven eight.", "Second one.", "Third one."]
    ctx, _ = context(ProbableChat(answer=[said(s) for s in sentences]), flare_threshold=0.05, **settings)
    out = ask(ctx)
    assert [s["sentence"] for s in out["sentences"]] == sentences[:count]
    assert out["sentences"][0]["tokens"] == 8


def test_a_repeated_sentence_ends_the_answer():
    looping = ProbableChat(answer=[said("It is blue."), said("It is blue."), said("It is blue."), said("Done.")])
    ctx, _ = context(looping, flare_threshold=0.05)
    out = ask(ctx)
    assert [s["sentence"] for s in out["sentences"]] == ["It is blue.", "It is blue."]
    assert out["answer"] == "It is blue. It is blue."


def test_the_answer_streams_a_sentence_at_a_time():
    ctx, _ = context()
    answers = [
        update["answer"]
        for chunk in compiled("flare").stream({"question": QUESTION}, context=ctx, stream_mode="updates")
        for node, update in chunk.items()
        if node in ("accept_sentence", "rewrite_sentence")
    ]
    assert answers == [FIXED, f"{FIXED} {SECOND}"]


def test_a_provider_without_log_probabilities_is_told_so():
    ctx, _ = context(chat(logprobs=False))
    with pytest.raises(ValueError, match="no token log-probabilities"):
        ask(ctx)


def test_a_providers_log_probabilities_become_token_probabilities_cut_at_the_sentence():
    model = chat()
    decoded = with_probabilities(model, [("human", "Tell me.")], cut=sentence_end)
    assert decoded.text == DRAFT and decoded.finish == "cut"
    assert [round(t["prob"], 6) for t in decoded.tokens] == [0.95, 0.95, 0.95, 0.95, 0.2, 0.1]
    whole = with_probabilities(model, [("human", "Tell me.")])
    assert whole.text == f"{DRAFT} {SECOND}" and whole.finish == "stop"
    going_on = with_probabilities(model, [("human", "Tell me.")], prefix=DRAFT, cut=sentence_end)
    assert going_on.text == SECOND and f"Your answer so far:\n{DRAFT}" in model.prompts[-1]


def test_log_probabilities_are_read_as_openai_reports_them():
    from langchain_core.messages import AIMessage

    message = AIMessage(
        content="Hi there",
        response_metadata={
            "logprobs": {"content": [{"token": "Hi", "logprob": 0.0}, {"token": " there", "logprob": -1.0}]}
        },
    )
    assert from_logprobs(message) == [Token(text="Hi", prob=1.0), Token(text=" there", prob=math.exp(-1.0))]


def test_the_masked_query_leaves_out_tokens_below_beta():
    tokens = [
        Token(text=t, prob=p) for t, p in [("Anna", 0.9), (" was", 0.5), (" born", 0.39), (" in", 0.4), (" 1890", 0.1)]
    ]
    assert masked(tokens, 0.4) == "Anna was in"
    assert masked(tokens, 0.0) == "Anna was born in 1890" and masked(tokens, 1.0) == ""
    assert [t["text"] for t in unsure(tokens, 0.45)] == [" born", " in", " 1890"]


def test_unsure_terms_are_whole_words_joined_when_close():
    tokens = [
        Token(text=t, prob=p)
        for t, p in [
            ("Ann", 0.9),
            ("a", 0.3),
            (" lived", 0.9),
            (" in", 0.9),
            (" Sto", 0.2),
            ("ckholm", 0.9),
            (".", 0.1),
        ]
    ]
    assert unsure_terms(tokens, 0.4) == ["Anna lived in Stockholm"]  # three unsure tokens within TERM_GAP: one term
    far = [Token(text=t, prob=p) for t, p in [("X", 0.1), *[(" a", 0.9)] * 5, (" Y.", 0.1)]]
    assert unsure_terms(far, 0.4) == ["X", "Y"]
    assert unsure_terms([Token(text=".", prob=0.1)], 0.4) == []  # punctuation alone is no term


@pytest.mark.parametrize(
    ("text", "end"),
    [
        ("Anna Berg was a painter.", None),  # it may go on: "… painter. Her …" or "… painter.com"
        ("Anna Berg was a painter. She", 24),
        (" Anna Berg was a painter. She", 25),
        ("Dr. Berg was a painter. She", 23),
        ("A list:\n- one", 7),
        ("No end yet", None),
    ],
)
def test_a_sentence_ends_once_the_next_begins(text, end):
    assert sentence_end(text) == end


def test_a_stop_string_ends_a_reply_before_its_cut():
    tokens = [Token(text=t, prob=1.0) for t in ["Paris", ". ", "Question", ":"]]
    decoded = ended("Paris. Question:", tokens, "length", stop=["Question:"], cut=sentence_end)
    assert (
        decoded.text == "Paris. "
        and decoded.finish == "stop"
        and "".join(t["text"] for t in decoded.tokens) == decoded.text
    )


def test_flare_is_a_system_the_harness_the_cli_and_studio_know():
    assert "flare" in BUILDERS
    assert [s.name for s in parse_systems("flare,flare_questions,flare_plain,flare_previous")] == [
        "flare",
        "flare_questions",
        "flare_plain",
        "flare_previous",
    ]
    assert SYSTEMS["flare_previous"].changes(None, 0.5, -0.5) == {"flare_query": "previous"}
    config = json.loads((Path(__file__).parents[3] / "langgraph.json").read_text())
    assert config["graphs"]["flare"] == "./crag/graphs/flare.py:flare"
    nodes = set(compiled("flare").get_graph().nodes)
    assert {"draft_sentence", "query", "search", "gather", "rewrite_sentence", "accept_sentence"} <= nodes


def test_each_search_is_drawn_as_crags_own_steps():
    nodes = set(compiled("flare").get_graph(xray=True).nodes)
    corrected = {"search:retrieve", "search:grade", "search:refine", "search:rewrite_and_search", "search:keep"}
    assert corrected <= nodes
    assert {"search_whole:retrieve", "search_whole:use_documents", "search_whole:keep"} <= nodes
    assert not {"search:second_opinion", "search:requery"} & nodes  # a chat-model call per search: left out
    assert {"second_opinion", "requery"} <= set(compiled("crag").get_graph().nodes)  # CRAG's own keeps them


FAR = "Anna Berg was a Danish artist who lived and worked in Oslo."  # two unsure words, far apart


def test_two_queries_are_two_graded_searches_run_as_graph_steps():
    model = ProbableChat(answer=[said(FAR, unsure={"Danish": 0.2, "Oslo.": 0.1})], informed=[said(FIXED, prob=0.99)])
    ctx, searched = context(model, flare_query="questions")
    steps = [
        (namespace[0].split(":")[0], node)
        for namespace, chunk in compiled("flare").stream(
            {"question": QUESTION}, context=ctx, stream_mode="updates", subgraphs=True
        )
        for node in chunk
        if namespace
    ]
    asked = ["Who or what is Danish?", "Who or what is Oslo?"]
    assert sorted(searched[1:]) == asked  # the two branches run in parallel: either may search first
    # the question's search (Incorrect, no web: nothing refined), then one per question, each graded and refined
    assert steps.count(("search", "grade")) == 3 and steps.count(("search", "refine")) == 2
    out = ask(context(model, flare_query="questions")[0])
    first = out["sentences"][0]
    assert [r["query"] for r in first["retrievals"]] == [QUESTION, *asked]  # in query order, whichever ended first
    assert [r["action"] for r in first["retrievals"]] == ["incorrect", "correct", "correct"]
    assert [s["title"] for s in out["given"]] == ["Anna Berg"]  # the same strip from both searches, given once


def test_the_stream_view_says_each_flare_step_in_a_line():
    from crag.cli.render import event_line

    ctx, _ = context()
    events = [e for _, e in compiled("flare").stream({"question": QUESTION}, context=ctx, stream_mode=["custom"])]
    lines = [event_line(e) for e in events]
    assert (
        "sentence 1 drafted (lowest p 0.10, unsure of 'Danish', 'sculptor.'): Anna Berg was a Danish sculptor." in lines
    )
    assert "searching with: Anna Berg was a" in lines and "kept 1 strip (CORRECT)" in lines
    assert f"sentence 1 written again: {FIXED}" in lines and f"sentence 2 kept: {SECOND}" in lines


def test_the_cli_stream_shows_the_steps_inside_each_search(capsys):
    from crag.cli.render import stream_run

    ctx, _ = context()
    state = stream_run(compiled("flare"), QUESTION, ctx, None)
    out = capsys.readouterr().out
    assert "· graded: INCORRECT (-0.90)" in out and "· graded: CORRECT (+0.90, -0.90)" in out  # the searches' grades
    assert state["answer"] == f"{FIXED} {SECOND}"


def test_a_follow_up_on_a_thread_starts_its_answer_afresh():
    from langgraph.checkpoint.memory import InMemorySaver

    from crag.graphs import build

    graph = build("flare").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    ctx, _ = context(flare_threshold=0.05)
    graph.invoke({"question": QUESTION}, config=config, context=ctx)
    out = graph.invoke({"question": "Tell me about Carl Dahl."}, config=config, context=ctx)
    assert out["answer"] == f"{FIXED} {SECOND}" and [s["n"] for s in out["sentences"]] == [1, 2]
    first_draft = next(p for p in ctx.chat_model.prompts if "Question: Tell me about Carl Dahl." in p)
    assert "Your answer so far" not in first_draft  # the new turn's first draft goes on from nothing


def test_searches_are_kept_in_query_order_until_gather_empties_them():
    from crag.state import Retrieval, Search, add_searches

    def search(n: int) -> Search:
        retrieval = Retrieval(query=f"q{n}", documents=[], action=None, scores=[], kept=0)
        return Search(n=n, retrieval=retrieval, documents=[], strips=[])

    assert add_searches(add_searches([], [search(1)]), [search(0)]) == [search(0), search(1)]  # the later first
    assert add_searches([search(0), search(1)], []) == [] and add_searches([search(0)], None) == [search(0)]
