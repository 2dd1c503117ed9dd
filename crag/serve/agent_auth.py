"""`crag serve`'s rules on the LangGraph Agent Server (`langgraph dev`, `langgraph up`): the `auth` of
`langgraph.json`, written with LangGraph's own auth handlers (`langgraph_sdk.Auth`).

- Who calls: the key of $CRAG_API_KEYS (a keys file of `user key` lines) or $CRAG_API_KEY (user "default"),
  sent as X-API-Key or Authorization: Bearer, read as `crag serve` reads it (`crag.serve.keys`); 401
  otherwise. A server with no key at all answers only callers on this machine, as user "default", as
  `crag serve` listens only on localhost without keys.
- What they reach: threads (and their runs), crons, assistants and store items are their owner's: a create
  writes the caller into the metadata's `owner`, every read, search, update and delete is filtered by it, so
  another user's thread is a 404. The assistants made from `langgraph.json`'s graphs (`created_by: system`)
  can be read and run by everyone, changed by no one.
- What a run may set: only `crag serve`'s per-request settings (`SAFE_SETTINGS`: nothing that names a file,
  a URL or a model), in a run's, an assistant's or a cron's `context` or `config.configurable`; any other
  setting is refused with 422 before the run is made, as is a value the setting does not take. (The server
  passes a run the `Context` fields of its context, so a run could otherwise set any of them.)
- Who writes documents: the `index` graph runs only for the users of $CRAG_INDEX_USERS (names separated by
  commas, or "*"; by default "default", the one of $CRAG_API_KEY or of a server without keys): they get the
  `crag:index` permission, which the graph's step requires of any run with a user.
- Whose documents a run searches: with $CRAG_FILTER_BY_USER=FIELD (`crag serve --filter-by-user`), every
  run's `filter` (`crag.search.filters`) is ANDed with {FIELD: the caller's user} in the run's context, which
  the server merges over an assistant's, so neither a run nor an assistant can lift it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from langgraph_sdk import Auth

from crag.nodes.index_docs import INDEX_PERMISSION  # what the index graph's step requires of a run with a user
from crag.search.filters import check_filter, restrict
from crag.serve.keys import DEFAULT_USER, Users, identities, is_local, supplied_key
from crag.serve.service import SAFE_SETTINGS
from crag.settings import check

OWNER = "owner"  # the metadata key of a resource's user, written by the server, never by a request
SYSTEM = {"created_by": "system"}  # the Agent Server's metadata of the assistants made from langgraph.json
# what the Agent Server itself writes into a run's configurable before it copies it to the run's context
# (langgraph_api: the event-streaming v2 routes, forks and crons); none is a `Context` setting
SERVER_KEYS = frozenset({"thread_id", "checkpoint_id", "checkpoint_ns", "cron_id", "__event_streaming_v2"})
UNAUTHORISED = "missing or invalid API key: send it as X-API-Key or Authorization: Bearer"

auth = Auth()


def users_from_environment() -> Users:
    """The users of $CRAG_API_KEYS and $CRAG_API_KEY (`crag.serve.keys`); `KeysError` for a bad keys file."""
    return Users(identities(os.environ.get("CRAG_API_KEY") or None, os.environ.get("CRAG_API_KEYS") or None))


# who may run the `index` graph (write into the knowledge base): $CRAG_INDEX_USERS, user names separated by
# commas, or "*" for every user; by default only "default" (the one $CRAG_API_KEY or a server without keys)
_indexers = frozenset(name.strip() for name in (os.environ.get("CRAG_INDEX_USERS") or DEFAULT_USER).split(",")) - {""}
_users = users_from_environment()  # once, when the server loads this module: a bad keys file stops its start
# the metadata field every run's filter requires to be the caller's user name ($CRAG_FILTER_BY_USER); None: off
_filter_by_user = os.environ.get("CRAG_FILTER_BY_USER") or None
if _filter_by_user:
    check_filter({_filter_by_user: DEFAULT_USER})  # a field no filter could name stops the start


def filter_by_user(field: str | None) -> None:
    """Replace the field read at start (tests, and an application that embeds the Agent Server)."""
    global _filter_by_user
    _filter_by_user = field


def scope_run(user: str, kwargs: dict) -> None:
    """With `filter_by_user`, the run's context gets the filter ANDed with {field: user} (in place: the server
    keeps its own reference); 422 when the run's own filter names the field with other values."""
    if not _filter_by_user:
        return
    context = dict(kwargs.get("context") or {})
    try:
        context["filter"] = restrict(check_filter(context.get("filter")), _filter_by_user, user)
    except ValueError as exc:
        raise Auth.exceptions.HTTPException(422, f"context: {exc}") from None
    kwargs["context"] = context


def index_users(names: frozenset[str]) -> None:
    """Replace the indexing users read at start (tests, and an application that embeds the Agent Server)."""
    global _indexers
    _indexers = names


def use_keys(users: Users) -> None:
    """Replace the keys read at start (tests, and an application that embeds the Agent Server)."""
    global _users
    _users = users


@auth.authenticate
async def authenticate(headers: dict[bytes, bytes], scope: dict[str, Any]) -> Auth.types.MinimalUserDict:
    """The user whose key the request sends; without any key configured, "default" for a caller on this
    machine. 401 otherwise."""
    if _users:
        user = _users.user_of(supplied_key(headers))
    else:
        client = scope.get("client") or ("",)
        user = DEFAULT_USER if is_local(str(client[0])) else None
    if user is None:
        raise Auth.exceptions.HTTPException(401, UNAUTHORISED, headers={"WWW-Authenticate": "Bearer"})
    may_index = "*" in _indexers or user in _indexers
    return {"identity": user, "permissions": [INDEX_PERMISSION] if may_index else []}


def refuse_unsafe_settings(settings: Any, where: str) -> None:
    """422 for `settings` (a run's context or configurable) that is not an object, names a setting a request
    may not set (a file, a URL, a model) or an unknown one, or holds a value its setting does not take."""
    if settings is None:
        return
    if not isinstance(settings, Mapping):
        raise Auth.exceptions.HTTPException(422, f"{where} must be an object")
    refused = sorted(str(name) for name in settings if name not in SAFE_SETTINGS and name not in SERVER_KEYS)
    if refused:
        raise Auth.exceptions.HTTPException(
            422,
            f"{where}: setting(s) {', '.join(refused)} cannot be set per run; allowed: {', '.join(sorted(SAFE_SETTINGS))}",
        )
    for name, value in settings.items():
        if name in SAFE_SETTINGS and value is not None:
            try:
                check(name, value)
            except ValueError as exc:
                raise Auth.exceptions.HTTPException(422, f"{where}: {exc}") from None


def refuse_unsafe_run(payload: Mapping[str, Any] | None, where: str) -> None:
    """The settings check of every place a run's settings arrive: `context` and `config.configurable`."""
    payload = payload or {}
    refuse_unsafe_settings(payload.get("context"), f"{where}context")
    config = payload.get("config")
    if config is not None and not isinstance(config, Mapping):
        raise Auth.exceptions.HTTPException(422, f"{where}config must be an object")
    refuse_unsafe_settings((config or {}).get("configurable"), f"{where}config.configurable")


def own(ctx: Auth.types.AuthContext, value: dict) -> None:
    """Write the caller into the metadata the server stores (in place: the server keeps its own reference)."""
    if value.get("metadata") is None:
        value["metadata"] = {}
    value["metadata"][OWNER] = ctx.user.identity


def own_new(ctx: Auth.types.AuthContext, value: dict) -> None:
    """`own` on a create, and on an update that writes metadata (which must not name another owner)."""
    if ctx.action == "create" or value.get("metadata") is not None:
        own(ctx, value)


def mine(ctx: Auth.types.AuthContext) -> Auth.types.FilterType:
    return {OWNER: ctx.user.identity}


# the `# type: ignore[arg-type]` below: langgraph_sdk types each `@auth.on.<resource>.<action>` as taking and
# returning a handler of that action's value alone, so a handler of several actions (decorators stacked, as
# LangGraph's authentication guide does) or of a plain dict fails the check; the server calls each with a dict
@auth.on.threads.create  # type: ignore[arg-type]
@auth.on.threads.update  # type: ignore[arg-type]
async def on_thread_write(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType:
    """A new thread is the caller's (an id another user has is a 409); an update reaches only the caller's
    thread and cannot give it away."""
    own_new(ctx, value)
    return mine(ctx)


@auth.on.threads.create_run
async def on_run(ctx: Auth.types.AuthContext, value: Auth.types.RunsCreate) -> Auth.types.FilterType:
    """A run: only on the caller's thread (a thread it makes is the caller's), with safe settings only."""
    # the run's `context` holds what the request sent, as `context` or as `config.configurable` (the server
    # copies one to the other before this handler); the configurable it hands over also carries the server's
    # own keys (langgraph_auth_user, langgraph_request_id, ...), so it is not the one checked
    refuse_unsafe_settings((value.get("kwargs") or {}).get("context"), "context")
    scope_run(ctx.user.identity, value["kwargs"])  # the dict the run is made from
    own(ctx, value)  # type: ignore[arg-type]  # a thread the run makes takes the run's metadata
    return mine(ctx)


@auth.on.threads.read
@auth.on.threads.delete  # type: ignore[arg-type]
@auth.on.threads.search  # type: ignore[arg-type]
@auth.on.assistants.delete  # type: ignore[arg-type]
@auth.on.crons.read
@auth.on.crons.delete  # type: ignore[arg-type]
@auth.on.crons.search
async def on_own_only(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    """Reading, listing or deleting threads (and their runs) or crons, and deleting assistants: the caller's only."""
    return mine(ctx)


@auth.on.assistants.create  # type: ignore[arg-type]
@auth.on.assistants.update  # type: ignore[arg-type]
async def on_assistant_write(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType:
    """An assistant is its creator's, and its settings are a run's; the system assistants stay as they are."""
    refuse_unsafe_run(value, "")
    own_new(ctx, value)
    return mine(ctx)


@auth.on.assistants.read  # type: ignore[arg-type]
@auth.on.assistants.search
async def on_assistant_read(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    """The caller's assistants and the graphs of langgraph.json."""
    return {"$or": [mine(ctx), SYSTEM]}  # type: ignore[return-value]  # the Agent Server's filters take $or


@auth.on.crons.create  # type: ignore[arg-type]
@auth.on.crons.update  # type: ignore[arg-type]
async def on_cron_write(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType:
    """A cron is its creator's, and the run it makes has safe settings only."""
    payload = value.get("payload")
    refuse_unsafe_run(payload, "payload.")
    if _filter_by_user and isinstance(payload, dict):  # the runs a cron makes are scoped as the caller's own
        if ((payload.get("config") or {}).get("configurable") or {}).keys() - SERVER_KEYS:
            raise Auth.exceptions.HTTPException(
                422, "payload: give a cron's settings as context, not config.configurable, on this server"
            )
        scope_run(ctx.user.identity, payload)
    own_new(ctx, value)
    return mine(ctx)


@auth.on.store
async def on_store(ctx: Auth.types.AuthContext, value: dict) -> None:
    """Store items live under the caller's namespace (crag keeps nothing there; the routes exist)."""
    namespace = tuple(value.get("namespace") or ())
    if not namespace or namespace[0] != ctx.user.identity:
        value["namespace"] = (ctx.user.identity, *namespace)


@auth.on
async def refuse_the_rest(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Anything without a rule above (a resource a later Agent Server adds) is refused: 403."""
    return False
