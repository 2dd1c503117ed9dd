"""`messages` in and out of every graph, as chat clients send them (crag/questions/messages.py, the
`contextualize` and `finish` nodes): the last user message is the question, the turns before it the history,
the answer an AIMessage carrying the action, sources and citations; threads keep one copy of the conversation."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from crag.graphs import BUILDERS, build, compiled
from crag.graphs.crag import graph
from crag.questions.checks import InvalidQuestion
from crag.questions.messages import as_messages, resent, turns
from tests.fakes import ANSWER, ProbableChat, fake_context, said

QUESTION = "What is Anna Berg's occupation?"
FOLLOW_UP = "Where do her works hang?"


def context_for(name: str):
    # FLARE reads its model's token probabilities: a provider's that reports them
    return fake_context(chat_model=ProbableChat(answer=[said(ANSWER)])) if name == "flare" else fake_context()


def texts(messages) -> list[tuple[str, str]]:
    return [(m.type, m.text) for m in messages]


@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_graph_answers_the_last_user_message_with_an_ai_message(name):
    out = compiled(name).invoke({"messages": [{"role": "user", "content": QUESTION}]}, context=context_for(name))
    asked, answered = out["messages"]
    assert isinstance(asked, HumanMessage) and asked.text == QUESTION
    assert isinstance(answered, AIMessage) and answered.content == out["answer"] and out["answer"]
    about = answered.response_metadata
    assert about["question"] == out["question"] == QUESTION
    assert about["action"] == out["action"] and about["grounded"] == out["grounded"]
    assert about["sources"] == out["sources"] and about["citations"] == out["citations"]


def test_the_ai_message_carries_the_sources_its_citations_name():
    out = graph.invoke({"messages": [HumanMessage(QUESTION)]}, context=fake_context())
    about = out["messages"][-1].response_metadata
    assert about["action"] == "correct" and about["grounded"] is True
    assert [s["title"] for s in about["sources"]] == ["Anna Berg"]
    assert {n for c in about["citations"] for n in c["sources"]} == {s["id"] for s in about["sources"]}


def test_a_message_of_content_blocks_is_asked_by_its_text():
    # as Agent Chat UI sends a message: {"type": "human", "content": [{"type": "text", "text": …}], "id": …}
    sent = {"type": "human", "content": [{"type": "text", "text": QUESTION}], "id": "ui-1"}
    out = graph.invoke({"messages": [sent]}, context=fake_context())
    assert out["question"] == QUESTION and out["messages"][0].id == "ui-1" and out["messages"][1].content == ANSWER


def test_a_question_alone_adds_no_conversation():
    out = graph.invoke({"question": QUESTION}, context=fake_context())
    assert out["answer"] == ANSWER and out["messages"] == []


def test_a_thread_of_messages_keeps_each_turn_once_and_a_follow_up_sees_the_first():
    thread = build("crag").compile(checkpointer=InMemorySaver())
    config, ctx = {"configurable": {"thread_id": "t"}}, fake_context()
    thread.invoke({"messages": [{"role": "user", "content": QUESTION}]}, config, context=ctx)
    second = thread.invoke({"messages": [{"role": "user", "content": FOLLOW_UP}]}, config, context=ctx)
    assert second["question"] == "Where do Anna Berg's works hang?"
    assert [t["asked"] for t in second["history"]] == [QUESTION, FOLLOW_UP]
    assert texts(second["messages"]) == [("human", QUESTION), ("ai", ANSWER), ("human", FOLLOW_UP), ("ai", ANSWER)]

    # a client that sends the whole conversation again, as dicts without ids: the thread keeps one copy
    again = [{"role": "user" if t == "human" else "assistant", "content": c} for t, c in texts(second["messages"])]
    third = thread.invoke(
        {"messages": [*again, {"role": "user", "content": "What did she paint?"}]}, config, context=ctx
    )
    assert third["question"] == "What did Anna Berg paint?" and len(third["history"]) == 3
    assert [t for t, _ in texts(third["messages"])] == ["human", "ai"] * 3

    # a client of messages whose earlier ones carry the thread's ids: `add_messages` replaces them in place
    fourth = thread.invoke({"messages": [*third["messages"], HumanMessage("Who was she?")]}, config, context=ctx)
    assert [t for t, _ in texts(fourth["messages"])] == ["human", "ai"] * 4

    # a question on the thread joins its conversation as the user's message
    fifth = thread.invoke({"question": "When was she born?"}, config, context=ctx)
    assert texts(fifth["messages"])[-2:] == [("human", "When was she born?"), ("ai", ANSWER)]
    assert fifth["question"] == "When was Anna Berg born?" and len(fifth["history"]) == 5


def test_a_whole_conversation_without_a_thread_is_the_history_of_its_last_question():
    conversation = [
        SystemMessage("You are a helpful assistant."),
        HumanMessage(QUESTION),
        AIMessage("A painter."),
        HumanMessage(FOLLOW_UP),
    ]
    out = graph.invoke({"messages": conversation}, context=fake_context())
    assert out["question"] == "Where do Anna Berg's works hang?"
    assert out["history"][0] == {"asked": QUESTION, "question": QUESTION, "answer": "A painter."}
    assert len(out["history"]) == 2 and len(out["messages"]) == 5


@pytest.mark.parametrize(
    "messages, message",
    [
        ([{"role": "user", "content": "   "}], "the question is empty"),
        ([{"role": "assistant", "content": "Hello."}], "no question: give a question, or messages"),
        ([{"role": "user", "content": "x" * 3000}], "3,000 characters"),
    ],
)
def test_a_conversation_without_a_usable_question_gets_a_clear_error(messages, message):
    with pytest.raises(InvalidQuestion, match=message):
        graph.invoke({"messages": messages}, context=fake_context())


def test_resent_finds_only_an_exact_second_copy_of_the_conversation():
    before = as_messages([("user", "a"), ("assistant", "b")])
    for n, m in enumerate(before):
        m.id = str(n)
    copy = as_messages([("user", "a"), ("assistant", "b")])
    for n, m in enumerate(copy):
        m.id = f"copy-{n}"
    asked = HumanMessage("c", id="new")
    assert [r.id for r in resent([*before, *copy, asked])] == ["copy-0", "copy-1"]
    assert resent([*before, asked]) == []  # the conversation once
    assert resent([*before, *copy[:1], asked]) == []  # not a whole copy
    # the same question asked again, with a different answer, is a turn of its own
    assert resent([*before, copy[0], AIMessage("B", id="x"), asked]) == []


def test_turns_pair_each_reply_with_the_users_message_before_it():
    conversation = as_messages(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "1", "name": "crag", "args": {}}]},
            {"role": "tool", "content": "found", "tool_call_id": "1"},
            {"role": "assistant", "content": "b"},
            {"role": "assistant", "content": "unasked"},
        ]
    )
    assert turns(conversation) == [{"asked": "a", "question": "a", "answer": "b"}]


def test_a_malformed_message_is_named():
    with pytest.raises(InvalidQuestion, match=r"messages\[1\] is not a chat message"):
        as_messages([{"role": "user", "content": "a"}, {"rol": "user", "content": "b"}])
    with pytest.raises(InvalidQuestion, match="messages must be a list"):
        as_messages("hello")


def test_a_turn_that_failed_leaves_its_message_and_the_next_question_is_still_the_one_asked():
    from langchain_core.retrievers import BaseRetriever

    class Broken(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            raise RuntimeError("the store is down")

    thread = build("crag").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(RuntimeError, match="the store is down"):
        thread.invoke({"messages": [HumanMessage(QUESTION)]}, config, context=fake_context(retriever=Broken()))
    assert texts(thread.get_state(config).values["messages"]) == [("human", QUESTION)]  # left last, unanswered

    out = thread.invoke({"question": "Who is Anna Berg?"}, config, context=fake_context())
    assert out["question"] == "Who is Anna Berg?"
    assert texts(out["messages"])[-2:] == [("human", "Who is Anna Berg?"), ("ai", ANSWER)]
    # and a failed turn asked by `question` does not leave its message to be taken by the next one either
    with pytest.raises(RuntimeError):
        thread.invoke({"question": "Where was she born?"}, config, context=fake_context(retriever=Broken()))
    again = thread.invoke({"question": "When was she born?"}, config, context=fake_context())
    assert texts(again["messages"])[-2:] == [("human", "When was she born?"), ("ai", ANSWER)]
    assert again["question"] == "When was Anna Berg born?"
