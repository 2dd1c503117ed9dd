"""The Agent Server (`langgraph dev`, in-memory) with the repository's auth (`crag.serve.agent_auth`) and two
users from a keys file, on a free port of 127.0.0.1: keys (401), owned threads, assistants, crons and store
items (another user's is a 404 or absent from searches), the settings a run may carry (422), and who may
write documents through the `index` graph (the one run here that loads a model: the embeddings)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import httpx
import pytest

from tests.servers import BIN, ROOT, langgraph_dev

ANNA = {"x-api-key": "anna-key-0123456789"}
BORIS = {"authorization": "Bearer boris-key-0123456789"}


@pytest.fixture(scope="module")
def agent_server(tmp_path_factory) -> Iterator[str]:
    if shutil.which("langgraph", path=str(BIN)) is None:
        pytest.skip("langgraph-cli is not installed (the serve extra)")
    folder = tmp_path_factory.mktemp("agent-server")
    keys = folder / "keys"
    keys.write_text(f"anna {ANNA['x-api-key']}\nboris {BORIS['authorization'].split()[1]}\n")
    keys.chmod(0o600)
    graphs = {"crag": f"{ROOT}/crag/graphs/crag.py:graph", "index": f"{ROOT}/crag/graphs/indexing.py:index_graph"}
    env = {"CRAG_API_KEYS": str(keys), "CRAG_API_KEY": "", "CRAG_INDEX_USERS": "anna"}
    env["CRAG_CHROMA_DIR"] = str(folder / "chroma")
    with langgraph_dev(folder, graphs, env) as url:
        yield url


def call(url: str, method: str, path: str, who: dict | None, body: dict | None = None) -> httpx.Response:
    return httpx.request(method, f"{url}{path}", headers=who or {}, json=body, timeout=30)


def test_a_request_without_a_users_key_is_401(agent_server):
    for who in (None, {"x-api-key": "not-anyones-key-0123"}, {"authorization": "Basic anna-key-0123456789"}):
        refused = call(agent_server, "POST", "/threads/search", who, {})
        assert refused.status_code == 401, refused.text
        assert "X-API-Key or Authorization: Bearer" in refused.json()["detail"]
    # LangGraph Studio's keyless scheme is off (disable_studio_auth in langgraph.json)
    studio = call(agent_server, "POST", "/threads/search", {"x-auth-scheme": "langsmith"}, {})
    assert studio.status_code == 401


def test_a_thread_is_its_owners_on_every_route(agent_server):
    made = call(agent_server, "POST", "/threads", ANNA, {"metadata": {"owner": "boris", "topic": "tax"}})
    assert made.status_code == 200, made.text
    thread = made.json()["thread_id"]
    assert made.json()["metadata"] == {"owner": "anna", "topic": "tax"}
    assert call(agent_server, "GET", f"/threads/{thread}", ANNA).status_code == 200
    run = {"assistant_id": "crag", "input": {"question": "What did I ask?"}}
    for method, path, body in [
        ("GET", f"/threads/{thread}", None),
        ("GET", f"/threads/{thread}/state", None),
        ("POST", f"/threads/{thread}/history", {}),
        ("PATCH", f"/threads/{thread}", {"metadata": {"owner": "boris"}}),
        ("POST", f"/threads/{thread}/runs", run),
        ("POST", f"/threads/{thread}/runs/wait", run),
        ("GET", f"/threads/{thread}/runs", None),
        ("DELETE", f"/threads/{thread}", None),
    ]:
        other = call(agent_server, method, path, BORIS, body)
        assert other.status_code == 404, (method, path, other.status_code, other.text)
    # the same id made again by another user is refused, not handed over
    taken = call(agent_server, "POST", "/threads", BORIS, {"thread_id": thread, "if_exists": "do_nothing"})
    assert taken.status_code == 409
    listed = call(agent_server, "POST", "/threads/search", BORIS, {}).json()
    assert thread not in {t["thread_id"] for t in listed}
    assert thread in {t["thread_id"] for t in call(agent_server, "POST", "/threads/search", ANNA, {}).json()}
    still = call(agent_server, "GET", f"/threads/{thread}", ANNA).json()
    assert still["metadata"]["owner"] == "anna"
    assert call(agent_server, "DELETE", f"/threads/{thread}", ANNA).status_code in (200, 204)
    assert call(agent_server, "GET", f"/threads/{thread}", ANNA).status_code == 404


def test_assistants_crons_and_store_items_are_their_owners(agent_server):
    system = call(agent_server, "POST", "/assistants/search", BORIS, {"graph_id": "crag"}).json()
    assert [a["metadata"] for a in system] == [{"created_by": "system"}]  # langgraph.json's, for everyone
    patched = call(agent_server, "PATCH", f"/assistants/{system[0]['assistant_id']}", BORIS, {"context": {"k": 3}})
    assert patched.status_code == 404  # and changed by no one

    made = call(agent_server, "POST", "/assistants", BORIS, {"graph_id": "crag", "context": {"k": 2}})
    assert made.status_code == 200, made.text
    assistant = made.json()["assistant_id"]
    assert made.json()["metadata"]["owner"] == "boris"
    assert call(agent_server, "GET", f"/assistants/{assistant}", ANNA).status_code == 404
    anna_sees = call(agent_server, "POST", "/assistants/search", ANNA, {}).json()
    assert assistant not in {a["assistant_id"] for a in anna_sees}
    stateless = {"assistant_id": assistant, "input": {"question": "Whose?"}}
    assert call(agent_server, "POST", "/runs", ANNA, stateless).status_code == 404

    cron = {"assistant_id": "crag", "schedule": "0 0 * * *", "input": {"question": "News?"}, "context": {"k": 2}}
    made = call(agent_server, "POST", "/runs/crons", ANNA, cron)
    assert made.status_code == 200, made.text
    assert call(agent_server, "POST", "/runs/crons/search", BORIS, {}).json() == []
    assert [c["cron_id"] for c in call(agent_server, "POST", "/runs/crons/search", ANNA, {}).json()] == [
        made.json()["cron_id"]
    ]
    assert call(agent_server, "DELETE", f"/runs/crons/{made.json()['cron_id']}", BORIS).status_code == 404

    put = {"namespace": ["boris"], "key": "note", "value": {"planted": True}}
    assert call(agent_server, "PUT", "/store/items", ANNA, put).status_code == 204  # lands under ("anna", "boris")
    assert call(agent_server, "GET", "/store/items?namespace=boris&key=note", BORIS).json() is None


@pytest.mark.parametrize(
    "route, body",
    [
        ("/runs/wait", {"context": {"chroma_dir": "/etc"}}),
        ("/runs/wait", {"config": {"configurable": {"chat_model": "llama_cpp:/tmp/evil.gguf"}}}),
        ("/runs", {"context": {"k": 3, "searxng_url": "http://10.0.0.1:8888"}}),
        ("/runs/stream", {"context": {"evaluator": "/tmp/checkpoint"}}),
        ("/runs/wait", {"context": {"no_such_setting": 1}}),
        ("/runs/wait", {"context": {"k": 0}}),
    ],
)
def test_a_run_may_carry_only_crag_serves_per_request_settings(agent_server, route, body):
    refused = call(agent_server, "POST", route, ANNA, {"assistant_id": "crag", "input": {"question": "Hi?"}, **body})
    assert refused.status_code == 422, refused.text
    assert "cannot be set per run" in refused.json()["detail"] or "k must be at least 1" in refused.json()["detail"]


def test_an_assistant_or_cron_may_carry_only_the_same_settings(agent_server):
    for path, body in [
        ("/assistants", {"graph_id": "crag", "context": {"web_index": "/etc/passwd"}}),
        ("/assistants", {"graph_id": "crag", "config": {"configurable": {"chroma_url": "http://10.0.0.1"}}}),
        ("/runs/crons", {"assistant_id": "crag", "schedule": "0 0 * * *", "context": {"chroma_dir": "/"}}),
    ]:
        refused = call(agent_server, "POST", path, ANNA, body)
        assert refused.status_code == 422 and "cannot be set per run" in refused.json()["detail"], refused.text
    made = call(agent_server, "POST", "/assistants", ANNA, {"graph_id": "crag", "name": "mine"}).json()
    patched = call(agent_server, "PATCH", f"/assistants/{made['assistant_id']}", ANNA, {"context": {"embeddings": "x"}})
    assert patched.status_code == 422


def test_only_the_index_users_write_documents(agent_server):
    docs = [{"page_content": "Anna's handbook: the office opens at nine.", "metadata": {"source": "handbook.md"}}]
    body = {"assistant_id": "index", "input": {"docs": docs}}
    refused = call(agent_server, "POST", "/runs/wait", BORIS, body)
    # the server shows the error's kind, not its message ("may not add documents ... $CRAG_INDEX_USERS")
    assert refused.json()["__error__"]["error"] == "PermissionError", refused.text
    written = call(agent_server, "POST", "/runs/wait", ANNA, body)
    assert written.status_code == 200 and written.json()["report"]["added"] == 1, written.text
