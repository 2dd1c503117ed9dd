"""`crag serve` as a user starts it, on the real evaluator and the tiny local chat model over a collection of
long passages: the command's --allowed-hosts, --cors-origins and --run-timeout reach the server, a body that is
not JSON is 415, and the size settings at their largest are answered 200 or 422 (the prompt they make is
longer than the model's 4,096-token window), never 500."""

from __future__ import annotations

import json
import subprocess

import httpx
import pytest

from crag.evaluator.runnable import DEFAULT_CHECKPOINT
from tests.servers import BIN, free_port, subprocess_server

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not DEFAULT_CHECKPOINT.is_dir(), reason="the shipped evaluator is not built yet"),
]
QUESTION = "What is Ada Lovelace's occupation?"


@pytest.fixture(scope="module")
def long_passages(tmp_path_factory):
    """A collection of 60 passages of about 1,000 characters on one subject: 50 retrieved and kept whole
    are some 12,000 tokens, three times the tiny model's window."""
    folder = tmp_path_factory.mktemp("long")
    records = folder / "ada.jsonl"
    sentence = "Ada Lovelace was an English mathematician who wrote notes on the Analytical Engine of Babbage. "
    with records.open("w") as out:
        for i in range(60):
            out.write(json.dumps({"title": f"Ada Lovelace {i}", "text": f"Note {i}. " + sentence * 10}) + "\n")
    chroma = folder / "chroma"
    ingest = [str(BIN / "crag"), "ingest", str(records), "--chroma-dir", str(chroma), "--collection", "ada"]
    subprocess.run([*ingest, "--no-progress"], check=True, capture_output=True, timeout=600)
    return chroma


def crag_serve(tmp_path, chroma, *more: str):
    port = free_port()
    command = [str(BIN / "crag"), "serve", "--port", str(port), "--chroma-dir", str(chroma), "--collection", "ada"]
    command += ["--chat-model", "local:tiny", "--no-threads", "--log-level", "warning", *more]
    url = f"http://127.0.0.1:{port}"
    return url, subprocess_server(command, f"{url}/health", tmp_path / f"serve-{port}.log")


def ask(url: str, configurable: dict, **headers: str) -> httpx.Response:
    body = {"input": {"question": QUESTION}, "config": {"configurable": configurable}}
    return httpx.post(f"{url}/crag/invoke", json=body, headers=headers, timeout=600)


def test_the_edge_of_crag_serve_and_the_largest_settings(tmp_path, long_passages):
    options = ["--allowed-hosts", "crag.example.com", "--cors-origins", "https://app.example", "--run-timeout", "600"]
    url, server = crag_serve(tmp_path, long_passages, *options)
    with server:
        port = url.rsplit(":", 1)[1]
        assert httpx.get(f"{url}/health", headers={"host": "crag.example.com"}).status_code == 200
        assert httpx.get(f"{url}/health", headers={"host": f"evil.example:{port}"}).status_code == 400
        plain = httpx.post(
            f"{url}/crag/invoke", content=b'{"input": {"question": "who?"}}', headers={"content-type": "text/plain"}
        )
        assert plain.status_code == 415
        answered = ask(url, {"k": 50, "max_answer_tokens": 1024}, origin="https://app.example")
        assert answered.status_code == 200, answered.text[:500]
        assert answered.headers["access-control-allow-origin"] == "https://app.example"
        assert "access-control-allow-origin" not in ask(url, {}, origin="https://evil.example").headers
        largest = {"k": 50, "top_k_strips": 1000, "refine_mode": "selection", "strip_threshold": -1.5}
        largest |= {"knowledge_tokens": 4000, "further_strips": 50, "max_answer_tokens": 1024}
        largest |= {"upper_threshold": -1.5, "lower_threshold": -1.5}  # Correct: every passage kept
        overflowing = ask(url, largest)
        assert overflowing.status_code == 422, overflowing.text[:500]
        assert "exceed context window of 4096" in overflowing.json()["detail"][0]["msg"]


def test_crag_serve_run_timeout_stops_a_run(tmp_path, long_passages):
    url, server = crag_serve(tmp_path, long_passages, "--run-timeout", "0.2")
    with server:
        response = ask(url, {})
        assert response.status_code == 504, response.text[:500]
        assert "(0.2 s, --run-timeout)" in response.json()["detail"]
        assert httpx.get(f"{url}/health").json()["runs_in_flight"] == 0
        assert "access-control-allow-origin" not in ask(url, {}, origin="https://app.example").headers
