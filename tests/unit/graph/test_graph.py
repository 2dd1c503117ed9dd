"""The compiled graph on fakes: each route, the parallel join, failures, bad input, threads."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from langchain_core.documents import Document
from langgraph.checkpoint.memory import InMemorySaver

from crag.evaluation.systems import NEVER
from crag.graphs.crag import build_graph, graph
from crag.prompts import LOOPING_ANSWER, NO_KNOWLEDGE_ANSWER, QUOTE_ANSWER, UNSUPPORTED_ANSWER
from crag.questions.checks import InvalidQuestion
from crag.settings import Context
from tests.fakes import DOCS, PASSED_OVER_DOCS, PASSED_OVER_RULES, WEB, FakeWeb, fake_chat

QUESTION = "What is Anna Berg's occupation?"
SNAPSHOT = Path(__file__).with_name("graph.mmd")


def run(context, question=QUESTION, g=graph, config=None):
    updates = list(g.stream({"question": question}, context=context, stream_mode="updates", config=config))
    nodes = [name for update in updates for name in update]
    final = g.get_state(config).values if config else None
    return nodes, updates, final


def test_mermaid_snapshot():
    assert graph.get_graph().draw_mermaid() == SNAPSHOT.read_text()


def test_correct_route_refines_internal_knowledge_only(make_context):
    ctx = make_context({"painter": 0.9}, "Anna Berg was a painter.")
    nodes, _, _ = run(ctx)
    assert nodes == ["contextualize", "retrieve", "grade", "refine", "generate", "finish"]
    result = graph.invoke({"question": QUESTION}, context=make_context({"painter": 0.9}, "She was a painter."))
    assert result["action"] == "correct" and result["labels"] == ["correct", "incorrect"]
    assert result["thresholds"] == {"upper": 0.5, "lower": -0.5} and "Correct" in result["reason"]
    assert result["answer"] == "She was a painter." and result["grounded"] is True
    assert result["citations"] == [{"sentence": "She was a painter.", "start": 0, "end": 18, "sources": [1]}]
    [source] = result["sources"]
    assert source["source"] == "kb/anna.txt" and source["id"] == 1 and source["doc"] == 0
    assert DOCS[0].page_content[source["start"] : source["end"]] == source["text"]
    assert "painter" in result["knowledge"] and "footballer" not in result["knowledge"]
    assert set(result["timings"]) == {"contextualize", "retrieve", "grade", "refine", "generate"}
    assert ctx.web_backend.queries == []


def test_incorrect_route_searches_the_web(make_context):
    ctx = make_context({"seascapes": 0.8}, "Anna Berg, occupation", "A painter of seascapes.")
    nodes, _, _ = run(ctx)
    assert nodes == ["contextualize", "retrieve", "grade", "rewrite_and_search", "generate", "finish"]
    ctx = make_context({"seascapes": 0.8}, "Anna Berg, occupation", "A painter of seascapes.")
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["action"] == "incorrect" and result["web_status"] == "searched"
    assert ctx.web_backend.queries == ["Anna Berg, occupation"] and result["rewritten_query"] == "Anna Berg, occupation"
    assert [s["origin"] for s in result["sources"]] == ["external"]
    assert result["sources"][0]["title"] == "Anna Berg (painter)"
    assert {"rewrite", "search", "refine_web", "rewrite_and_search"} <= set(result["timings"])


def test_a_forced_route_runs_that_route_and_keeps_the_thresholds_labels(make_context):
    # the labels decide which documents refinement rejects, so a forced route (the threshold sweep's
    # route_* systems) must answer as that route does when the thresholds choose it
    ctx = dataclasses.replace(make_context({"painter": 0.9}, "Anna Berg, occupation", "A painter."), route="ambiguous")
    nodes, _, _ = run(ctx)
    assert sorted(nodes[3:5]) == ["refine", "rewrite_and_search"]
    ctx = dataclasses.replace(make_context({"painter": 0.9}, "Anna Berg, occupation", "A painter."), route="ambiguous")
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["action"] == "ambiguous" and result["labels"] == ["correct", "incorrect"]
    assert result["reason"].startswith("Ambiguous, forced by the route setting") and "Correct)" in result["reason"]
    with pytest.raises(ValueError, match="unknown route 'web'"):
        dataclasses.replace(ctx, route="web")


def test_ambiguous_runs_both_branches_and_generates_once(make_context):
    ctx = make_context({"Swedish": 0.0, "seascapes": 0.7}, "Anna Berg, occupation", "A painter of seascapes.")
    nodes, _updates, final = run(
        ctx, g=build_graph().compile(checkpointer=InMemorySaver()), config={"configurable": {"thread_id": "a"}}
    )
    assert nodes[:3] == ["contextualize", "retrieve", "grade"]
    assert sorted(nodes[3:5]) == ["refine", "rewrite_and_search"]
    assert nodes[5:] == ["generate", "finish"] and nodes.count("generate") == 1
    assert "Stockholm" in final["knowledge"] and "harbours" in final["knowledge"]  # both knowledge sources
    assert {"refine", "rewrite_and_search", "generate"} <= set(final["timings"])  # both branches timed


def test_evaluator_is_called_once_per_batch_not_per_document(make_context):
    ctx = make_context({"painter": 0.9}, "answer")
    graph.invoke({"question": QUESTION}, context=ctx)
    grading, refining = ctx.evaluator.calls
    assert len(grading) == 2  # both documents in one call
    assert len(refining) >= 2  # all strips of all documents in one call


def test_web_failure_falls_back_to_internal_knowledge(make_context, failing_web):
    ctx = make_context({"Swedish": 0.0}, "Anna Berg, occupation", "A Swedish painter.", web=failing_web)
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["action"] == "ambiguous" and result["web_status"] == "failed"
    assert "timed out" in result["web_error"]
    assert [s["origin"] for s in result["sources"]] == ["internal"] and result["answer"] == "A Swedish painter."


@pytest.mark.parametrize(
    "hits",
    [
        [{"title": "Anna Berg (painter)", "text": "Anna Berg painted seascapes.", "url": "local://a"}],
        [{"title": "Anna Berg (painter)", "snippet": "Anna Berg painted seascapes.", "link": "local://a"}],
        [
            Document(
                page_content="Anna Berg painted seascapes.", metadata={"title": "Anna Berg (painter)", "source": "x"}
            )
        ],
        [SimpleNamespace(title="Anna Berg (painter)", content="Anna Berg painted seascapes.", url="local://a")],
        (h for h in [{"title": "Anna Berg (painter)", "content": "Anna Berg painted seascapes."}]),
    ],
)
def test_a_users_web_backend_may_return_mappings_documents_or_objects(make_context, hits):
    web = FakeWeb(results=hits if isinstance(hits, list) else None)
    if not isinstance(hits, list):
        web.search = lambda query, k: hits
    ctx = make_context({"seascapes": 0.8}, "Anna Berg, occupation", "A painter of seascapes.", web=web)
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["web_status"] == "searched" and result["web_error"] is None
    assert result["sources"][0]["title"] == "Anna Berg (painter)" and "seascapes" in result["sources"][0]["text"]


@pytest.mark.parametrize(
    "backend, message",
    [
        (FakeWeb(error=KeyError("api_key")), "FakeWeb failed: KeyError"),
        (SimpleNamespace(search=lambda query, k: 42), "returned int, expected a list"),
        (SimpleNamespace(search=lambda query, k: "Anna Berg"), "returned str, expected a list"),
        (SimpleNamespace(search=lambda query, k: [1, 2]), "2 results with no text or URL"),
        (SimpleNamespace(search=lambda query, k: time.sleep(5)), "timed out after 0.2 s"),
    ],
)
def test_any_failure_of_a_users_web_backend_becomes_web_error(make_context, backend, message):
    ctx = make_context({"Swedish": 0.0}, "Anna Berg, occupation", "A Swedish painter.", web=backend)
    ctx = dataclasses.replace(ctx, web_timeout=0.2)
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["web_status"] == "failed" and message in result["web_error"]
    assert result["answer"] == "A Swedish painter."  # internal knowledge still answers


def test_web_failure_with_nothing_internal_says_so_without_asking_the_model(make_context, failing_web):
    ctx = make_context({}, "Anna Berg, occupation", web=failing_web)  # one reply: the rewrite; generating would fail
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["action"] == "incorrect" and result["sources"] == [] and result["answer"] == NO_KNOWLEDGE_ANSWER
    assert result["grounded"] is False and result["draft"] == ""


@pytest.mark.parametrize("rewrite, query", [("keywords", "Anna Berg, occupation"), ("off", QUESTION)])
def test_the_web_query_needs_no_model_unless_asked(make_context, rewrite, query):
    web = FakeWeb(WEB)
    ctx = make_context({"seascapes": 0.7}, "A painter.", web=web, rewrite=rewrite)  # one reply: the answer's
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["action"] == "incorrect" and web.queries == [query] and result["rewritten_query"] == query
    assert result["draft"] == "A painter."  # the only reply went to the answer


def test_the_rewrite_setting(make_context):
    assert Context.default("rewrite") == "keywords"
    ctx = make_context({})
    assert dataclasses.replace(ctx, rewrite=True).rewrite == "model"  # the setting's values before it had three
    assert dataclasses.replace(ctx, rewrite=False).rewrite == "off"
    with pytest.raises(ValueError, match="unknown rewrite 'llm'"):
        dataclasses.replace(ctx, rewrite="llm")


def test_no_web_backend_skips_the_rewrite_and_the_search(make_context):
    ctx = make_context({}, web=None, docs=DOCS)  # no replies: neither the rewriter nor the generator may run
    ctx = dataclasses.replace(ctx, web_backend="none")
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["action"] == "incorrect" and result["web_status"] == "not configured"
    assert result["rewritten_query"] == "" and result["answer"] == NO_KNOWLEDGE_ANSWER and not result["grounded"]


def test_without_knowledge_the_model_may_answer_but_is_marked_ungrounded(make_context):
    ctx = dataclasses.replace(
        make_context({}, "Probably a painter."), web_backend="none", answer_without_knowledge=True
    )
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["answer"] == "Probably a painter." and result["grounded"] is False and result["sources"] == []


def test_local_web_needs_an_index(monkeypatch):
    monkeypatch.delenv("CRAG_WEB_INDEX", raising=False)
    monkeypatch.delenv("CRAG_WEB_BACKEND", raising=False)
    assert Context().web_backend == "none"  # no demo corpus behind a user's knowledge base
    assert Context(web_index="web.jsonl").web_backend == "local"
    with pytest.raises(ValueError, match="needs web_index"):
        Context(web_backend="local")


def test_unsupported_answers_are_withheld_and_model_citations_dropped(make_context):
    ctx = make_context({"painter": 0.9}, "She was an astronaut [1].", quote_threshold=NEVER)
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["answer"] == UNSUPPORTED_ANSWER and result["draft"] == "She was an astronaut."
    assert result["grounded"] is False and result["sources"] == [] and result["citations"] == []
    assert result["quoted"] is False and result["replaced"] == "unsupported"
    kept = graph.invoke(
        {"question": QUESTION},
        context=make_context({"painter": 0.9}, "She painted [7].", answer_without_knowledge=True),
    )
    assert kept["answer"] == "She painted." and kept["citations"][0]["sources"] == [1]  # "painted" is in the strip


def test_the_answer_stops_where_the_model_writes_the_next_question(make_context):
    from crag.prompts import GENERATE_STOP
    from tests.fakes import StoppingChat

    chat = StoppingChat(
        reply="A Swedish painter. Question: Where did she live? Answer: In Stockholm. Question: …", stops=[]
    )
    ctx = dataclasses.replace(make_context({"painter": 0.9}), chat_model=chat)
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert chat.stops == [GENERATE_STOP] and result["draft"] == "A Swedish painter."


def test_the_models_own_i_dont_know_is_kept_unless_a_strip_can_be_quoted(make_context):
    ctx = make_context({"painter": 0.9}, "I don't know.", quote_threshold=NEVER)
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["answer"] == "I don't know." and result["grounded"] is False and result["sources"] == []
    assert result["replaced"] is None  # declining, the model's words stand
    result = graph.invoke({"question": QUESTION}, context=make_context({"painter": 0.9}, "I don't know."))
    assert result["quoted"] is True and result["answer"] == QUOTE_ANSWER.format(quote=DOCS[0].page_content)
    assert result["replaced"] == "declined"


def asked(make_context, *replies, **kw):
    """The graph's state and the answer prompts sent, for a model that gives `replies` in turn."""
    chat = fake_chat(*replies)
    ctx = dataclasses.replace(make_context({"painter": 0.9}, rewrite="keywords", **kw), chat_model=chat)
    return graph.invoke({"question": QUESTION}, context=ctx), chat.prompts


def test_a_model_that_declines_with_knowledge_is_asked_once_more_with_the_paper_prompt(make_context):
    # no strip may be quoted instead (quoting off): the model is asked again
    result, prompts = asked(make_context, "I don't know.", "Anna Berg was a Swedish painter.", quote_threshold=NEVER)
    assert len(prompts) == 2 and prompts[0].startswith("Passages:") and prompts[1].startswith("Refer to the")
    assert result["answer"] == "Anna Berg was a Swedish painter." and result["grounded"] is True
    assert result["asked_again"] is True and result["first_draft"] == "I don't know."
    assert result["draft"] == "Anna Berg was a Swedish painter." and result["replaced"] is None


def test_the_second_answer_is_judged_as_the_first_was(make_context):
    # withheld the first time, unsupported again: declined (nothing may be quoted), the last draft kept
    result, prompts = asked(make_context, "She was an astronaut.", "She flew to the moon.", quote_threshold=NEVER)
    assert len(prompts) == 2 and result["answer"] == UNSUPPORTED_ANSWER and result["replaced"] == "unsupported"
    assert result["draft"] == "She flew to the moon." and result["first_draft"] == "She was an astronaut."
    # declined both times: the second decline is the answer
    result, prompts = asked(make_context, "I don't know.", "I don't know.", quote_threshold=NEVER)
    assert len(prompts) == 2 and result["answer"] == "I don't know." and result["replaced"] is None


def test_a_strip_that_can_be_quoted_is_quoted_without_asking_again(make_context):
    for first in ("I don't know.", "She was an astronaut."):
        result, prompts = asked(make_context, first, "Anna Berg was a Swedish painter.")
        assert len(prompts) == 1 and result["quoted"] is True and result["asked_again"] is False


@pytest.mark.parametrize(
    "replies, settings",
    [
        (["Anna Berg was a Swedish painter."], {}),  # the first answer stands
        (["I don't know."], {"retry_prompt": None, "quote_threshold": NEVER}),  # asking again is off
        (["I don't know."], {"retry_prompt": "off", "quote_threshold": NEVER}),  # as the command line says it
        (["I don't know."], {"generate_prompt": "paper", "quote_threshold": NEVER}),  # the same prompt again
        (["I don't know."], {"generate_prompt": "marked", "quote_threshold": NEVER}),  # never unmarked after marked
    ],
)
def test_the_model_is_asked_once_when_its_answer_stands_or_asking_again_is_off(make_context, replies, settings):
    result, prompts = asked(make_context, *replies, **settings)
    assert len(prompts) == 1 and result["asked_again"] is False and result["first_draft"] == ""


def test_without_knowledge_the_model_is_not_asked_again(make_context):
    result, prompts = asked(make_context, "I don't know.", docs=[], web=FakeWeb([]))
    assert prompts == [] and result["answer"] == NO_KNOWLEDGE_ANSWER and result["asked_again"] is False


def test_an_unknown_retry_prompt_is_refused():
    with pytest.raises(ValueError, match="unknown retry_prompt 'clever'"):
        Context(retry_prompt="clever")


def test_an_empty_reply_is_no_answer_and_is_replaced_by_a_quote_when_one_is_relevant(make_context):
    result = graph.invoke({"question": QUESTION}, context=make_context({"painter": 0.9}, ""))
    assert result["quoted"] is True and result["replaced"] == "empty" and result["draft"] == ""
    never = make_context({"painter": 0.9}, "", quote_threshold=NEVER)
    result = graph.invoke({"question": QUESTION}, context=never)
    assert result["answer"] == UNSUPPORTED_ANSWER and result["replaced"] == "empty" and not result["grounded"]


def test_an_unsupported_answer_quotes_the_strip_the_evaluator_calls_relevant(make_context):
    result = graph.invoke({"question": QUESTION}, context=make_context({"painter": 0.9}, "She was an astronaut."))
    strip = DOCS[0].page_content  # one strip: the refined document, scored 0.9 >= the calibrated upper 0.5
    assert result["answer"] == QUOTE_ANSWER.format(quote=strip) and result["draft"] == "She was an astronaut."
    assert result["quoted"] is True and result["grounded"] is True and result["replaced"] == "unsupported"
    [citation] = result["citations"]
    assert citation["sources"] == [1] and result["answer"][citation["start"] : citation["end"]] == strip
    [source] = result["sources"]
    assert source["id"] == 1 and DOCS[0].page_content[source["start"] : source["end"]] == strip
    assert result["history"][-1]["answer"] == result["answer"]


def test_a_supported_answer_stands_whichever_kept_strip_supports_it(make_context):
    """No strip judged better replaces it: the passed-over rule cost the 1.5B reader's right answers."""
    docs, rules = PASSED_OVER_DOCS, PASSED_OVER_RULES  # both relevant; the painter strip is judged best
    result = graph.invoke({"question": QUESTION}, context=make_context(rules, "She lived in Stockholm.", docs=docs))
    assert result["answer"] == result["draft"] == "She lived in Stockholm." and result["quoted"] is False
    assert result["replaced"] is None and result["grounded"] is True
    assert [s["source"] for s in result["sources"]] == ["kb/b.txt"]


def test_an_explicit_quote_threshold_below_upper_quotes_more(make_context):
    ctx = make_context({"painter": 0.3}, "Anna Berg, occupation", "She was an astronaut.", quote_threshold=0.2)
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["quoted"] is True and "Swedish painter" in result["answer"]


def test_a_quote_threshold_must_be_a_number():
    with pytest.raises(ValueError, match="quote_threshold"):
        Context(quote_threshold=float("nan"))


def test_unusable_rewrite_falls_back_to_question_keywords(make_context):
    ctx = make_context({"seascapes": 0.8}, "???", "A painter.")
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert result["rewritten_query"] == "Anna Berg, occupation"


@pytest.mark.parametrize(
    "question, message",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("x" * 20_000, "20,000 characters"),
        (42, "must be text"),
        (None, "no question: give a question, or messages"),
    ],
)
def test_bad_questions_get_clear_errors(make_context, question, message):
    with pytest.raises(InvalidQuestion, match=message):
        graph.invoke({"question": question}, context=make_context({}, "unused"))


def test_threads_do_not_accumulate_documents_or_knowledge(make_context):
    g = build_graph().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    first = make_context({"seascapes": 0.8}, "Anna Berg, occupation", "A painter.")
    g.invoke({"question": QUESTION}, context=first, config=config)
    second = make_context({"painter": 0.9}, "Still a painter.")
    g.invoke({"question": "Where does Anna Berg's work hang?"}, context=second, config=config)
    state = g.get_state(config).values
    assert state["action"] == "correct"
    assert len(state["documents"]) == 2 and state["external_knowledge"] == [] and state["web_results"] == []
    assert [s["origin"] for s in state["sources"]] == ["internal"]
    assert "rewrite" not in state["timings"]  # the first turn's stages are not carried over


def test_refine_ranks_strips_with_the_knowledge_base_s_embeddings(make_context):
    """Three strips the evaluator scores alike: the one closer to the question than the others is kept,
    with the knowledge base's embeddings (one call); with `strip_set_weight` 0 they are not used."""
    docs = [
        Document(page_content=text, metadata={"title": "Anna Berg", "source": "kb/anna.txt"})
        for text in (
            "Anna Berg was born in a small town by the sea.",
            "Anna Berg painted seascapes and harbours in oil.",
            "Anna Berg moved to Stockholm when she was twenty.",
        )
    ]
    question = "What did Anna Berg paint in oil?"
    ctx = make_context({"Anna": 0.9}, "She painted seascapes.", docs=docs, top_k_strips=1)
    result = graph.invoke({"question": question}, context=ctx)
    [strip] = result["internal_knowledge"]
    assert "seascapes" in strip["text"] and ctx.embeddings.calls == 1
    assert strip["score"] == 0.9 and strip["selection_score"] > 0.9
    plain = make_context({"Anna": 0.9}, "She painted seascapes.", docs=docs, top_k_strips=1, strip_set_weight=0.0)
    result = graph.invoke({"question": question}, context=plain)
    assert "born" in result["internal_knowledge"][0]["text"] and plain.embeddings.calls == 0  # the evaluator's order


def test_strips_of_documents_the_grade_rejected_are_not_lifted_by_their_standing(make_context):
    """As in `make demo`: "Who was Henri Becquerel?" kept a strip on Gustave Eiffel, whose document the
    evaluator scored far below the lower threshold, because it reads like an answer to "Who was …?"."""
    docs = [
        Document(page_content=text, metadata={"title": title, "source": f"kb/{n}.txt"})
        for n, (title, text) in enumerate(
            [
                ("Becquerel (unit)", "The becquerel is the SI unit of radioactivity, named after a physicist."),
                ("Gustave Eiffel", "Who was Gustave Eiffel? He was a French engineer who was born in Dijon."),
                ("Radioactivity", "Radioactivity was discovered in uranium salts in the year 1896."),
            ]
        )
    ]
    question = "Who was Henri Becquerel?"
    rules = {"becquerel": 0.45, "Radioactivity": -0.45, "Eiffel": -0.95}  # Ambiguous; Eiffel below -0.5
    result = graph.invoke(
        {"question": question}, context=make_context(rules, "Henri Becquerel", "A physicist.", docs=docs)
    )
    assert result["labels"] == ["ambiguous", "incorrect", "ambiguous"]
    kept = {s["title"]: s for s in result["internal_knowledge"]}
    assert "Gustave Eiffel" not in kept and all(s["lifted"] for s in kept.values())
    # the same scores with the grade's lower threshold under Eiffel's: its strip is lifted and kept
    lenient = make_context(rules, "Henri Becquerel", "A physicist.", docs=docs, lower_threshold=-0.96)
    result = graph.invoke({"question": question}, context=lenient)
    assert result["labels"][1] == "ambiguous" and "Gustave Eiffel" in {s["title"] for s in result["internal_knowledge"]}


def test_strip_set_weight_must_be_a_finite_non_negative_number():
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="strip_set_weight"):
            Context(strip_set_weight=bad)


def test_an_answer_that_goes_round_in_circles_is_withheld_or_replaced_by_a_quote(make_context):
    looping = "Anna Berg was a Swedish painter. Anna Berg was a Swedish painter. Anna Berg was a Swedish painter."
    result = graph.invoke({"question": QUESTION}, context=make_context({"painter": 0.9}, looping))
    assert result["draft"] == looping and result["quoted"] is True  # every turn is supported, but it is no answer
    assert result["replaced"] == "looped"
    assert result["answer"] == QUOTE_ANSWER.format(quote=DOCS[0].page_content)
    result = graph.invoke(
        {"question": QUESTION}, context=make_context({"painter": 0.9}, looping, quote_threshold=NEVER)
    )
    assert result["answer"] == LOOPING_ANSWER and result["grounded"] is False and result["sources"] == []
    assert result["replaced"] == "looped"
    twice = "Anna Berg was a Swedish painter. Anna Berg was a Swedish painter."
    result = graph.invoke({"question": QUESTION}, context=make_context({"painter": 0.9}, twice))
    assert result["answer"] == twice and result["grounded"] is True  # a repeat is not yet a loop


def test_the_marked_prompt_joins_the_passages_words_and_its_answer_reads_plainly():
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage

    from tests.fakes import fake_context

    class Recording(FakeMessagesListChatModel):
        seen: list = []

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            self.seen.append(messages)
            return super()._generate(messages, stop, run_manager, **kwargs)

    # a model that copies the marks into its answer
    chat = Recording(responses=[AIMessage(content="Anna^Berg^was^a^Swedish^painter.")])
    out = graph.invoke(
        {"question": "What is Anna Berg's occupation?"}, context=fake_context(chat_model=chat, generate_prompt="marked")
    )
    (prompt,) = chat.seen[-1]
    assert "Anna^Berg:^Anna^Berg^was^a^Swedish^painter." in prompt.content  # title and text, marked
    assert prompt.content.endswith(
        "Question: What is Anna Berg's occupation?\nAnswer the question in one short "
        "sentence, using only the passages above. If they do not contain the answer, "
        "reply: I don't know.\nAnswer:"
    )
    assert out["answer"] == "Anna Berg was a Swedish painter." and out["grounded"]
    assert "^" not in out["knowledge"]  # what the generator was given, as a reader sees it
