"""The graph as a LangServe-ready Runnable: safe per-request settings, optional threads."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Optional

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from langchain_core.runnables.config import patch_config
from langchain_core.runnables.utils import ConfigurableFieldSpec
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, create_model, field_validator, model_validator

from crag import resources
from crag.graphs.crag import graph
from crag.questions.checks import MAX_QUESTION_CHARS
from crag.questions.messages import as_messages, asked_by_user
from crag.search.filters import restrict
from crag.serve.upkeep import prune
from crag.settings import Context, about, annotation, settings
from crag.state import OUTPUT_KEYS
from crag.threads import (
    TURN_DURABILITY,
    InvalidThreadId,
    ThreadBusy,
    athread_busy,
    athread_turn,
    check_thread_id,
    owned_thread,
)
from crag.thresholds import Thresholds

# per-request settings, name -> (type, help): nothing that names a file, a URL or a model
SAFE_SETTINGS: dict[str, tuple[Any, str]] = {
    spec.name: (annotation(spec.name), about(spec)["help"]) for spec in settings() if about(spec)["request"]
}
THREAD_ID_DESCRIPTION = (
    "Keep a conversation: follow-up questions on the same thread id see the earlier turns. Without one, the "
    "server makes a thread and names it in the output's thread_id."
)
REQUEST_ID_DESCRIPTION = (
    "Your id of this request (1-128 letters, digits or . _ : @ -), the same each time you send it: if the "
    "thread's last saved turn has this id, the server answers with that turn instead of running it twice. A "
    "request naming no thread gets the same new thread each time it is sent."
)
OWNER_KEY = "crag_owner"  # configurable's key of the thread's owner, set by the server, never by a request
USER_KEY = "crag_user"  # configurable's key of the request's user, set by the server with `filter_by_user`
REQUEST_ID = "request_id"  # LangGraph copies a string in configurable into each checkpoint's metadata
REQUEST_THREADS = uuid.UUID("5f6c0b8e-2d3a-4c1e-9a7b-63c0d1e2f4a5")  # uuid5 namespace of request-made threads

logger = logging.getLogger("crag.serve")


def check_request_id(request_id: Any) -> str:
    """A request id has a thread id's rules; `InvalidThreadId` naming it otherwise."""
    try:
        return check_thread_id(request_id)
    except InvalidThreadId as exc:
        raise InvalidThreadId(str(exc).replace("invalid thread id", "invalid request id", 1)) from None


def new_thread_id(request_id: str | None = None) -> str:
    """A thread id the server makes for a request that names none: random, or the same for a request id
    (so that a retried request finds the thread its first attempt made)."""
    return uuid.uuid4().hex if request_id is None else uuid.uuid5(REQUEST_THREADS, request_id).hex


class CragInput(BaseModel):
    """One question for CRAG: `question`, or a chat client's `messages` whose last is the user's."""

    model_config = ConfigDict(extra="forbid")

    question: str | None = Field(
        None, min_length=1, max_length=MAX_QUESTION_CHARS, description="The question to answer."
    )
    # dicts kept as sent (a LangChain message's dict has a `type`, a chat client's a `role`), converted by the graph
    messages: list[Annotated[dict[str, Any] | BaseMessage, Field(union_mode="left_to_right")]] | None = Field(
        None,
        min_length=1,
        description=(
            "A conversation, as chat clients send it: LangChain messages or {'role': 'user', 'content': ...}. "
            "The last, the user's, is the question; on a thread send only the new one (the thread keeps the rest)."
        ),
    )

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("the question is empty")
        return value

    @field_validator("messages")
    @classmethod
    def _asks(cls, value: list | None) -> list | None:
        if value is not None and asked_by_user(as_messages(value)) is None:
            raise ValueError("the last message must be the user's question")
        return value

    @model_validator(mode="after")
    def _one_question(self) -> CragInput:
        if (self.question is None) == (self.messages is None):
            raise ValueError("give a question or messages (one of them)")
        return self

    def graph_input(self) -> dict:
        """What the graph is given: the fields sent."""
        return {"question": self.question} if self.messages is None else {"messages": self.messages}


def context_for(
    defaults: Context, configurable: dict[str, Any], calibrated: Thresholds, scope: tuple[str, str | None] | None = None
) -> Context:
    """The server's context with the request's safe settings applied; ValueError when the thresholds
    conflict, also a lone one against the evaluator's `calibrated` other one. `scope` (field, user): the
    filter is ANDed with {field: user}, which the request cannot lift (ValueError without a user, or when the
    request's own filter names the field with other values)."""
    overrides = {name: configurable[name] for name in SAFE_SETTINGS if configurable.get(name) is not None}
    context = dataclasses.replace(defaults, **overrides)
    if scope is not None:
        field, user = scope
        if user is None:  # fail closed: a run with no user would see every user's documents
            raise ValueError(f"this server keeps each user to their documents ({field}), and the request has no user")
        context = dataclasses.replace(context, filter=restrict(context.filter, field, user))
    context.thresholds(calibrated)  # the pair the request will be decided with: Thresholds checks it
    return context


@dataclasses.dataclass
class Plan:
    """One request's run: the graph, its config and options, the thread's checkpointer key (None: no thread),
    and what the output says of the thread ({"thread_id": ...} or {})."""

    graph: Any
    config: RunnableConfig
    options: dict[str, Any]
    key: str | None
    said: dict[str, str]
    request_id: str | None = None


class CragService(RunnableSerializable[dict, dict]):
    """Runs the CRAG graph for a server: LangServe passes settings as `configurable`, LangGraph reads a
    `context`; runs on the checkpointed graph when the request names a thread."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    defaults: Any = Field(default_factory=Context, description="The server's Context.")
    graph: Any = Field(default=None, description="The compiled graph without a checkpointer.")
    threads: bool = Field(default=False, description="Whether requests may name a thread (thread_id).")
    threaded: Any = Field(default=None, description="The graph with a checkpointer; set when the server starts.")
    threads_location: Any = Field(
        default=None, description="Where threads live (crag.threads.threads_location): a SQLite file or a Postgres URL."
    )
    filter_by_user: str | None = Field(
        default=None, description="A metadata field every run's filter requires to be the request's user name."
    )

    _thread_locks: weakref.WeakValueDictionary = PrivateAttr(default_factory=weakref.WeakValueDictionary)
    _calibrated: Thresholds | None = PrivateAttr(default=None)

    def model_post_init(self, __context: Any) -> None:
        if self.graph is None:
            self.graph = graph

    @property
    def InputType(self) -> type:
        return CragInput

    def get_input_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        return CragInput

    def get_output_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        schema = self.graph.get_output_schema(config)
        if not self.threads:
            return schema
        about = "The thread the turn was on: the request's thread_id, or the one the server made."
        return create_model(schema.__name__, __base__=schema, thread_id=(Optional[str], Field(None, description=about)))  # noqa: UP045

    @property
    def config_specs(self) -> list[ConfigurableFieldSpec]:
        specs = [
            # Optional[...], not `kind | None`: a runtime type object, and `Literal[...] | None` is a UnionType
            ConfigurableFieldSpec(id=name, annotation=Optional[kind], name=name, description=text, default=None)  # noqa: UP045
            for name, (kind, text) in SAFE_SETTINGS.items()
        ]
        more = [("thread_id", THREAD_ID_DESCRIPTION)] if self.threads else []
        return specs + [
            ConfigurableFieldSpec(id=name, annotation=str | None, name=name, description=text, default=None)
            for name, text in [*more, (REQUEST_ID, REQUEST_ID_DESCRIPTION)]
        ]

    def calibrated(self) -> Thresholds:
        """The server evaluator's calibrated (upper, lower)."""
        if self._calibrated is None:
            self._calibrated = resources.calibrated(resources.evaluator(self.defaults))
        return self._calibrated

    def scope(self, user: str | None) -> tuple[str, str | None] | None:
        """(field, user) when the server keeps each user to their documents (`filter_by_user`), else None."""
        return (self.filter_by_user, user) if self.filter_by_user else None

    def thread_of(self, configurable: dict[str, Any], owner: str | None) -> tuple[str | None, str | None]:
        """(thread id, checkpointer key) of a request's configurable, or (None, None) for a run without a
        thread. A request that names no thread on a server that keeps them gets a new one (the same for the
        same request id); a thread is its owner's (`owned_thread`)."""
        thread_id, request_id = configurable.get("thread_id"), configurable.get(REQUEST_ID)
        if request_id is not None:  # without threads, accepted and unused: no turn is saved to repeat
            check_request_id(request_id)
        if thread_id is not None:
            if not self.threads or self.threaded is None:
                raise ValueError("this server keeps no threads (it was started with --no-threads)")
            check_thread_id(thread_id)
        elif self.threads and self.threaded is not None:
            thread_id = new_thread_id(request_id)
        return thread_id, owned_thread(owner, thread_id) if thread_id is not None else None

    def _plan(self, config: RunnableConfig, run_manager) -> Plan:
        """The graph, config, options and thread of one request (`thread_of`, `OWNER_KEY`)."""
        configurable = dict(config.get("configurable") or {})
        thread_id, key = self.thread_of(configurable, configurable.pop(OWNER_KEY, None))
        user = configurable.pop(USER_KEY, None)
        if key is not None:
            configurable["thread_id"] = key  # the checkpointer's: the owner's thread of that id
        graph = self.threaded if key is not None else self.graph
        # a turn on a thread is checkpointed when it ends; a run without one, never
        durability = TURN_DURABILITY if key is not None else None
        context = context_for(self.defaults, configurable, self.calibrated(), self.scope(user))
        options = {"context": context, "durability": durability}
        child = patch_config({**config, "configurable": configurable}, callbacks=run_manager.get_child())
        said = {"thread_id": thread_id} if thread_id is not None else {}
        return Plan(graph, child, options, key, said, configurable.get(REQUEST_ID) if key is not None else None)

    @staticmethod
    def _question(value: Any) -> dict:
        return CragInput.model_validate(value).graph_input()

    def _invoke(self, value: Any, run_manager, config: RunnableConfig) -> dict:
        plan = self._plan(config, run_manager)
        return {**plan.graph.invoke(self._question(value), plan.config, **plan.options), **plan.said}

    async def _ainvoke(self, value: Any, run_manager, config: RunnableConfig) -> dict:
        plan = self._plan(config, run_manager)
        async with self._lock(plan.key):
            saved = await self._saved(plan)
            if saved is not None:
                return {**saved, **plan.said}
            output = await plan.graph.ainvoke(self._question(value), plan.config, **plan.options)
            await self._prune(plan.key)
            return {**output, **plan.said}

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> dict:
        return self._call_with_config(self._invoke, input, config, **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> dict:
        return await self._acall_with_config(self._ainvoke, input, config, **kwargs)

    def _transform(self, inputs: Iterator[Any], run_manager, config: RunnableConfig) -> Iterator[dict]:
        plan = self._plan(config, run_manager)
        for value in inputs:
            for chunk in plan.graph.stream(self._question(value), plan.config, stream_mode="values", **plan.options):
                yield {**_public(chunk), **plan.said}

    async def _atransform(self, inputs: AsyncIterator[Any], run_manager, config: RunnableConfig) -> AsyncIterator[dict]:
        plan = self._plan(config, run_manager)
        async with self._lock(plan.key):
            saved = await self._saved(plan)
            async for value in inputs:
                if saved is not None:
                    yield {**saved, **plan.said}
                    continue
                stream = plan.graph.astream(self._question(value), plan.config, stream_mode="values", **plan.options)
                async for chunk in stream:
                    yield {**_public(chunk), **plan.said}
            await self._prune(plan.key)

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[dict]:
        yield from self._transform_stream_with_config(iter([input]), self._transform, config, **kwargs)

    async def astream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> AsyncIterator[dict]:
        async def one() -> AsyncIterator[Any]:
            yield input

        async for chunk in self._atransform_stream_with_config(one(), self._atransform, config, **kwargs):
            yield chunk

    async def _saved(self, plan: Plan) -> dict | None:
        """The thread's last saved turn if it was this request's (its `request_id`): a retry after the turn
        was saved gets that answer, and the thread keeps the turn once."""
        if plan.request_id is None:
            return None
        state = await plan.graph.aget_state({"configurable": {"thread_id": plan.key}})
        if (state.metadata or {}).get(REQUEST_ID) != plan.request_id:
            return None
        return _public(state.values)

    async def _prune(self, key: str | None) -> None:
        """Keep only the thread's latest checkpoint, what its next turn reads. A failure costs only space (the
        next turn prunes what this one left), so it is logged, and the turn answered."""
        if key is None:
            return
        try:
            await prune(self.threaded.checkpointer, key)
        except Exception as exc:
            logger.warning("could not prune the old checkpoints of a thread: %s", exc)

    async def delete_thread(self, thread_id: str, owner: str | None) -> bool:
        """Delete `owner`'s thread `thread_id`; False if there is no such thread, `ThreadBusy` while a turn
        runs on it."""
        return await self._delete(owned_thread(owner, thread_id))

    async def expire(self, key: str, cutoff: str) -> bool:
        """Delete thread `key` if its latest checkpoint is still older than checkpoint id `cutoff` (the sweep's,
        `crag.serve.upkeep.expire`); a thread a turn holds is not idle, and is left."""
        try:
            return await self._delete(key, cutoff)
        except (ThreadBusy, InvalidThreadId):  # held, or a key no server made (never locked nor deleted)
            return False

    async def _delete(self, key: str, cutoff: str | None = None) -> bool:
        """Delete thread `key` under its turn lock, if it has a checkpoint (older than checkpoint id `cutoff`,
        when given); whether it was deleted."""
        saver = self.threaded.checkpointer
        async with self._lock(key):
            latest = await saver.aget_tuple({"configurable": {"thread_id": key, "checkpoint_ns": ""}})
            if latest is None or (cutoff is not None and latest.checkpoint["id"] >= cutoff):
                return False
            await saver.adelete_thread(key)
        return True

    async def busy(self, key: str | None) -> bool:
        """Whether a turn runs on thread `key` now, in this process or another."""
        if key is None:
            return False
        lock = self._thread_locks.get(key)
        return (lock is not None and lock.locked()) or await athread_busy(self.threads_location, key)

    @asynccontextmanager
    async def _lock(self, thread_id: str | None) -> AsyncIterator[None]:
        """One turn at a time per thread (its checkpointer key), in this process and across workers sharing a
        Postgres: `ThreadBusy` at once for a thread that has a turn running, rather than a wait that would
        hold the request's admission slot."""
        if thread_id is None:
            yield
            return
        lock = self._thread_locks.get(thread_id)
        if lock is None:  # kept only while a request holds it, so idle threads cost nothing
            lock = self._thread_locks[thread_id] = asyncio.Lock()
        if lock.locked():
            raise ThreadBusy(thread_id)
        async with lock, athread_turn(self.threads_location, thread_id):  # taken at once: no await before
            yield


def _public(state: dict) -> dict:
    """A streamed state without the graph's internal keys, like the invoke output."""
    return {key: value for key, value in state.items() if key in OUTPUT_KEYS}
