"""Chat clients' `messages` on the real servers with fake models: `crag serve` (LangServe, its invoke and
stream routes) and `langgraph dev` (the Agent Server) driven by `langgraph_sdk` as Agent Chat UI drives it,
a thread of two turns streamed with `messages-tuple` and `values`."""

from __future__ import annotations

import asyncio
import json
import shutil

import httpx
import pytest
from langchain_core.messages import HumanMessage
from langserve import RemoteRunnable

from tests.fakes import ANSWER
from tests.servers import BIN, ROOT, langgraph_dev

QUESTION = "What is Anna Berg's occupation?"
FOLLOW_UP = "Where do her works hang?"


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def invoke(url: str, body: dict) -> httpx.Response:
    return httpx.post(f"{url}/crag/invoke", json=body, timeout=30)


def test_crag_serve_takes_messages_on_a_thread_and_answers_with_an_ai_message(serve):
    url = serve()
    thread = {"config": {"configurable": {"thread_id": "chat"}}}
    first = invoke(url, {"input": {"messages": [user(QUESTION)]}, **thread})
    assert first.status_code == 200, first.text
    said = first.json()["output"]["messages"]
    assert [(m["type"], m["content"]) for m in said] == [("human", QUESTION), ("ai", ANSWER)]
    assert said[1]["response_metadata"]["action"] == "correct"
    assert said[1]["response_metadata"]["sources"][0]["title"] == "Anna Berg"

    streamed = httpx.post(f"{url}/crag/stream", json={"input": {"messages": [user(FOLLOW_UP)]}, **thread}, timeout=30)
    assert streamed.status_code == 200, streamed.text
    chunks = [json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: {")]
    last = chunks[-1]
    assert last["question"] == "Where do Anna Berg's works hang?"  # the second turn saw the first
    assert [m["type"] for m in last["messages"]] == ["human", "ai", "human", "ai"]

    # LangChain's messages through RemoteRunnable, without a thread
    remote = RemoteRunnable(f"{url}/crag").invoke({"messages": [HumanMessage(QUESTION)]})
    assert remote["messages"][-1].content == ANSWER and remote["messages"][-1].response_metadata["grounded"]


def test_crag_serve_refuses_a_conversation_without_a_question_saying_why(serve):
    url = serve()
    for sent, reason in [
        ({"messages": []}, "at least 1 item"),
        ({"messages": [{"role": "assistant", "content": "Hi."}]}, "the last message must be the user's question"),
        ({"messages": [{"rol": "user", "content": "Hi?"}]}, "messages[0] is not a chat message"),
        ({"messages": [user("  ")]}, "the question is empty"),
        ({"question": QUESTION, "messages": [user(QUESTION)]}, "give a question or messages (one of them)"),
    ]:
        refused = invoke(url, {"input": sent})
        assert refused.status_code == 422 and reason in refused.text, (sent, refused.text)


@pytest.fixture(scope="module")
def agent_server(tmp_path_factory):
    if shutil.which("langgraph", path=str(BIN)) is None:
        pytest.skip("langgraph-cli is not installed (the serve extra)")
    folder = tmp_path_factory.mktemp("chat-agent-server")
    graphs = {"crag": f"{ROOT}/tests/integration/serving/fake_models_graph.py:graph"}
    env = {"CRAG_API_KEYS": "", "CRAG_API_KEY": "", "PYTHONPATH": str(ROOT)}
    with langgraph_dev(folder, graphs, env) as url:
        yield url


def test_a_langgraph_chat_client_holds_a_conversation_on_a_thread(agent_server):
    from langgraph_sdk import get_client

    async def chat() -> list[list]:
        client = get_client(url=agent_server)
        thread = await client.threads.create()
        turns = []
        for text in (QUESTION, FOLLOW_UP):  # as Agent Chat UI sends: only the new message, the thread has the rest
            stream = client.runs.stream(
                thread["thread_id"],
                "crag",
                input={"messages": [{"type": "human", "content": text}]},
                stream_mode=["messages-tuple", "values"],
            )
            turns.append([part async for part in stream])
        return turns

    first, second = asyncio.run(chat())
    for parts in (first, second):
        assert not [p for p in parts if p.event == "error"], parts
        streamed = [p.data[0] for p in parts if p.event == "messages"]
        replies = [m for m in streamed if m["type"] == "ai" and m.get("response_metadata", {}).get("sources")]
        assert len(replies) == 1 and replies[0]["content"] == ANSWER  # the answer, with its sources
        assert replies[0]["response_metadata"]["sources"][0]["title"] == "Anna Berg"
    final = [p.data for p in second if p.event == "values"][-1]
    assert final["question"] == "Where do Anna Berg's works hang?"  # the second turn saw the first
    assert [(m["type"], m["content"]) for m in final["messages"]] == [
        ("human", QUESTION),
        ("ai", ANSWER),
        ("human", FOLLOW_UP),
        ("ai", ANSWER),
    ]
    assert [t["asked"] for t in final["history"]] == [QUESTION, FOLLOW_UP]
