"""The real servers as users start them, on the real default models over the demo knowledge base:
`crag serve` (LangServe) and `langgraph dev` (Agent Server / LangGraph Studio), each on a free port
of 127.0.0.1 and stopped by PID."""

from __future__ import annotations

import asyncio
import json
import shutil

import httpx
import pytest
from langserve import RemoteRunnable

from crag.evaluator.runnable import DEFAULT_CHECKPOINT
from tests.servers import BIN, ROOT, free_port, subprocess_server

pytestmark = pytest.mark.skipif(not DEFAULT_CHECKPOINT.is_dir(), reason="the shipped evaluator is not built yet")
QUESTION = "What is Ada Lovelace's occupation?"


def crag_serve(tmp_path, demo_chroma, db, name):
    port = free_port()
    command = [
        str(BIN / "crag"),
        "serve",
        "--port",
        str(port),
        "--chroma-dir",
        str(demo_chroma),
        "--collection",
        "demo",
        "--web-index",
        str(ROOT / "crag" / "demo" / "web.jsonl"),
        "--threads-db",
        str(db),
        "--log-level",
        "warning",
    ]
    return port, subprocess_server(
        command, f"http://127.0.0.1:{port}/health", tmp_path / f"{name}.log", env={"CRAG_API_KEY": "k3y"}
    )


def test_crag_serve_end_to_end_and_across_a_restart(tmp_path, demo_chroma):
    db = tmp_path / "threads.sqlite"
    headers = {"X-API-Key": "k3y"}
    port, server = crag_serve(tmp_path, demo_chroma, db, "first")
    with server:
        url = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{url}/health").json()["loads"] == {
            "store": 1,
            "evaluator": 1,
            "embeddings": 1,
            "chat_model": 1,
        }
        assert httpx.post(f"{url}/crag/invoke", json={"input": {"question": QUESTION}}).status_code == 401
        remote = RemoteRunnable(f"{url}/crag", headers=headers, timeout=300)
        result = remote.invoke({"question": QUESTION}, config={"configurable": {"thread_id": "ada"}})
        assert result["action"] == "correct" and result["answer"] and result["sources"][0]["title"] == "Ada Lovelace"
        batch = remote.batch(
            [{"question": "What instrument did Django Reinhardt play?"}, {"question": "Who was Henri Becquerel?"}]
        )
        assert [r["action"] for r in batch] == ["incorrect", "ambiguous"]
        assert list(remote.stream({"question": QUESTION}))[-1]["answer"]

        async def tokens():
            return [
                e["data"]["chunk"].content
                async for e in remote.astream_events({"question": QUESTION}, version="v2")
                if e["event"] == "on_chat_model_stream" and "crag:answer" in e["tags"]
            ]

        assert len(asyncio.run(tokens())) > 3
        # models were loaded once, at start-up, not per request
        assert httpx.get(f"{url}/health").json()["loads"] == {
            "store": 1,
            "evaluator": 1,
            "embeddings": 1,
            "chat_model": 1,
        }
    port, server = crag_serve(tmp_path, demo_chroma, db, "second")
    with server:  # a new process on the same threads database
        remote = RemoteRunnable(f"http://127.0.0.1:{port}/crag", headers=headers, timeout=300)
        follow_up = remote.invoke({"question": "Where was she born?"}, config={"configurable": {"thread_id": "ada"}})
    assert follow_up["question"] == "Where was Ada Lovelace born?"
    assert [t["asked"] for t in follow_up["history"]] == [QUESTION, "Where was she born?"]
    assert follow_up["documents"][0].metadata["title"] == "Ada Lovelace" and len(follow_up["documents"]) == 10


def test_langgraph_dev_agent_server(tmp_path, demo_chroma):
    from langgraph_sdk import get_client

    if shutil.which("langgraph", path=str(BIN)) is None:
        pytest.skip("langgraph-cli is not installed")
    # the repository's langgraph.json with its paths made absolute, so the server's files land in tmp_path
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["graphs"]["crag"] == "./crag/graphs/crag.py:graph" and config["dependencies"] == ["."]
    config["graphs"] = {"crag": f"{ROOT}/crag/graphs/crag.py:graph"}
    config["auth"]["path"] = f"{ROOT}/crag/serve/agent_auth.py:auth"
    config["dependencies"] = [str(ROOT)]
    # the knowledge base is the server's (a run may not name a folder: crag.serve.agent_auth)
    config["env"] |= {"CRAG_CHROMA_DIR": str(demo_chroma), "CRAG_WEB_INDEX": str(ROOT / "crag" / "demo" / "web.jsonl")}
    (tmp_path / "langgraph.json").write_text(json.dumps(config))
    port = free_port()
    command = [
        str(BIN / "langgraph"),
        "dev",
        "--config",
        str(tmp_path / "langgraph.json"),
        "--port",
        str(port),
        "--host",
        "127.0.0.1",
        "--no-browser",
        "--no-reload",
    ]
    env = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "CRAG_API_KEYS": "", "CRAG_API_KEY": ""}  # no keys: this machine only
    url = f"http://127.0.0.1:{port}"
    context = {"k": 10}  # a per-request setting, as crag serve allows
    with subprocess_server(command, f"{url}/ok", tmp_path / "langgraph-dev.log", env=env, cwd=tmp_path):
        waited = httpx.post(
            f"{url}/runs/wait",
            timeout=300,
            json={"assistant_id": "crag", "input": {"question": QUESTION}, "context": context},
        )
        assert waited.status_code == 200, waited.text
        assert waited.json()["action"] == "correct" and waited.json()["answer"]

        async def sdk():
            client = get_client(url=url)
            assistants = await client.assistants.search(graph_id="crag")
            thread = await client.threads.create()
            first = await client.runs.wait(thread["thread_id"], "crag", input={"question": QUESTION}, context=context)
            parts = [
                part
                async for part in client.runs.stream(
                    thread["thread_id"],
                    "crag",
                    input={"question": "Where was she born?"},
                    context=context,
                    stream_mode=["custom", "messages-tuple", "values"],
                )
            ]
            return assistants, first, parts

        assistants, first, parts = asyncio.run(sdk())
    assert assistants and first["action"] == "correct"
    custom = [p.data for p in parts if p.event == "custom"]
    assert custom[0] == {
        "node": "contextualize",
        "asked": "Where was she born?",
        "question": "Where was Ada Lovelace born?",
    }
    assert {c["node"] for c in custom} >= {"retrieve", "grade"}
    answer_tokens = [
        p.data[0]["content"] for p in parts if p.event == "messages" and "crag:answer" in p.data[1].get("tags", [])
    ]
    other_tokens = [p.data for p in parts if p.event == "messages" and "crag:answer" not in p.data[1].get("tags", [])]
    assert answer_tokens and other_tokens == []
    final = [p.data for p in parts if p.event == "values"][-1]
    assert len(final["history"]) == 2 and json.dumps(final)
