"""Self-Reasoning (crag/graphs/self_reasoning.py, crag/graphs/crag_self_reasoning.py): the reader's three steps
as turns of one conversation, the abstentions, the evidence checked word for word and cited, the ablations,
and CRAG's kept strips as what the reader reads."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver

from crag.answers.attribution import abstains
from crag.answers.evidence import verbatim_span
from crag.evaluation.pipelines import run_question
from crag.evaluation.systems import SYSTEMS
from crag.graphs import BUILDERS, build, compiled
from crag.models.chat import LocalChatModel
from crag.models.reasoning import Selection
from crag.nodes.self_reasoning import numbered
from crag.prompts import (
    DIRECT_ANSWER_PROMPT,
    EVIDENCE_PROMPT,
    NO_KNOWLEDGE_ANSWER,
    REASONING_SYSTEM,
    RELEVANCE_PROMPT,
    TRAJECTORY_PROMPT,
    UNSUPPORTED_ANSWER,
)
from tests.fakes import ANSWER, DOCS, INVENTED, VERBATIM, WEB, ReasoningChat, fake_context

QUESTION = "What is Anna Berg's occupation?"
STEPS = [RELEVANCE_PROMPT, EVIDENCE_PROMPT, TRAJECTORY_PROMPT]


def ask(system, chat, **settings):
    ctx = fake_context(chat_model=chat, **settings)
    nodes = []
    for update in compiled(system).stream({"question": QUESTION}, context=ctx, stream_mode="updates"):
        nodes += list(update)
    return nodes, compiled(system).invoke({"question": QUESTION}, context=ctx)


def quote(sentence, document=1):
    return {"document": document, "sentence": sentence, "reason": "it names her occupation"}


@pytest.mark.parametrize("structured", [False, True])
def test_the_three_steps_run_in_order_as_one_conversation(structured):
    chat = ReasoningChat(structured=structured)
    nodes, out = ask("self_reasoning", chat)
    assert [n for n in nodes if n in ("relevance_aware", "evidence_aware", "trajectory_analysis", "finish")] == [
        "relevance_aware",
        "evidence_aware",
        "trajectory_analysis",
        "finish",
    ]
    first, second, third = chat.calls[-3:]  # the second run's three calls (the first run streamed the same)
    assert chat.steps()[-3:] == STEPS
    assert first[0] == ("system", REASONING_SYSTEM) and first[1][0] == "human"
    assert first[1][1].startswith(f"Documents:\n{numbered(out['internal_knowledge'])}\n\nQuestion: {QUESTION}")
    # each step's call carries the turns before it, the model's replies among them
    assert second[: len(first)] == first and second[len(first)][0] == "ai" and second[-1] == ("human", EVIDENCE_PROMPT)
    assert (
        third[: len(second)] == second and third[len(second)][0] == "ai" and third[-1] == ("human", TRAJECTORY_PROMPT)
    )
    assert [m["role"] for m in out["reasoning"]] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert json.loads(out["reasoning"][4]["content"])["evidence"][0]["sentence"] == VERBATIM
    assert out["relevance"] == 1.0 and out["relevance_reason"]
    assert out["analysis"] == "The evidence names her occupation." and out["answer"] == ANSWER
    assert out["knowledge"] == numbered(out["internal_knowledge"])  # what the reader read
    assert {"relevance", "evidence", "trajectory"} <= set(out["timings"])


def test_nothing_relevant_abstains_without_asking_further():
    chat = ReasoningChat(relevant=("Nobody",))
    nodes, out = ask("self_reasoning", chat)
    assert "decline" in nodes and "evidence_aware" not in nodes and "trajectory_analysis" not in nodes
    assert chat.steps() == [RELEVANCE_PROMPT, RELEVANCE_PROMPT]  # once per run
    assert out["relevance"] == -1.0 and out["answer"] == NO_KNOWLEDGE_ANSWER and abstains(out["answer"])
    assert out["given"] == [] and out["sources"] == [] and not out["grounded"]


def test_an_invented_sentence_is_dropped_and_a_verbatim_one_kept_and_cited():
    # the verbatim sentence with its spacing changed still is the document's; the invented one is not
    chat = ReasoningChat(quotes=[quote(INVENTED), quote("Anna  Berg was a\nSwedish painter."), quote(VERBATIM, 7)])
    _, out = ask("self_reasoning", chat)
    # the invented one, and one quoting a document there is not
    assert [q["sentence"] for q in out["evidence_dropped"]] == [INVENTED, VERBATIM]
    assert [(e["number"], e["sentence"], e["start"], e["end"]) for e in out["evidence"]] == [
        (1, VERBATIM, 0, len(VERBATIM))
    ]
    assert [s["text"] for s in out["given"]] == [VERBATIM]  # the answer is cited from the evidence alone
    assert out["citations"][0]["sources"] == [1] and out["grounded"]
    (source,) = out["sources"]
    assert (source["text"], source["start"], source["end"], source["title"]) == (VERBATIM, 0, 32, "Anna Berg")
    assert DOCS[0].page_content[source["start"] : source["end"]] == source["text"]


def test_no_verbatim_evidence_declines_before_the_analysis():
    chat = ReasoningChat(quotes=[quote(INVENTED)])
    nodes, out = ask("self_reasoning", chat)
    assert "trajectory_analysis" not in nodes and TRAJECTORY_PROMPT not in chat.steps()
    assert out["evidence"] == [] and out["evidence_dropped"] == [quote(INVENTED)]
    assert out["answer"] == UNSUPPORTED_ANSWER and out["given"] == [] and out["draft"] == ""


def test_a_repeated_sentence_is_kept_once_and_not_counted_as_dropped():
    _, out = ask("self_reasoning", ReasoningChat(quotes=[quote(VERBATIM), quote(VERBATIM)]))
    assert len(out["evidence"]) == 1 and out["evidence_dropped"] == []


@pytest.mark.parametrize(
    ("system", "skipped", "steps"),
    [
        ("self_reasoning_no_relevance", "relevance_aware", [EVIDENCE_PROMPT, TRAJECTORY_PROMPT]),
        ("self_reasoning_no_evidence", "evidence_aware", [RELEVANCE_PROMPT, TRAJECTORY_PROMPT]),
        (
            "self_reasoning_no_trajectory",
            "trajectory_analysis",
            [RELEVANCE_PROMPT, EVIDENCE_PROMPT, DIRECT_ANSWER_PROMPT],
        ),
    ],
)
def test_each_ablation_skips_its_step(system, skipped, steps):
    chat = ReasoningChat()
    nodes, out = ask(system, chat)
    assert skipped not in nodes and skipped not in compiled(system).get_graph().nodes
    assert chat.steps() == steps * 2  # streamed once, invoked once
    assert chat.calls[-len(steps)][1][1].startswith("Documents:\n[1] Anna Berg\n")  # the first step's turn has them
    assert out["answer"] == ANSWER and out["grounded"]
    if skipped == "evidence_aware":  # no evidence: cited from the documents it read
        assert [s["text"] for s in out["given"]] == [d.page_content for d in DOCS]
    else:
        assert [s["text"] for s in out["given"]] == [VERBATIM]
    assert (out["analysis"] == "") == (skipped == "trajectory_analysis")
    assert (out["relevance"] is None) == (skipped == "relevance_aware")


def test_crag_self_reasoning_reads_crag_s_kept_strips_not_the_retrieved_documents():
    chat = ReasoningChat()
    _, out = ask("crag_self_reasoning", chat, recheck_threshold=None)
    assert out["action"] == "correct" and "Carl Dahl" in DOCS[1].page_content
    opening = chat.calls[-3][1][1]
    assert opening.startswith(f"Documents:\n{numbered(out['internal_knowledge'])}\n\n") and "Carl Dahl" not in opening
    assert out["answer"] == ANSWER and [s["text"] for s in out["given"]] == [VERBATIM]
    assert "generate" not in compiled("crag_self_reasoning").get_graph().nodes


def test_a_source_s_span_is_the_sentence_s_place_in_its_document_whatever_its_spacing():
    # refinement collapses a strip's whitespace; its source span still points into the document as it is
    spaced = Document(
        page_content="Anna Berg was a  Swedish\npainter.  She painted the sea.", metadata=DOCS[0].metadata
    )
    chat = ReasoningChat(quotes=[quote("painter. She painted the sea.")])
    _, out = ask("crag_self_reasoning", chat, recheck_threshold=None, retriever=RunnableLambda(lambda q: [spaced]))
    assert out["internal_knowledge"][0]["text"] == "Anna Berg was a Swedish painter. She painted the sea."
    (source,) = out["sources"]
    assert source["text"] == "painter. She painted the sea."  # as the reader was shown it
    assert spaced.page_content[source["start"] : source["end"]] == "painter.  She painted the sea."


def test_crag_self_reasoning_on_incorrect_reads_the_web_s_strips_alone():
    chat = ReasoningChat(quotes=[quote("Anna Berg (1890–1950) was a Swedish painter of seascapes and harbours.")])
    # the web's passage is judged relevant, the retrieved documents are not
    _, out = ask("crag_self_reasoning", chat, rules={"seascapes": 0.9}, recheck_threshold=None)
    assert out["action"] == "incorrect" and out["internal_knowledge"] == []
    opening = chat.calls[-3][1][1]
    assert WEB[0].page_content in opening and not any(d.page_content in opening for d in DOCS)
    assert [s["origin"] for s in out["given"]] == ["external"] and out["grounded"]


def test_no_knowledge_at_all_declines_without_the_model():
    chat = ReasoningChat()
    _, out = ask("crag_self_reasoning", chat, rules={"nothing": 0.9}, recheck_threshold=None, web_backend="none")
    assert chat.steps() == [] and out["answer"] == NO_KNOWLEDGE_ANSWER and out["knowledge"] == ""


def test_each_turn_of_a_thread_reasons_in_a_conversation_of_its_own():
    chat = ReasoningChat(relevant=("Anna Berg", "Carl Dahl"))
    graph = build("self_reasoning").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"question": QUESTION}, config=config, context=fake_context(chat_model=chat))
    out = graph.invoke({"question": "What is Carl Dahl's job?"}, config=config, context=fake_context(chat_model=chat))
    first_of_second_turn = chat.calls[3]
    assert len(first_of_second_turn) == 2 and "Question: What is Carl Dahl's job?" in first_of_second_turn[1][1]
    assert len(out["reasoning"]) == 7 and len(out["history"]) == 2


def test_every_variant_is_a_system_of_the_evaluation_with_its_steps_in_the_stages():
    names = ["self_reasoning", *(f"self_reasoning_no_{s}" for s in ("relevance", "evidence", "trajectory"))]
    for name in [*names, "crag_self_reasoning"]:
        assert name in BUILDERS and SYSTEMS[name].pipeline == name
    system = SYSTEMS["self_reasoning"]
    out = run_question(system.pipeline, fake_context(chat_model=ReasoningChat()), QUESTION)
    assert set(out["latency"]) == {"retrieve", "grade", "refine", "generate"} and out["llm"]["calls"] == 3
    assert SYSTEMS["crag_self_reasoning"].uses_graph and not system.uses_graph


class JsonChat(LocalChatModel):
    """The local model's structured output with llama.cpp replaced by a fixed reply: what it is asked for."""

    reply: str = ""
    asked: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.asked.append(kwargs)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.reply))])


def test_the_local_model_holds_its_reply_to_the_schema_and_a_cut_reply_does_not_parse():
    good = json.dumps({"evidence": [quote(VERBATIM)]})
    model = JsonChat(reply=good, asked=[])
    out = model.with_structured_output(Selection, include_raw=True).invoke("Select.")
    assert out["parsed"] == Selection.model_validate_json(good) and out["raw"].content == good
    assert model.asked[0]["response_format"] == {"type": "json_object", "schema": Selection.model_json_schema()}
    cut = JsonChat(reply=good[:30], asked=[]).with_structured_output(Selection, include_raw=True).invoke("Select.")
    assert cut["parsed"] is None and cut["parsing_error"] is not None


WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
TOKEN = st.builds(lambda w, p: w + p, WORD, st.sampled_from(["", "", ".", ",", ";", ")"]))
SPACE = st.sampled_from([" ", "  ", "\n", "\t", " \n "])


@st.composite
def document_and_cut(draw):
    """A document of words and whitespace, and a run of its words (start, end) as a reader would quote it."""
    tokens = draw(st.lists(TOKEN, min_size=1, max_size=30))
    spaces = draw(st.lists(SPACE, min_size=len(tokens), max_size=len(tokens)))
    text = draw(SPACE) + "".join(t + s for t, s in zip(tokens, spaces, strict=True))
    start = draw(st.integers(0, len(tokens) - 1))
    end = draw(st.integers(start + 1, len(tokens)))
    return text, tokens, start, end


@given(document_and_cut(), SPACE)
def test_a_sentence_cut_from_a_document_always_validates(case, spacing):
    text, tokens, start, end = case
    sentence = spacing.join(tokens[start:end])
    span = verbatim_span(sentence, text)
    assert span is not None and text[span[0] : span[1]].split() == tokens[start:end]


@given(document_and_cut(), WORD, st.data())
def test_a_sentence_with_a_changed_word_never_validates(case, word, data):
    text, tokens, start, end = case
    assume(word not in text)
    changed = list(tokens[start:end])
    changed[data.draw(st.integers(0, len(changed) - 1))] = word
    assert verbatim_span(" ".join(changed), text) is None


def test_a_quote_must_begin_and_end_on_whole_words():
    text = "Anna Berg was a Swedish painter. She painted the sea."
    assert verbatim_span("painte", text) is None and verbatim_span("nna Berg", text) is None
    assert verbatim_span("was a Swedish painter", text) == (10, 31)
    assert verbatim_span("sea", "overseas, the sea") == (14, 17)  # the first whole-word place
    assert verbatim_span("  ", text) is None
