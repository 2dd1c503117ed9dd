"""`crag serve`'s app on a real uvicorn server (127.0.0.1) with fake models: routes, RemoteRunnable,
safe settings, errors, API key, body limit, threads across a restart."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from langchain_core.runnables import RunnableLambda
from langserve import RemoteRunnable

from crag.search.store import StoreUnavailable
from crag.serve.service import SAFE_SETTINGS
from tests.fakes import ANSWER, fake_context

QUESTION = "What is Anna Berg's occupation?"


def post(url: str, path: str, body, **kw) -> httpx.Response:
    return httpx.post(f"{url}/crag/{path}", json=body, timeout=30, **kw)


def sse_events(text: str) -> list[tuple[str, str]]:
    events = []
    for block in text.strip().split("\r\n\r\n" if "\r\n" in text else "\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        events.append((fields.get("event", ""), fields.get("data", "")))
    return events


def test_invoke_batch_and_stream_over_http(serve):
    url = serve()
    invoked = post(url, "invoke", {"input": {"question": QUESTION}})
    assert invoked.status_code == 200, invoked.text
    output = invoked.json()["output"]
    assert output["action"] == "correct" and output["answer"] == ANSWER
    assert output["sources"][0]["title"] == "Anna Berg"
    batch = post(url, "batch", {"inputs": [{"question": QUESTION}, {"question": "Who is Carl Dahl?"}]})
    assert batch.status_code == 200 and [o["question"] for o in batch.json()["output"]] == [
        QUESTION,
        "Who is Carl Dahl?",
    ]
    streamed = post(url, "stream", {"input": {"question": QUESTION}})
    events = sse_events(streamed.text)
    assert events[0][0] == "metadata" and events[-1][0] == "end"
    chunks = [json.loads(data) for kind, data in events if kind == "data"]
    assert len(chunks) > 3 and chunks[-1]["answer"] == ANSWER
    assert all("asked" not in c for c in chunks) and chunks[-1]["grounded"] is True  # only public keys


def test_remote_runnable_invoke_batch_stream_and_events(serve):
    remote = RemoteRunnable(f"{serve()}/crag")
    result = remote.invoke({"question": QUESTION})
    assert result["answer"] == ANSWER and result["documents"][0].metadata["title"] == "Anna Berg"
    narrowed = remote.invoke({"question": QUESTION}, config={"configurable": {"k": 1, "refine_mode": "selection"}})
    assert len(narrowed["documents"]) == 1  # a safe per-request setting took effect
    assert [r["action"] for r in remote.batch([{"question": QUESTION}] * 2)] == ["correct", "correct"]
    assert list(remote.stream({"question": QUESTION}))[-1]["answer"] == ANSWER

    async def events():
        return [
            e
            async for e in remote.astream_events(
                {"question": "Who is Anna Berg?"}, version="v2", config={"configurable": {"upper_threshold": 1.0}}
            )
        ]

    collected = asyncio.run(events())
    custom = [e["data"] for e in collected if e["event"] == "on_custom_event" and e["name"] == "crag"]
    assert {c["node"] for c in custom} >= {"retrieve", "grade", "refine", "rewrite_and_search"}
    assert next(c for c in custom if c["node"] == "grade")["action"] == "ambiguous"  # upper 1.0: nothing is Correct
    tokens = [
        e["data"]["chunk"].content
        for e in collected
        if e["event"] == "on_chat_model_stream" and "crag:answer" in e["tags"]
    ]
    assert "".join(tokens) == ANSWER and len(tokens) > 1


@pytest.mark.parametrize(
    "body, message",
    [
        ({"input": {"question": "   "}}, "the question is empty"),
        ({"input": {"question": "x" * 3000}}, "at most 2000 characters"),
        ({"input": {}}, "give a question or messages"),
        ({"input": {"question": 42}}, "valid string"),
        ({"input": {"question": QUESTION, "extra": 1}}, "Extra inputs"),
        (
            {"input": {"question": QUESTION}, "config": {"configurable": {"chroma_dir": "/etc"}}},
            "chroma_dir cannot be set per request",
        ),
        (
            {"input": {"question": QUESTION}, "config": {"configurable": {"evaluator": "/tmp/model"}}},
            "evaluator cannot be set",
        ),
        ({"input": {"question": QUESTION}, "config": {"configurable": {"k": 0}}}, "greater than or equal to 1"),
        ({"input": {"question": QUESTION}, "config": {"configurable": {"refine_mode": "magic"}}}, "excerption"),
        ({"input": {"question": QUESTION}, "config": {"configurable": {"search": "sparse"}}}, "hybrid"),
        (
            {"input": {"question": QUESTION}, "config": {"configurable": {"strip_set_weight": -1}}},
            "greater than or equal to 0",
        ),
        (
            {
                "input": {"question": QUESTION},
                "config": {"configurable": {"upper_threshold": 0.1, "lower_threshold": 0.5}},
            },
            "above upper threshold",
        ),
        ({"input": {"question": QUESTION}, "config": {"configurable": {"thread_id": "../etc"}}}, "invalid thread id"),
    ],
)
def test_bad_requests_get_4xx_with_a_reason(serve, body, message):
    url = serve()
    for path in ("invoke", "stream"):
        response = post(url, path, body)
        assert response.status_code == 422, (path, response.status_code, response.text)
        assert message in response.text


def test_malformed_json_and_batch_configs_are_checked(serve):
    url = serve()
    assert (
        httpx.post(f"{url}/crag/invoke", content=b"{nope", headers={"content-type": "application/json"}).status_code
        == 422
    )
    bad_batch = {"inputs": [{"question": QUESTION}], "config": [{"configurable": {"web_index": "/etc/passwd"}}]}
    response = post(url, "batch", bad_batch)
    assert response.status_code == 422 and "web_index" in response.text


def test_body_size_limit(serve):
    url = serve(max_body_bytes=2048)
    big = {"input": {"question": "x" * 1500}, "config": {"tags": ["y" * 1000]}}
    assert post(url, "invoke", big).status_code == 413

    def chunks():  # no Content-Length: the limit still applies
        yield b'{"input": {"question": "'
        for _ in range(10):
            yield b"x" * 500
        yield b'"}}'

    response = httpx.post(f"{url}/crag/invoke", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413 and "2,048 bytes" in response.json()["detail"]
    assert post(url, "invoke", {"input": {"question": QUESTION}}).status_code == 200


def test_api_key(serve):
    url = serve(api_key="s3cret")
    assert post(url, "invoke", {"input": {"question": QUESTION}}).status_code == 401
    assert post(url, "invoke", {"input": {"question": QUESTION}}, headers={"X-API-Key": "wrong"}).status_code == 401
    assert httpx.get(f"{url}/crag/input_schema").status_code == 401
    assert post(url, "invoke", {"input": {"question": QUESTION}}, headers={"X-API-Key": "s3cret"}).status_code == 200
    assert (
        post(url, "invoke", {"input": {"question": QUESTION}}, headers={"Authorization": "Bearer s3cret"}).status_code
        == 200
    )
    health = httpx.get(f"{url}/health")
    assert health.status_code == 200 and health.json()["api_key"] is True
    assert (
        RemoteRunnable(f"{url}/crag", headers={"X-API-Key": "s3cret"}).invoke({"question": QUESTION})["answer"]
        == ANSWER
    )
    with pytest.raises(httpx.HTTPStatusError, match="401"):
        RemoteRunnable(f"{url}/crag").invoke({"question": QUESTION})


def test_threads_survive_a_server_restart(serve, tmp_path):
    db = tmp_path / "threads.sqlite"
    first = RemoteRunnable(f"{serve(threads_db=db)}/crag")
    first.invoke({"question": QUESTION}, config={"configurable": {"thread_id": "anna"}})
    second = RemoteRunnable(f"{serve(threads_db=db)}/crag")  # another app and connection on the same file
    result = second.invoke({"question": "Where do her works hang?"}, config={"configurable": {"thread_id": "anna"}})
    assert result["question"] == "Where do Anna Berg's works hang?"
    assert [t["asked"] for t in result["history"]] == [QUESTION, "Where do her works hang?"]
    assert len(result["documents"]) == 2  # this turn's only
    alone = second.invoke({"question": "Where do her works hang?"})  # no thread: nothing to refer back to
    assert alone["question"] == "Where do her works hang?" and alone["history"][0]["asked"] == alone["question"]


def test_threads_can_be_switched_off(serve):
    url = serve(threads_db=None)
    response = post(url, "invoke", {"input": {"question": QUESTION}, "config": {"configurable": {"thread_id": "t"}}})
    assert response.status_code == 422 and "thread_id cannot be set per request" in response.text
    assert "thread_id" not in httpx.get(f"{url}/crag/config_schema").text


def test_schemas_are_published(serve):
    url = serve()
    question = httpx.get(f"{url}/crag/input_schema").json()["properties"]["question"]
    assert {"maxLength": 2000, "minLength": 1, "type": "string"} in question["anyOf"]
    configurable = httpx.get(f"{url}/crag/config_schema").json()["$defs"]["Configurable"]["properties"]
    # every setting a request may change (declared so in crag/settings/context.py), the thread and the request's id;
    # nothing fixed at start
    assert set(configurable) == set(SAFE_SETTINGS) | {"thread_id", "request_id"}
    assert {"k", "upper_threshold", "knowledge_tokens", "generate_prompt"} <= set(configurable)
    assert not {"chat_model", "chroma_dir", "evaluator_path", "threads_db"} & set(configurable)
    assert {"minimum": 1, "maximum": 50, "type": "integer"} in configurable["k"]["anyOf"]  # the declared range


def test_empty_knowledge_base_stops_start_up(tmp_path):
    from crag.serve.app import KnowledgeBaseError, ServerSettings, check_knowledge_base
    from crag.settings import Context

    with pytest.raises(KnowledgeBaseError, match="crag ingest"):
        check_knowledge_base(Context(chroma_dir=str(tmp_path / "empty"), collection="nothing"))
    assert check_knowledge_base(fake_context()) == -1  # an injected retriever is not checked
    assert ServerSettings().max_body_bytes > 0


def test_crag_serve_refuses_bad_settings_before_starting(tmp_path):
    from typer.testing import CliRunner

    from crag.cli.main import app

    empty = CliRunner().invoke(app, ["serve", "--chroma-dir", str(tmp_path / "c"), "--collection", "nothing"])
    assert empty.exit_code == 2 and "there is no knowledge base" in empty.output and "crag ingest" in empty.output
    bogus = CliRunner().invoke(app, ["serve", "--web-backend", "bogus"])
    assert bogus.exit_code == 2 and "unknown web_backend" in bogus.output


def test_a_dependency_down_is_a_503_with_retry_after(serve):
    """A Chroma server or a Postgres that is down fails the run with 503 and Retry-After, not a 500: the next
    request may succeed. (The real servers, stopped and stalled: test_workers.py.)"""

    def down(question):
        raise StoreUnavailable("the Chroma server at http://127.0.0.1:9 did not answer (ConnectError: refused)")

    url = serve(context=fake_context(retriever=RunnableLambda(down)), warm_up=False)
    for path, body in [("invoke", {"input": {"question": QUESTION}}), ("batch", {"inputs": [{"question": QUESTION}]})]:
        response = post(url, path, body)
        assert response.status_code == 503 and response.headers["retry-after"] == "2", response.text
        assert response.json()["detail"].startswith("the Chroma server at http://127.0.0.1:9 did not answer")
    assert httpx.get(f"{url}/health").json()["runs_in_flight"] == 0  # the failed runs were let go
