"""Threads (follow-ups, history, SQLite across a restart) and streaming (events, answer tokens only)."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from crag.graphs.crag import build_graph, graph
from crag.nodes.contextualize import condense
from crag.passages import passage
from crag.questions.followup import main_entity, parse_condensed, refers_back, resolve
from crag.settings import Context
from crag.state import MAX_TURNS
from crag.threads import InvalidThreadId, thread_config, threaded_graph
from tests.fakes import FakeChat, FakeEvaluator, FakeWeb, fake_chat

ADA = [{"asked": "Who was Ada Lovelace?", "question": "Who was Ada Lovelace?", "answer": "A mathematician [1]."}]
KYOTO = [{"asked": "Where is Kyoto?", "question": "Where is Kyoto?", "answer": "In Japan [1]."}]


class RecordingRetriever:
    def __init__(self, docs):
        self.docs, self.queries = docs, []

    def invoke(self, query, config=None):
        self.queries.append(query)
        return list(self.docs)


DOCS = [
    Document(
        page_content="Anna Berg was a Swedish painter. Her works hang in Stockholm.",
        metadata={"title": "Anna Berg", "source": "kb/anna.txt"},
    )
]


def context(*replies, rules=None, retriever=None, web=None, **settings):
    return Context(
        evaluator=FakeEvaluator(rules or {"painter": 0.9}),
        chat_model=fake_chat(*replies),
        retriever=retriever or RecordingRetriever(DOCS),
        web_backend=web or FakeWeb([]),
        **settings,
    )


@pytest.mark.parametrize(
    "question, expected",
    [
        ("When was she born?", "When was Ada Lovelace born?"),
        ("Who was her father?", "Who was Ada Lovelace's father?"),
        ("And Charles Babbage?", "Who was Charles Babbage?"),
        ("What about Alan Turing", "Who was Alan Turing?"),
    ],
)
def test_rules_resolve_follow_ups(question, expected):
    assert refers_back(question)
    assert resolve(question, ADA) == expected


def test_rules_resolve_places():
    assert resolve("What is there to see?", KYOTO) == "What is in Kyoto to see?"
    assert resolve("What is its population?", KYOTO) == "What is Kyoto's population?"


def test_self_contained_questions_are_left_alone():
    assert not refers_back("What is the capital of France?")
    assert not refers_back("Who wrote Hamlet?")
    assert main_entity("Who was Ada Lovelace?") == "Ada Lovelace"
    assert resolve("Who built that?", ADA) is None  # nothing the rules can substitute


def test_model_rewrites_are_checked():
    assert parse_condensed("Rewritten: Who built the Eiffel Tower?", "Who built that?") == "Who built the Eiffel Tower?"
    assert parse_condensed("A: In southern Siberia, Russia.", "Who built that?") is None  # lost the question
    assert parse_condensed("Who built that?", "Who built that?") is None  # still refers back
    assert parse_condensed("", "Who built that?") is None


@pytest.mark.parametrize(
    "reply",
    [
        "How do I stop Git from printing its hints?",
        "Rewritten: how do I stop Git from printing its hints",
        "  How  do I stop Git from printing its hints?!",
    ],
)
def test_a_question_the_model_gives_back_unchanged_stands_on_its_own(reply):
    # "its" refers inside the question: the model judged it self-contained, and it names what it asks about
    question = "How do I stop Git from printing its hints?"
    assert refers_back(question)
    assert parse_condensed(reply, question) == question


def test_a_question_given_back_unchanged_that_names_nothing_is_left_to_the_rules():
    # the 1.5B gives back "What was her occupation?" too: nothing in it to stand on
    assert parse_condensed("What was her occupation?", "What was her occupation?") is None
    assert parse_condensed("Is it safe?", "is it safe") is None


def test_a_self_contained_question_on_a_thread_is_retrieved_as_asked():
    g, config, retriever = painter_thread("t1c")
    question = "How do I stop Git from printing its hints?"
    result = g.invoke(
        {"question": question}, config=config, context=context(question, "Set advice.", retriever=retriever)
    )
    assert retriever.queries[1] == question  # neither Anna Berg put in for "its" nor the last question appended
    assert result["question"] == question


def test_a_rewrite_cut_by_its_token_budget_is_not_used():
    """A rewrite that ran out of tokens has lost the question's end; the rules resolve the follow-up."""
    question = "What was her occupation?"
    history = [{"asked": "Where was Anna Berg born?", "question": "Where was Anna Berg born?", "answer": "In Uppsala."}]
    for finish, expected in (
        ("length", "What was Anna Berg's occupation?"),
        ("stop", "What was the occupation of Anna Berg?"),
    ):
        reply = AIMessage(content="What was the occupation of Anna Berg?", response_metadata={"finish_reason": finish})
        assert condense(Context(chat_model=FakeChat(messages=iter([reply]))), question, history) == expected


def painter_thread(thread_id):
    """A thread whose first turn asked Anna Berg's occupation: the graph, its config and the retriever."""
    g = build_graph().compile(checkpointer=InMemorySaver())
    config = thread_config(thread_id)
    retriever = RecordingRetriever(DOCS)
    g.invoke(
        {"question": "What is Anna Berg's occupation?"},
        config=config,
        context=context("A Swedish painter.", retriever=retriever),
    )
    return g, config, retriever


def test_follow_up_on_a_thread_is_resolved_before_retrieval():
    g, config, retriever = painter_thread("t1")
    result = g.invoke(
        {"question": "Where does her work hang?"},
        config=config,
        # the model's rewrite comes first, although the rules would resolve this one ("Anna Berg's work")
        context=context("Where does the work of Anna Berg hang?", "In Stockholm.", retriever=retriever),
    )
    assert retriever.queries == ["What is Anna Berg's occupation?", "Where does the work of Anna Berg hang?"]
    assert result["question"] == "Where does the work of Anna Berg hang?"
    assert [t["asked"] for t in result["history"]] == ["What is Anna Berg's occupation?", "Where does her work hang?"]
    assert [t["answer"] for t in result["history"]] == ["A Swedish painter.", "In Stockholm."]
    assert len(result["documents"]) == 1  # this turn's documents only


def test_rules_resolve_when_the_model_rewrite_is_unusable():
    g, config, retriever = painter_thread("t1b")
    g.invoke(
        {"question": "Where does her work hang?"},
        config=config,
        context=context("In southern Siberia.", "In Stockholm.", retriever=retriever),  # lost the question
    )
    assert retriever.queries[1] == "Where does Anna Berg's work hang?"


def test_model_rewrite_else_the_previous_question_appended():
    g, config, retriever = painter_thread("t2")
    g.invoke(
        {"question": "Who bought that?"},
        config=config,
        # the unsupported "A museum" is withheld, not replaced by a quote whose words the next turn would resolve to
        context=context("Who bought Anna Berg's paintings?", "A museum [1].", retriever=retriever, quote_threshold=2.0),
    )
    g.invoke(
        {"question": "Who sold that?"},
        config=config,
        context=context("In southern Siberia.", "Nobody [1].", retriever=retriever),
    )
    assert retriever.queries[1] == "Who bought Anna Berg's paintings?"
    assert retriever.queries[2] == "Who sold that? (Who bought Anna Berg's paintings?)"


def test_history_is_capped():
    g = build_graph().compile(checkpointer=InMemorySaver())
    config = thread_config("t3")
    for i in range(MAX_TURNS + 3):
        result = g.invoke(
            {"question": f"What did Anna Berg paint in year {i}?"},
            config=config,
            context=context(f"A Swedish painter {i}."),
        )
    assert (
        len(result["history"]) == MAX_TURNS and result["history"][-1]["answer"] == f"A Swedish painter {MAX_TURNS + 2}."
    )


def test_sqlite_threads_survive_a_restart(tmp_path):
    db = tmp_path / "threads.sqlite"
    with threaded_graph(db) as g:
        g.invoke(
            {"question": "What is Anna Berg's occupation?"},
            config=thread_config("painter"),
            context=context("A Swedish painter."),
        )
    retriever = RecordingRetriever(DOCS)
    with threaded_graph(db) as g:  # a new connection, as after a restart
        result = g.invoke(
            {"question": "Where did she live?"},
            config=thread_config("painter"),
            context=context("Where did Anna Berg live?", "Stockholm.", retriever=retriever),
        )
        other = g.invoke(
            {"question": "Where did she live?"},
            config=thread_config("another"),
            context=context("I don't know.", retriever=retriever),
        )
    assert retriever.queries[0] == "Where did Anna Berg live?"
    assert len(result["history"]) == 2 and len(other["history"]) == 1
    assert other["question"] == "Where did she live?"  # a new thread has nothing to refer back to


@pytest.mark.parametrize("bad", ["", " x", "a" * 200, "a/b", 7, None])
def test_bad_thread_ids_are_refused(bad):
    with pytest.raises(InvalidThreadId):
        thread_config(bad)


def test_custom_events_from_every_node_and_answer_tokens_only():
    ctx = context(
        "Anna Berg, occupation",
        "She painted seascapes.",
        rewrite="model",  # the model writes the web query (its tokens must not stream as the answer's)
        rules={"Swedish": 0.0, "seascapes": 0.7},
        web=FakeWeb(
            [
                passage(
                    "Anna Berg painted seascapes and harbours.",
                    title="Anna Berg (painter)",
                    source="local://Anna Berg (painter)",
                )
            ]
        ),
    )
    events, tokens, other_tokens = [], [], []
    final = {}
    for mode, chunk in graph.stream(
        {"question": "What is Anna Berg's occupation?"}, context=ctx, stream_mode=["custom", "messages", "values"]
    ):
        if mode == "values":
            final = chunk
        elif mode == "custom":
            events.append(chunk)
        else:
            message, metadata = chunk
            (tokens if "crag:answer" in metadata.get("tags", []) else other_tokens).append(message.content)
    by_node = {}
    for event in events:
        by_node.setdefault(event["node"], {}).update(event)
    assert set(by_node) == {"retrieve", "grade", "refine", "rewrite_and_search"}
    assert by_node["grade"]["action"] == "ambiguous" and by_node["grade"]["labels"] == ["ambiguous"]
    assert by_node["grade"]["scores"] == [0.0] and by_node["grade"]["thresholds"] == {"upper": 0.5, "lower": -0.5}
    assert by_node["retrieve"]["documents"] == [{"title": "Anna Berg", "source": "kb/anna.txt"}]
    assert by_node["rewrite_and_search"]["rewritten_query"] == "Anna Berg, occupation"
    assert by_node["rewrite_and_search"]["results"][0]["title"] == "Anna Berg (painter)"
    assert by_node["rewrite_and_search"]["strips"] and by_node["refine"]["strips"]
    assert "".join(tokens) == "She painted seascapes." and len(tokens) > 1  # streamed, token by token
    assert final["answer"] == "".join(tokens) and final["grounded"]  # the streamed answer is the final one
    assert other_tokens == []  # the rewriter's keywords are not streamed as answer tokens


def test_events_reach_astream_events_clients():
    async def collect():
        ctx = context("A Swedish painter.")
        return [
            e
            async for e in graph.astream_events(
                {"question": "What is Anna Berg's occupation?"}, context=ctx, version="v2"
            )
        ]

    events = asyncio.run(collect())
    custom = [e["data"] for e in events if e["event"] == "on_custom_event" and e["name"] == "crag"]
    assert [c["node"] for c in custom] == ["retrieve", "grade", "refine"]
    answer = [e for e in events if e["event"] == "on_chat_model_stream"]
    assert answer and all("crag:answer" in e["tags"] for e in answer)
