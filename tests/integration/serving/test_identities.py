"""Users and their threads on a real uvicorn server (127.0.0.1) with fake models: each request is its key's
user's; a thread is its maker's on every route (the same id sent by another user names another thread);
the server names the thread it made for a request without one; DELETE /threads/{id}; refusals at start."""

from __future__ import annotations

import json

import httpx
import pytest
from typer.testing import CliRunner

from crag.serve.app import ServerSettings, create_app
from crag.serve.keys import KeysError
from tests.fakes import ANSWER

QUESTION = "What is Anna Berg's occupation?"
FOLLOW_UP = "Where do her works hang?"
ALICE, BOB = {"X-API-Key": "alice-key-0123456789"}, {"Authorization": "Bearer bob-key-0123456789abc"}


@pytest.fixture()
def keys_file(tmp_path):
    file = tmp_path / "keys"
    file.write_text("# user key\nalice alice-key-0123456789\n\nbob   bob-key-0123456789abc\n")
    file.chmod(0o600)
    return file


def ask(url: str, who: dict, question: str, thread: str | None = None, path: str = "invoke") -> httpx.Response:
    config = {"configurable": {"thread_id": thread}} if thread else {}
    body = (
        {"inputs": [{"question": question}], "config": config}
        if path == "batch"
        else {"input": {"question": question}, "config": config}
    )
    return httpx.post(f"{url}/crag/{path}", json=body, headers=who, timeout=30)


def output(response: httpx.Response, path: str = "invoke") -> dict:
    """The run's final output, whichever route answered."""
    assert response.status_code == 200, response.text
    if path == "invoke":
        return response.json()["output"]
    if path == "batch":
        return response.json()["output"][0]
    data = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
    if path == "stream_events":  # the service's own end: the last chain end with an answer
        ends = [d["data"].get("output") for d in data if d.get("event") == "on_chain_end"]
        data = [end for end in ends if isinstance(end, dict) and "thread_id" in end]
    return [d for d in data if isinstance(d, dict) and "answer" in d][-1]


def test_an_unknown_key_is_refused_and_each_key_is_its_users(serve, keys_file):
    url = serve(keys_file=keys_file)
    assert ask(url, {}, QUESTION).status_code == 401
    assert ask(url, {"X-API-Key": "alice-key-012345678"}, QUESTION).status_code == 401  # one character short
    assert ask(url, {"X-API-Key": "alice-key-0123456789x"}, QUESTION).status_code == 401
    assert httpx.delete(f"{url}/threads/t", headers={"X-API-Key": "nobody-0123456789"}).status_code == 401
    assert output(ask(url, ALICE, QUESTION))["answer"] == ANSWER
    assert output(ask(url, BOB, QUESTION))["answer"] == ANSWER
    assert httpx.get(f"{url}/health").json()["api_key"] is True


@pytest.mark.parametrize("path", ["invoke", "stream", "batch", "stream_events"])
def test_another_user_can_neither_read_nor_extend_a_thread(serve, keys_file, path):
    url = serve(keys_file=keys_file)
    output(ask(url, ALICE, QUESTION, "anna", path), path)
    theirs = ask(url, BOB, FOLLOW_UP, "anna", path)
    assert QUESTION not in theirs.text and "Anna Berg's works" not in theirs.text  # nothing of Alice's turn
    bobs = output(theirs, path)
    assert bobs["question"] == FOLLOW_UP and [t["asked"] for t in bobs["history"]] == [FOLLOW_UP]
    assert bobs["thread_id"] == "anna"
    mine = output(ask(url, ALICE, FOLLOW_UP, "anna", path), path)  # Bob's turn went to his own thread
    assert mine["question"] == "Where do Anna Berg's works hang?"
    assert [t["asked"] for t in mine["history"]] == [QUESTION, FOLLOW_UP]


def test_crag_api_key_is_one_more_user_with_the_unowned_threads(serve, keys_file, tmp_path):
    db = tmp_path / "shared.sqlite"
    before = serve(api_key="default-key-0123456789", threads_db=db)  # a server with one key, as before users
    output(ask(before, {"X-API-Key": "default-key-0123456789"}, QUESTION, "anna"))
    url = serve(api_key="default-key-0123456789", keys_file=keys_file, threads_db=db)
    kept = output(ask(url, {"X-API-Key": "default-key-0123456789"}, FOLLOW_UP, "anna"))
    assert [t["asked"] for t in kept["history"]] == [QUESTION, FOLLOW_UP]  # its threads are still its own
    assert [t["asked"] for t in output(ask(url, ALICE, FOLLOW_UP, "anna"))["history"]] == [FOLLOW_UP]


def test_a_request_without_a_thread_gets_one_it_can_go_on_with(serve, keys_file):
    url = serve(keys_file=keys_file)
    first = output(ask(url, ALICE, QUESTION))
    made = first["thread_id"]
    assert made and [t["asked"] for t in first["history"]] == [QUESTION]
    assert output(ask(url, ALICE, QUESTION))["thread_id"] != made  # a new one each time
    again = output(ask(url, ALICE, FOLLOW_UP, made))
    assert again["thread_id"] == made and [t["asked"] for t in again["history"]] == [QUESTION, FOLLOW_UP]
    assert [t["asked"] for t in output(ask(url, BOB, FOLLOW_UP, made))["history"]] == [FOLLOW_UP]  # not Bob's
    streamed = output(ask(url, ALICE, QUESTION, path="stream"), "stream")
    assert streamed["thread_id"] and streamed["thread_id"] != made
    assert "thread_id" in httpx.get(f"{url}/crag/output_schema", headers=ALICE).json()["properties"]


def test_without_keys_threads_are_as_before_and_say_their_id(serve):
    url = serve()
    output(ask(url, {}, QUESTION, "anna"))
    follow = output(ask(url, {}, FOLLOW_UP, "anna"))
    assert follow["thread_id"] == "anna" and [t["asked"] for t in follow["history"]] == [QUESTION, FOLLOW_UP]
    assert "thread_id" in output(ask(url, {}, QUESTION))
    assert "thread_id" not in output(ask(serve(threads_db=None), {}, QUESTION))  # a server without threads


def test_delete_a_thread_of_ones_own(serve, keys_file):
    url = serve(keys_file=keys_file)
    output(ask(url, ALICE, QUESTION, "anna"))
    assert httpx.delete(f"{url}/threads/anna", headers=BOB).status_code == 404  # not Bob's
    assert httpx.delete(f"{url}/threads/nothing", headers=ALICE).status_code == 404
    assert httpx.delete(f"{url}/threads/..%2Fx", headers=ALICE).status_code in (404, 422)
    deleted = httpx.delete(f"{url}/threads/anna", headers=ALICE)
    assert deleted.status_code == 204 and deleted.content == b""
    assert httpx.delete(f"{url}/threads/anna", headers=ALICE).status_code == 404  # gone
    assert [t["asked"] for t in output(ask(url, ALICE, FOLLOW_UP, "anna"))["history"]] == [FOLLOW_UP]  # afresh


def test_delete_without_keys_and_without_threads(serve, tmp_path):
    url = serve()
    output(ask(url, {}, QUESTION, "anna"))
    assert httpx.delete(f"{url}/threads/anna").status_code == 204
    no_threads = httpx.delete(f"{serve(threads_db=None)}/threads/anna")
    assert no_threads.status_code == 404 and "keeps no threads" in no_threads.text


def test_a_bad_keys_file_stops_the_app(tmp_path, keys_file):
    keys_file.chmod(0o644)
    with pytest.raises(KeysError, match="chmod 600"):
        create_app(ServerSettings(keys_file=keys_file, warm_up=False, require_documents=False))
    keys_file.chmod(0o600)
    keys_file.write_text("alice alice-key-0123456789 trailing\n")
    with pytest.raises(KeysError, match="line 1: expected `user key`"):
        create_app(ServerSettings(keys_file=keys_file, warm_up=False, require_documents=False))


@pytest.fixture()
def cli(monkeypatch):
    from crag.cli.main import app

    monkeypatch.delenv("CRAG_API_KEY", raising=False)
    monkeypatch.delenv("CRAG_API_KEYS", raising=False)
    return lambda *args, **env: CliRunner().invoke(app, ["serve", *args], env=env or None)


def test_crag_serve_refuses_a_bad_keys_file_before_starting(cli, keys_file, tmp_path):
    keys_file.chmod(0o604)
    loose = cli("--keys", str(keys_file))
    assert loose.exit_code == 2 and "can be read or written by others (mode 0604)" in loose.output
    assert f"chmod 600 {keys_file}" in loose.output
    keys_file.chmod(0o600)
    keys_file.write_text("alice alice-key-0123456789\nbob\n")
    malformed = cli("--keys", str(keys_file))
    assert malformed.exit_code == 2 and "line 2: expected `user key`, got 1 field(s)" in malformed.output
    missing = cli(CRAG_API_KEYS=str(tmp_path / "none"))  # the file named by the environment
    assert missing.exit_code == 2 and "does not exist" in missing.output


def test_crag_serve_refuses_to_listen_beyond_localhost_without_a_key(cli, tmp_path):
    for host in ("0.0.0.0", "192.0.2.1", "::"):
        refused = cli("--host", host)
        assert refused.exit_code == 2 and f"refusing to listen on {host} without a key" in refused.output
        assert "--keys FILE" in refused.output and "CRAG_API_KEY" in refused.output
        assert "--allow-anonymous" in refused.output
    # with --allow-anonymous it goes on to the next check: the empty knowledge base here
    anyway = cli("--host", "0.0.0.0", "--allow-anonymous", "--chroma-dir", str(tmp_path / "c"), "--collection", "x")
    assert anyway.exit_code == 2 and "there is no knowledge base" in anyway.output
    keyed = cli("--host", "0.0.0.0", "--chroma-dir", str(tmp_path / "c"), "--collection", "x", CRAG_API_KEY="k" * 20)
    assert keyed.exit_code == 2 and "there is no knowledge base" in keyed.output


def test_a_request_cannot_name_its_owner(serve, keys_file):
    url = serve(keys_file=keys_file)
    body = {"input": {"question": QUESTION}, "config": {"configurable": {"crag_owner": "alice"}}}
    forged = httpx.post(f"{url}/crag/invoke", json=body, headers=BOB, timeout=30)
    assert forged.status_code == 422 and "crag_owner cannot be set per request" in forged.text


def test_crag_ask_server_with_each_users_key(serve, keys_file):
    from crag.cli.main import app

    url = serve(keys_file=keys_file)

    def ask(key: str, question: str) -> dict:
        args = ["ask", question, "--server", url, "--thread", "anna", "--json"]
        result = CliRunner().invoke(app, args, env={"CRAG_API_KEY": key})
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    ask("alice-key-0123456789", QUESTION)
    assert ask("alice-key-0123456789", FOLLOW_UP)["question"] == "Where do Anna Berg's works hang?"
    assert ask("bob-key-0123456789abc", FOLLOW_UP)["question"] == FOLLOW_UP  # Bob's own thread "anna"
    refused = CliRunner().invoke(app, ["ask", QUESTION, "--server", url], env={"CRAG_API_KEY": "wrong-0123456789"})
    assert refused.exit_code == 2 and "wants an API key" in refused.output


def test_each_worker_reads_the_keys_file_it_is_given(keys_file, monkeypatch):
    """`crag serve` passes the keys file's path (never the keys) to each worker in $CRAG_SERVE_SETTINGS."""
    from crag.cli.serve import SETTINGS_ENV, worker_app
    from tests.servers import running

    server = {"warm_up": False, "require_documents": False, "threads_db": None, "keys_file": str(keys_file)}
    monkeypatch.setenv(SETTINGS_ENV, json.dumps({"context": {}, "server": server}))
    monkeypatch.delenv("CRAG_API_KEY", raising=False)
    with running(worker_app()) as url:
        assert httpx.get(f"{url}/crag/input_schema").status_code == 401
        assert httpx.get(f"{url}/crag/input_schema", headers=BOB).status_code == 200
