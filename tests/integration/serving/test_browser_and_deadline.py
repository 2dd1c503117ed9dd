"""What keeps a page of another site from driving `crag serve`, and the whole-run deadline, on a real uvicorn
server (127.0.0.1) with fake models: a body not declared JSON is 415 before any run (a cross-site form or
text/plain POST needs no CORS preflight), a Host name the server was not given is refused (DNS rebinding),
no CORS header unless origins are configured; a run past --run-timeout is stopped with a 504 (or a stream's
error event) and frees its admission slot and its thread."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from langchain_core.runnables import RunnableLambda
from typer.testing import CliRunner

from tests.fakes import DOCS, fake_context

QUESTION = "What is Anna Berg's occupation?"
BODY = json.dumps({"input": {"question": QUESTION}}).encode()
EVIL = "https://evil.example"


def post(url: str, content_type: str | None, path: str = "invoke", **headers: str) -> httpx.Response:
    sent = {**headers, **({"content-type": content_type} if content_type else {})}
    return httpx.post(f"{url}/crag/{path}", content=BODY, headers=sent, timeout=30)


def counting_context(seconds: float = 0.0, slow_calls: int = 0):
    """Fakes whose retriever records each call and sleeps `seconds` on its first `slow_calls` calls."""
    calls: list[float] = []

    def retrieve(question):
        calls.append(time.monotonic())
        if len(calls) <= slow_calls:
            time.sleep(seconds)
        return list(DOCS)

    context = fake_context()
    context.retriever = RunnableLambda(retrieve)
    return context, calls


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None]
)
def test_a_body_not_declared_json_is_415_before_any_run(serve, content_type):
    context, calls = counting_context()
    url = serve(context=context, warm_up=False)
    response = post(url, content_type)
    assert response.status_code == 415, response.text
    assert "must be JSON (Content-Type: application/json)" in response.json()["detail"]
    assert calls == []  # refused before the run: a simple cross-site POST reaches no model


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8", "application/x+json"])
def test_json_bodies_are_answered(serve, content_type):
    assert post(serve(), content_type).status_code == 200


def test_a_host_name_the_server_was_not_given_is_refused(serve):
    url = serve()
    port = url.rsplit(":", 1)[1]
    rebound = {"host": f"evil.example:{port}"}  # what a page at evil.example, rebound to 127.0.0.1, sends
    assert httpx.get(f"{url}/health", headers=rebound).status_code == 400
    assert post(url, "application/json", **rebound).status_code == 400
    for local in ("localhost", "127.0.0.1", "LOCALHOST"):
        assert post(url, "application/json", host=f"{local}:{port}").status_code == 200, local


def test_allowed_hosts_add_names_and_patterns(serve):
    url = serve(allowed_hosts=["crag.example.com", "*.internal.example"])
    for name, status in [("crag.example.com", 200), ("api.internal.example", 200), ("example.com", 400)]:
        assert httpx.get(f"{url}/health", headers={"host": name}).status_code == status, name
    assert httpx.get(f"{url}/health", headers={"host": "localhost"}).status_code == 400  # as configured: only those
    assert httpx.get(f"{serve(allowed_hosts=['*'])}/health", headers={"host": "any.example"}).status_code == 200


def test_no_cors_headers_unless_origins_are_configured(serve):
    url = serve()
    simple = post(url, "application/json", origin=EVIL)
    assert simple.status_code == 200 and "access-control-allow-origin" not in simple.headers
    preflight = httpx.options(
        f"{url}/crag/invoke",
        headers={
            "origin": EVIL,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type",
        },
    )
    assert "access-control-allow-origin" not in preflight.headers  # the browser will not send the JSON POST


def test_configured_cors_origins_get_their_headers_and_a_preflight_needs_no_key(serve, tmp_path):
    keys = tmp_path / "keys"
    keys.write_text("alice alice-key-0123456789\n")
    keys.chmod(0o600)
    url = serve(cors_origins=["https://app.example"], keys_file=keys)
    asks = {"access-control-request-method": "POST", "access-control-request-headers": "content-type, x-api-key"}
    preflight = httpx.options(f"{url}/crag/invoke", headers={"origin": "https://app.example", **asks})
    assert preflight.status_code == 200, preflight.text
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert "x-api-key" in preflight.headers["access-control-allow-headers"].lower()
    answered = post(url, "application/json", origin="https://app.example", **{"x-api-key": "alice-key-0123456789"})
    assert answered.status_code == 200 and answered.headers["access-control-allow-origin"] == "https://app.example"
    refused = post(url, "application/json", origin="https://app.example")  # no key: 401, readable by the page
    assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == "https://app.example"
    other = httpx.options(f"{url}/crag/invoke", headers={"origin": EVIL, **asks})
    assert "access-control-allow-origin" not in other.headers


def test_a_run_past_the_deadline_is_504_and_frees_its_slot_and_thread(serve):
    context, calls = counting_context(seconds=3.0, slow_calls=1)
    url = serve(context=context, run_timeout=0.5, max_runs=1, warm_up=False)
    body = {"input": {"question": QUESTION}, "config": {"configurable": {"thread_id": "slow"}}}
    started = time.monotonic()
    response = httpx.post(f"{url}/crag/invoke", json=body, timeout=30)
    assert response.status_code == 504, response.text
    assert "longer than this server allows (0.5 s, --run-timeout)" in response.json()["detail"]
    assert time.monotonic() - started < 2.0  # not the retriever's 3 s
    assert httpx.get(f"{url}/health").json()["runs_in_flight"] == 0
    # the slot (max_runs=1) and the thread's lock are free while the stopped run's retrieval still sleeps
    again = httpx.post(f"{url}/crag/invoke", json=body, timeout=30)
    assert again.status_code == 200, again.text
    assert len(calls) == 2 and calls[1] - calls[0] < 2.0


def test_a_stream_past_the_deadline_ends_with_an_error_event(serve):
    context, _ = counting_context(seconds=3.0, slow_calls=1)
    url = serve(context=context, run_timeout=0.5, warm_up=False)
    started = time.monotonic()
    response = httpx.post(f"{url}/crag/stream_events", json={"input": {"question": QUESTION}}, timeout=30)
    assert response.status_code == 200  # the stream had begun
    assert time.monotonic() - started < 2.0
    events = response.text.replace("\r\n", "\n").split("\n\n")
    last = [e for e in events if e.strip()][-1]
    assert last.startswith("event: error"), last
    error = json.loads(last.split("data: ", 1)[1])
    assert error["status_code"] == 504 and "--run-timeout" in error["message"]


def test_crag_serve_refuses_malformed_hosts_and_origins_before_starting(tmp_path):
    from crag.cli.main import app

    runner = CliRunner()
    for option, value, said in [
        ("--allowed-hosts", "crag.example.com:8000", "without a scheme, port or path"),
        ("--allowed-hosts", "crag.*.com", "'*.example.com'"),
        ("--cors-origins", "app.example.com", "scheme://host[:port]"),
    ]:
        result = runner.invoke(app, ["serve", option, value, "--chroma-dir", str(tmp_path)])
        assert result.exit_code != 0 and said in result.output, (option, value, result.output)
