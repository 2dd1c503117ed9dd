"""The grade run's trace metadata (crag_action, the thresholds, the scores) as LangSmith receives it: a real
`LangChainTracer` and langsmith `Client` posting to an HTTP server on 127.0.0.1 that keeps what arrives."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from langchain_core.tracers import LangChainTracer
from langsmith import Client

from crag.graphs.crag import graph

QUESTION = "What is Anna Berg's occupation?"


class Collector(BaseHTTPRequestHandler):
    """Answers every LangSmith call with `{}`; keeps the JSON bodies of the runs posted and patched."""

    runs: list[tuple[str, str, dict]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path.startswith("/runs") and body:
            type(self).runs.append((self.command, self.path, json.loads(body)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = do_PATCH = _answer

    def log_message(self, *args) -> None:
        pass


@pytest.fixture()
def langsmith_server():
    Collector.runs = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", Collector.runs
    finally:
        server.shutdown()
        server.server_close()


def traced(url: str, context) -> tuple[dict, LangChainTracer]:
    # auto_batch_tracing=False: one POST /runs per run and one PATCH when it ends, as plain JSON
    client = Client(api_url=url, api_key="test-key", auto_batch_tracing=False, timeout_ms=5000)
    tracer = LangChainTracer(client=client, project_name="crag-tests")
    result = graph.invoke({"question": QUESTION}, context=context, config={"callbacks": [tracer]})
    tracer.wait_for_futures()
    return result, tracer


def metadata_of(runs: list[tuple[str, str, dict]], name: str) -> dict:
    """The metadata of the run called `name` as last sent (its PATCH, when it ended)."""
    posted = {body["id"]: body for method, _, body in runs if method == "POST" and body.get("name") == name}
    assert len(posted) == 1, f"one {name} run posted, not {len(posted)}"
    [run_id] = posted
    sent = [body for method, path, body in runs if method == "PATCH" and path.rstrip("/").endswith(run_id)]
    assert sent, f"the {name} run was never ended"
    return (sent[-1].get("extra") or {}).get("metadata") or {}


@pytest.mark.parametrize(
    ("rules", "action"),
    [({"painter": 0.9}, "correct"), ({"seascapes": 0.8}, "incorrect"), ({"painter": 0.1}, "ambiguous")],
)
def test_the_grade_run_carries_the_action_thresholds_and_scores(make_context, langsmith_server, rules, action):
    url, runs = langsmith_server
    result, _ = traced(url, make_context(rules, "Anna Berg, occupation", "A painter of seascapes."))
    assert result["action"] == action
    metadata = metadata_of(runs, "grade")
    assert metadata["crag_action"] == action
    assert metadata["crag_upper_threshold"] == 0.5 and metadata["crag_lower_threshold"] == -0.5
    assert metadata["crag_scores"] == pytest.approx(result["scores"]) and len(result["scores"]) == 2
    # on the grade run only: the graph's root run and the other nodes' keep their own metadata
    assert "crag_action" not in metadata_of(runs, "retrieve")


def test_the_grade_span_carries_them_as_opentelemetry_attributes(make_context):
    # LangSmith's OpenTelemetry mode (LANGSMITH_TRACING_MODE=otel): the runs become spans of a tracer provider,
    # here the SDK's with an in-memory exporter in place of an OTLP collector
    pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK (langsmith[otel]) is not installed")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client = Client(api_key="test-key", tracing_mode="otel", otel_tracer_provider=provider, timeout_ms=5000)
    tracer = LangChainTracer(client=client, project_name="crag-tests")
    context = make_context({"painter": 0.9}, "Anna Berg, occupation", "A painter of seascapes.")
    result = graph.invoke({"question": QUESTION}, context=context, config={"callbacks": [tracer]})
    tracer.wait_for_futures()
    client.flush()
    provider.force_flush()
    spans = {span.name: dict(span.attributes or {}) for span in exporter.get_finished_spans()}
    grade = spans["grade"]
    assert grade["langsmith.metadata.crag_action"] == result["action"] == "correct"
    assert grade["langsmith.metadata.crag_upper_threshold"] == 0.5
    assert "langsmith.metadata.crag_action" not in spans["retrieve"]
