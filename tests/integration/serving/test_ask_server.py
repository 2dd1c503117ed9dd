"""`crag ask --server URL` against `crag serve`'s app on 127.0.0.1 (fake models): the same plain, JSON and
streamed output as a local run, threads, and each way a server can fail as one error line (exit 2)."""

from __future__ import annotations

import json

from langchain_core.runnables import RunnableLambda
from typer.testing import CliRunner

from crag.cli.main import app
from crag.cli.render import summary
from crag.graphs.crag import graph
from tests.fakes import ANSWER, fake_context
from tests.servers import free_port, silent_server

QUESTION = "What is Anna Berg's occupation?"


def ask(*args: str, env: dict | None = None):
    return CliRunner().invoke(app, ["ask", *args], env=env)


def one_line_error(result) -> str:
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_json_is_what_a_local_run_prints(serve):
    result = ask(QUESTION, "--server", serve(), "--json", "--k", "1")
    assert result.exit_code == 0, result.output
    remote = json.loads(result.output)
    local = summary(graph.invoke({"question": QUESTION}, context=fake_context(k=1)))
    remote.pop("timings"), local.pop("timings")
    assert remote == local and remote["answer"] == ANSWER and len(remote["documents"]) == 1


def test_plain_and_streamed_views(serve):
    url = serve()
    plain = ask(QUESTION, "--server", url)
    assert plain.exit_code == 0, plain.output
    for part in (
        "action: CORRECT",
        "+0.900  correct    Anna Berg",
        "knowledge:",
        f"  {ANSWER}",
        "sources:",
        "[1] Anna Berg",
    ):
        assert part in plain.output
    streamed = ask(QUESTION, "--server", f"{url}/crag/", "--stream")  # the endpoint's own URL works too
    assert streamed.exit_code == 0, streamed.output
    lines = streamed.output.splitlines()
    assert lines[:3] == ["· retrieved 2 documents", "· graded: CORRECT (+0.90, -0.90)", "· refined: 1 strip kept"]
    assert f"answer: {ANSWER}" in lines and "sources:" in lines


def test_a_thread_on_the_server_resolves_follow_ups(serve):
    url = serve()
    first = ask(QUESTION, "--server", url, "--thread", "anna", "--json")
    second = ask("Where do her works hang?", "--server", url, "--thread", "anna", "--json")
    assert first.exit_code == second.exit_code == 0, second.output
    run = json.loads(second.output)
    assert run["question"] == "Where do Anna Berg's works hang?"
    assert [t["asked"] for t in run["history"]] == [QUESTION, "Where do her works hang?"]
    streamed = ask("When did she live?", "--server", url, "--thread", "anna", "--stream")
    assert "· follow-up read as: When did Anna Berg live?" in streamed.output, streamed.output


def test_settings_fixed_at_start_are_refused_before_asking():
    error = one_line_error(
        ask(QUESTION, "--server", "http://127.0.0.1:9", "--chat-model", "openai:x", "--chroma-dir", "/tmp/c")
    )
    assert "--chat-model, --chroma-dir cannot be used with --server" in error
    assert "--threads-db cannot be used" in one_line_error(
        ask(QUESTION, "--server", "http://127.0.0.1:9", "--threads-db", "t.sqlite")
    )
    assert "must be http(s)://host:port" in one_line_error(ask(QUESTION, "--server", "127.0.0.1:8000"))


def test_a_setting_the_server_refuses_is_its_reason(serve):
    url = serve()
    error = one_line_error(ask(QUESTION, "--server", url, "--k", "60"))
    assert (
        error.startswith("error: the server refused the request (422):")
        and "k: Input should be less than or equal to 50" in error
    )
    conflict = one_line_error(ask(QUESTION, "--server", url, "--lower", "0.9", "--stream"))
    assert "(422)" in conflict and "lower threshold 0.9 is above upper threshold 0.5" in conflict
    assert "invalid thread id" in one_line_error(ask(QUESTION, "--server", url, "--thread", "a/b"))


def test_no_server_and_a_silent_server():
    url = f"http://127.0.0.1:{free_port()}"
    error = one_line_error(ask(QUESTION, "--server", url))
    assert f"cannot connect to {url}/crag" in error and "is `crag serve` running there?" in error
    with silent_server() as silent:
        for extra in ([], ["--stream"]):
            error = one_line_error(ask(QUESTION, "--server", silent, "--timeout", "0.5", *extra))
            assert error == f"error: no answer from {silent}/crag within 0.5 s (--timeout)"


def test_a_failing_run_and_a_missing_api_key(serve):
    def broken(question):
        raise RuntimeError("the store went away")

    url = serve(context=fake_context(retriever=RunnableLambda(broken)), warm_up=False)
    assert one_line_error(ask(QUESTION, "--server", url)) == "error: the server failed (500): Internal Server Error"
    streamed = one_line_error(ask(QUESTION, "--server", url, "--stream"))
    assert streamed.startswith("error: the server failed during the run:")
    guarded = serve(api_key="s3cret")
    assert "wants an API key" in one_line_error(ask(QUESTION, "--server", guarded, env={"CRAG_API_KEY": ""}))
    answered = ask(QUESTION, "--server", guarded, "--json", env={"CRAG_API_KEY": "s3cret"})
    assert answered.exit_code == 0 and json.loads(answered.output)["answer"] == ANSWER


def test_a_server_that_is_not_crag(serve):
    assert "no CRAG endpoint at" in one_line_error(ask(QUESTION, "--server", f"{serve()}/nothing"))


def test_each_system_answers_at_its_own_endpoint_and_shares_threads(serve):
    from tests.fakes import GradingChat

    url = serve(context=fake_context(chat_model=GradingChat()))
    tutorial = ask(QUESTION, "--server", url, "--system", "tutorial_crag", "--json", "--thread", "t1")
    assert tutorial.exit_code == 0, tutorial.output
    run = json.loads(tutorial.output)
    assert run["action"] == "ambiguous" and run["rewritten_query"] == "Anna Berg, occupation"
    assert run["labels"] == ["correct", "incorrect"] and run["answer"] == ANSWER
    rag = json.loads(ask(QUESTION, "--server", url, "--system", "rag", "--json", "--thread", "t1").output)
    assert not rag.get("action") and [s["doc"] for s in rag["given"]] == [0, 1]  # every document, whole
    assert [t["asked"] for t in rag["history"]] == [QUESTION, QUESTION]  # one thread, whichever system asks
    unknown = ask(QUESTION, "--system", "self_rag_v9")
    said = " ".join(unknown.output.replace("│", " ").split())  # typer's box wraps the message
    assert unknown.exit_code == 2 and "unknown system 'self_rag_v9'; choose from crag, rag," in said
