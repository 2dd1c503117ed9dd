"""The Agent Server's auth (`crag.serve.agent_auth`, `auth` in langgraph.json), its handlers called as the server
calls them: keys to users (401 otherwise), owner metadata and filters, and `crag serve`'s per-request settings
as the only settings a run, an assistant or a cron may carry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph_sdk import Auth

from crag.serve import agent_auth
from crag.serve.agent_auth import OWNER, SYSTEM, auth, authenticate
from crag.serve.keys import DEFAULT_USER, KeysError, Users
from crag.serve.service import SAFE_SETTINGS

ANNA_KEY, BORIS_KEY = "anna-key-0123456789", "boris-key-0123456789"
LOCAL, REMOTE = {"client": ("127.0.0.1", 5000)}, {"client": ("203.0.113.9", 5000)}


@pytest.fixture
def two_users():
    agent_auth.use_keys(Users({"anna": ANNA_KEY, "boris": BORIS_KEY}))
    yield
    agent_auth.use_keys(Users({}))


def ctx(user: str, resource: str, action: str) -> Auth.types.AuthContext:
    return Auth.types.AuthContext(user=_User(user), permissions=[], resource=resource, action=action)  # type: ignore[arg-type]


class _User:
    """What the server hands the handlers: an object with the identity `authenticate` returned."""

    def __init__(self, identity: str):
        self.identity = identity
        self.display_name = identity
        self.is_authenticated = True
        self.permissions: list[str] = []


async def call(user: str, resource: str, action: str, value):
    """The handler the server picks for (resource, action): the most specific one registered."""
    handlers = auth._handlers.get((resource, action)) or auth._handlers.get((resource, "*")) or auth._global_handlers
    return await handlers[-1](ctx=ctx(user, resource, action), value=value)


async def test_each_key_is_its_user_as_x_api_key_or_bearer(two_users):
    assert (await authenticate({b"x-api-key": ANNA_KEY.encode()}, REMOTE))["identity"] == "anna"
    assert (await authenticate({b"authorization": f"Bearer {BORIS_KEY}".encode()}, REMOTE))["identity"] == "boris"


@pytest.mark.parametrize(
    "headers",
    [{}, {b"x-api-key": b"not-a-key-of-anyone"}, {b"authorization": f"Basic {ANNA_KEY}".encode()}, {b"x-api-key": b""}],
)
async def test_a_missing_or_wrong_key_is_401_even_from_this_machine(two_users, headers):
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        await authenticate(headers, LOCAL)
    assert refused.value.status_code == 401 and "X-API-Key" in refused.value.detail


async def test_without_keys_only_this_machine_is_served_as_the_default_user():
    agent_auth.use_keys(Users({}))
    assert (await authenticate({}, LOCAL))["identity"] == DEFAULT_USER
    assert (await authenticate({}, {"client": ("::1", 1)}))["identity"] == DEFAULT_USER
    for scope in (REMOTE, {}):
        with pytest.raises(Auth.exceptions.HTTPException) as refused:
            await authenticate({}, scope)
        assert refused.value.status_code == 401


async def test_the_keys_file_is_read_as_crag_serve_reads_it(tmp_path, monkeypatch):
    """$CRAG_API_KEYS and $CRAG_API_KEY, read when the server loads the module, with crag.serve.keys."""
    keys = tmp_path / "keys"
    keys.write_text(f"anna {ANNA_KEY}\n")
    keys.chmod(0o600)
    monkeypatch.setenv("CRAG_API_KEYS", str(keys))
    monkeypatch.setenv("CRAG_API_KEY", BORIS_KEY)
    agent_auth.use_keys(agent_auth.users_from_environment())
    try:
        assert (await authenticate({b"x-api-key": ANNA_KEY.encode()}, REMOTE))["identity"] == "anna"
        assert (await authenticate({b"x-api-key": BORIS_KEY.encode()}, REMOTE))["identity"] == DEFAULT_USER
    finally:
        agent_auth.use_keys(Users({}))
    keys.chmod(0o644)
    with pytest.raises(KeysError, match="chmod 600"):
        agent_auth.users_from_environment()


@pytest.mark.parametrize("resource", ["threads", "assistants", "crons"])
async def test_a_create_is_its_callers_whatever_owner_it_names(resource):
    value = {"metadata": {OWNER: "boris", "topic": "tax"}}
    assert await call("anna", resource, "create", value) == {OWNER: "anna"}
    assert value["metadata"] == {OWNER: "anna", "topic": "tax"}
    bare: dict = {"metadata": None}
    await call("anna", resource, "create", bare)
    assert bare["metadata"] == {OWNER: "anna"}


@pytest.mark.parametrize("action", ["read", "search", "delete", "update"])
async def test_threads_are_filtered_to_their_owner(action):
    for user in ("anna", "boris"):
        assert await call(user, "threads", action, {"thread_id": "t"}) == {OWNER: user}


async def test_an_update_cannot_give_a_thread_away():
    value = {"thread_id": "t", "metadata": {OWNER: "boris"}}
    assert await call("anna", "threads", "update", value) == {OWNER: "anna"}
    assert value["metadata"] == {OWNER: "anna"}


async def test_a_run_is_on_the_callers_threads_and_a_thread_it_makes_is_theirs():
    value = {"thread_id": None, "metadata": {}, "kwargs": {"context": {"k": 3}, "config": {"configurable": {}}}}
    assert await call("anna", "threads", "create_run", value) == {OWNER: "anna"}
    assert value["metadata"] == {OWNER: "anna"}


async def test_system_assistants_are_read_by_everyone_and_changed_by_no_one():
    assert await call("anna", "assistants", "search", {}) == {"$or": [{OWNER: "anna"}, SYSTEM]}
    assert await call("boris", "assistants", "read", {}) == {"$or": [{OWNER: "boris"}, SYSTEM]}
    assert await call("anna", "assistants", "delete", {}) == {OWNER: "anna"}
    assert await call("anna", "assistants", "update", {"metadata": None}) == {OWNER: "anna"}


@pytest.mark.parametrize("action", ["read", "search", "delete"])
async def test_crons_are_filtered_to_their_owner(action):
    assert await call("boris", "crons", action, {}) == {OWNER: "boris"}


async def test_store_items_live_under_their_users_namespace():
    value = {"namespace": ("boris", "notes")}
    await call("anna", "store", "put", value)
    assert value["namespace"] == ("anna", "boris", "notes")
    mine = {"namespace": ("anna",)}
    await call("anna", "store", "get", mine)
    assert mine["namespace"] == ("anna",)


async def test_a_resource_without_a_rule_is_refused():
    assert await call("anna", "something_new", "read", {}) is False


def run_as_the_server_hands_it(sent: dict) -> dict:
    """A run's value as langgraph_api's create_valid_run makes it: what the request sent as `context` or as
    `config.configurable` is the context, and the configurable also carries the server's own keys."""
    server = {"langgraph_auth_user_id": "anna", "langgraph_request_id": "r", "__after_seconds__": 0}
    return {"metadata": {}, "kwargs": {"context": dict(sent), "config": {"configurable": {**sent, **server}}}}


UNSAFE = ["chroma_dir", "chroma_url", "web_index", "evaluator", "chat_model", "searxng_url", "wikipedia_url"]


@pytest.mark.parametrize("name", [*UNSAFE, "no_such_setting"])
@pytest.mark.parametrize(
    "where",
    [
        ("threads", "create_run", lambda s: run_as_the_server_hands_it(s)),
        ("assistants", "create", lambda s: {"metadata": {}, "context": s, "config": {}}),
        ("assistants", "update", lambda s: {"config": {"configurable": s}}),
        ("crons", "create", lambda s: {"metadata": {}, "payload": {"context": s}}),
        ("crons", "update", lambda s: {"payload": {"config": {"configurable": s}}}),
    ],
)
async def test_a_setting_a_request_may_not_set_is_refused_everywhere_a_run_takes_settings(name, where):
    resource, action, payload = where
    value = payload({"k": 3, name: "/etc" if name != "chroma_url" else "http://10.0.0.1:8000"})
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        await call("anna", resource, action, value)
    assert refused.value.status_code == 422
    assert f"setting(s) {name} cannot be set per run" in refused.value.detail


def test_the_refused_settings_name_files_urls_or_models_and_none_is_allowed():
    assert not set(UNSAFE) & set(SAFE_SETTINGS)


async def test_every_allowed_setting_passes_and_a_bad_value_is_422():
    allowed = {"k": 3, "web_k": 2, "rewrite": "off", "upper_threshold": 0.6, "preset": None}
    assert await call("anna", "threads", "create_run", run_as_the_server_hands_it(allowed)) == {OWNER: "anna"}
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        await call("anna", "threads", "create_run", {"metadata": {}, "kwargs": {"context": {"k": 0}}})
    assert refused.value.status_code == 422 and "k must be at least 1" in refused.value.detail
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        await call("anna", "threads", "create_run", {"metadata": {}, "kwargs": {"context": ["k", 3]}})
    assert refused.value.status_code == 422 and "context must be an object" in refused.value.detail


async def test_what_the_agent_server_writes_itself_is_not_refused():
    """The event-streaming routes put thread_id and their flag into configurable, a cron its id, a fork its
    checkpoint: the server copies configurable to the context before the handlers run."""
    server = {"thread_id": "t", "__event_streaming_v2": True, "cron_id": "c", "checkpoint_id": "1", "checkpoint_ns": ""}
    value = {"metadata": {}, "kwargs": {"context": server}}
    assert await call("anna", "threads", "create_run", value) == {OWNER: "anna"}


def test_langgraph_json_names_this_module_and_turns_off_studios_key_bypass():
    config = json.loads((Path(__file__).parents[2] / "langgraph.json").read_text())
    assert config["auth"] == {"path": "./crag/serve/agent_auth.py:auth", "disable_studio_auth": True}


@pytest.fixture
def by_owner():
    agent_auth.filter_by_user("owner")
    yield
    agent_auth.filter_by_user(None)


async def test_with_filter_by_user_every_run_searches_only_its_users_documents(by_owner):
    bare = run_as_the_server_hands_it({})
    await call("anna", "threads", "create_run", bare)
    assert bare["kwargs"]["context"] == {"filter": {"owner": "anna"}}
    own = run_as_the_server_hands_it({"k": 3, "filter": {"lang": "en", "owner": ["anna", "boris"]}})
    await call("anna", "threads", "create_run", own)
    assert own["kwargs"]["context"] == {"k": 3, "filter": {"lang": "en", "owner": "anna"}}
    theirs = run_as_the_server_hands_it({"filter": {"owner": "boris"}})
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        await call("anna", "threads", "create_run", theirs)
    assert refused.value.status_code == 422 and "set by the server to your user name" in refused.value.detail


async def test_with_filter_by_user_a_crons_runs_are_scoped_and_take_settings_as_context(by_owner):
    cron = {"metadata": {}, "payload": {"context": {"k": 2}}}
    await call("boris", "crons", "create", cron)
    assert cron["payload"]["context"] == {"k": 2, "filter": {"owner": "boris"}}
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        await call("boris", "crons", "create", {"metadata": {}, "payload": {"config": {"configurable": {"k": 2}}}})
    assert refused.value.status_code == 422 and "as context" in refused.value.detail


async def test_without_filter_by_user_a_run_keeps_its_own_filter():
    sent = run_as_the_server_hands_it({"filter": {"owner": "boris"}})
    await call("anna", "threads", "create_run", sent)
    assert sent["kwargs"]["context"] == {"filter": {"owner": "boris"}}
