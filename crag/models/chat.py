"""Chat models: the local default (a GGUF on llama.cpp) or any provider's through `init_chat_model`.
Hand-written over `llama_cpp.Llama` rather than `ChatLlamaCpp` (being sunset), which has no models shared
per process or exclusive contexts; a pool of `CRAG_LLM_INSTANCES` contexts per file serves requests side by side."""

from __future__ import annotations

import atexit
import ctypes
import os
import queue
import re
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, Literal

from langchain.chat_models import init_chat_model
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.base import LangSmithParams
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    convert_to_messages,
)
from langchain_core.messages.ai import UsageMetadata, add_usage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable

from crag.models import gguf
from crag.models.json_schema import held_to_schema
from crag.models.llama import load_llama
from crag.models.providers import client_limits, split_spec
from crag.models.reported import reported
from crag.models.token_probs import Cut, Decoded, greedy
from crag.models.tool_calls import calls_from_reply, llama_messages, openai_tools, repeats, tool_choice_of, tool_params
from crag.models.yes_no import (
    LlamaYesNo,
    answers_messages,
    choose_messages,
    grader_messages,
)
from crag.runtime.cache import ResourceCache
from crag.runtime.errors import PromptTooLong
from crag.runtime.extras import require

_POOLS: ResourceCache[tuple[str, int], _Pool] = ResourceCache("chat_model")
_ROLES = {"human": "user", "ai": "assistant", "system": "system"}


_LOG_CALLBACK: Any = None  # kept referenced: llama.cpp calls it for as long as the process runs
GGML_LOG_LEVEL_ERROR = 4  # ggml.h: NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5


def _errors_only(llama_cpp: Any) -> None:
    """Let only llama.cpp's errors through: llama-cpp-python maps its log levels one step off."""
    global _LOG_CALLBACK
    if _LOG_CALLBACK is None:

        @llama_cpp.llama_log_callback
        def errors_only(level: int, text: bytes, user_data: Any) -> None:
            if level == GGML_LOG_LEVEL_ERROR:
                sys.stderr.write(text.decode("utf-8", "replace"))

        _LOG_CALLBACK = errors_only
        llama_cpp.llama_log_set(errors_only, ctypes.c_void_p(0))


class _Pool:
    """`size` llama.cpp contexts on one model file, one request at a time each, and one per lane."""

    def __init__(self, model: str, n_ctx: int, size: int):
        llama_cpp = require("llama_cpp", "local")
        _errors_only(llama_cpp)

        threads = int(os.environ.get("CRAG_LLM_THREADS", "0")) or os.cpu_count() or 2
        self._options = {"n_ctx": n_ctx, "n_batch": 512, "n_threads": threads, "seed": 0, "verbose": False}
        self._model = model
        self.instances = [self._load() for _ in range(size)]
        self._free: queue.SimpleQueue = queue.SimpleQueue()
        for llama in self.instances:
            self._free.put(llama)
        self.lanes: dict[str, tuple[Any, threading.Lock]] = {}
        self._lanes_lock = threading.Lock()
        self.controls = control_pattern(self.instances[0], llama_cpp)
        self.yes_no = LlamaYesNo(self.instances[0])  # the same vocabulary and template for every context

    def _lane(self, name: str) -> tuple[Any, threading.Lock]:
        with self._lanes_lock:
            if name not in self.lanes:  # the weights are mapped once by the OS: a context costs its cache alone
                self.lanes[name] = (self._load(), threading.Lock())
            return self.lanes[name]

    def _load(self) -> Any:
        # every context, the first and each later one, loads the file as checked just now (`gguf.model_file`)
        return load_llama(gguf.model_file(self._model), **self._options)

    @contextmanager
    def use(self, lane: str | None = None) -> Iterator[Any]:
        """A context for one request: the lane's own when it is free, else the next free shared one."""
        if lane is not None:
            llama, lock = self._lane(lane)
            if lock.acquire(blocking=False):
                try:
                    yield llama
                finally:
                    lock.release()
                return
        llama = self._free.get()
        try:
            yield llama
        finally:
            self._free.put(llama)

    def contexts(self) -> list[Any]:
        return [*self.instances, *(llama for llama, _ in self.lanes.values())]

    def reset(self) -> None:
        """Forget every context's prompt cache, once each is free."""
        taken = [self._free.get() for _ in self.instances]
        for llama in taken:
            llama.reset()
            self._free.put(llama)
        for llama, lock in list(self.lanes.values()):
            with lock:
                llama.reset()


# what breaks a control token's text apart: U+2060 WORD JOINER, invisible and no part of any token's text
BREAK = "\u2060"


def control_pattern(llama: Any, llama_cpp: Any) -> re.Pattern[str] | None:
    """The texts of a model's control and user-defined tokens ("<|im_start|>"), as one pattern, or None."""
    model = llama._model  # llama-cpp-python's vocabulary accessors live on its model wrapper
    special = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
    texts = {
        text
        for token in range(model.n_vocab())
        if model.token_get_attr(token) & special and len(text := model.token_get_text(token)) > 1
    }
    return re.compile("|".join(re.escape(t) for t in sorted(texts, key=len, reverse=True))) if texts else None


def inert(text: str, controls: re.Pattern[str] | None) -> str:
    """`text` with every control token's text broken after its first character: llama-cpp-python parses
    special tokens in a prompt, so "<|im_start|>system" in a passage would be an injected turn."""
    if controls is None:
        return text
    return controls.sub(lambda m: m.group(0)[0] + BREAK + m.group(0)[1:], text)


def _pool(model: str, n_ctx: int) -> _Pool:
    """The shared contexts of a local model by name (its file is checked as each context loads it)."""
    path = str(gguf.where(model))  # cheap, on every request: neither assembled nor hashed here

    def load() -> _Pool:
        size = max(1, int(os.environ.get("CRAG_LLM_INSTANCES", "1") or 1))
        return _Pool(model, n_ctx, size=size)

    return _POOLS.get((path, n_ctx), load)


@atexit.register
def _close_all() -> None:
    """Free every llama.cpp context at exit while the interpreter is whole: a late finalizer prints a TypeError."""
    for pool in _POOLS.clear():
        for llama in pool.contexts():
            llama.close()


def reset_prompt_caches() -> None:
    """Make every local model evaluate its next prompt from scratch (a reused prefix flatters timings)."""
    for pool in _POOLS.values():
        pool.reset()


class LocalChatModel(BaseChatModel):
    """A llama.cpp GGUF chat model, greedy by default, shared and serialised per process.

    `model` is a local name ('local', 'local:tiny', 'local:/path/model.gguf'), resolved at the first request."""

    model: str = gguf.LOCAL
    # the context window: the generate prompt with room for longer strips or whole documents
    n_ctx: int = 4096
    max_tokens: int = 96
    temperature: float = 0.0
    # where every reply stops unless a call gives its own (LangChain's standard `stop` parameter)
    stop: list[str] | None = None
    # a context of its own for prompts that begin alike ("condense"): llama.cpp reads only what follows the start
    lane: str | None = None
    # with tools bound, a stream is the called reply in one chunk (LangChain's own switch): a tool call's markup
    # is read once the reply is whole
    disable_streaming: bool | Literal["tool_calling"] = "tool_calling"

    @property
    def _llm_type(self) -> str:
        return "crag-llama-cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": self.max_tokens, "temperature": self.temperature}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        """The standard tracing parameters (model, temperature, max_tokens, stop) with llama.cpp as provider."""
        params = super()._get_ls_params(stop=stop or self.stop, **kwargs)
        params["ls_provider"] = "llamacpp"
        return params

    def _messages(self, messages: list[BaseMessage], controls: re.Pattern[str] | None) -> list[dict[str, Any]]:
        return llama_messages(messages, partial(inert, controls=controls))

    def bind_tools(
        self, tools: Sequence[dict[str, Any] | type | Callable | Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable:
        """The model with `tools` (as OpenAI's schemas, `convert_to_openai_tool`) given to its chat template, its
        replies' tool calls in `AIMessage.tool_calls`. `tool_choice`: None or "auto" (the model chooses), "none",
        "any" (a grammar holds the reply to one call) or a tool's name (llama-cpp-python's grammar of its
        arguments)."""
        formatted = openai_tools(tools)
        return self.bind(tools=formatted, tool_choice=tool_choice_of(tool_choice, formatted), **kwargs)

    def _call(self, messages: list[BaseMessage], stop: list[str] | None, streaming: bool, **kwargs: Any):
        pool = _pool(self.model, self.n_ctx)
        params = {
            "messages": self._messages(messages, pool.controls),
            "max_tokens": kwargs.get("max_tokens", self.max_tokens),
            "temperature": kwargs.get("temperature", self.temperature),
            "stop": stop if stop is not None else self.stop,
            "stream": streaming,  # a caller's own stream=True (LangChain's invoke option) stays in kwargs, unused
        }
        if kwargs.get("response_format"):  # a JSON schema the reply is held to (`with_structured_output`)
            params["response_format"] = kwargs["response_format"]
        return pool, {**params, **tool_params(kwargs)}  # the template writes the tools; a choice: a grammar

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        pool, params = self._call(messages, stop, False, **kwargs)
        with pool.use(self.lane) as llama, _within_window():
            reply = llama.create_chat_completion(**params)
        said = reply["choices"][0]["message"]
        text, calls, invalid = calls_from_reply(said, kwargs)
        usage = reply.get("usage") or {}
        if kwargs.get("tool_choice") in (None, "auto") and repeats(calls, messages):
            # given a tool's response, Qwen2.5-Coder-1.5B makes the same call again (seen on crag_tool): an agent
            # would loop to its recursion limit. Asked without the tools, it answers from the response.
            again = self._generate(messages, stop, run_manager, **{**kwargs, "tool_choice": "none"})
            first = _usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))
            answer = again.generations[0].message
            answer.usage_metadata = add_usage(first, answer.usage_metadata)  # type: ignore[attr-defined]
            return again
        # "length" when `max_tokens` cut the reply, as OpenAI's models say it (`cut_short`)
        finish = reply["choices"][0].get("finish_reason")
        message = AIMessage(
            content=text,
            tool_calls=calls,
            invalid_tool_calls=invalid,
            response_metadata=self._metadata(finish),
            usage_metadata=_usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _metadata(self, finish: str | None) -> dict[str, Any]:
        """A reply's response_metadata: the model's name (`langchain_core.callbacks.usage` keys on it) and
        why it ended."""
        return {"model_name": gguf.name_of(self.model), **({"finish_reason": finish} if finish else {})}

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        pool, params = self._call(messages, stop, True, **kwargs)
        finish, written = None, 0
        with pool.use(self.lane) as llama, _within_window():
            # llama-cpp-python's chunks carry no usage: the prompt's tokens are counted as its chat handler
            # makes them (the same template), the reply's one content delta per token it wrote
            prompt = pool.yes_no.format(messages=params["messages"]).prompt
            read = len(llama.tokenize(prompt.encode(), add_bos=False, special=True))
            for part in llama.create_chat_completion(**params):
                finish = part["choices"][0].get("finish_reason") or finish
                delta = part["choices"][0]["delta"]
                written += "content" in delta
                text = delta.get("content") or ""
                if not text:
                    continue
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
                if run_manager:
                    run_manager.on_llm_new_token(text, chunk=chunk)
                yield chunk
        # the usage, once for the whole reply (chunks add up), and the end; also an empty answer when it stopped
        # at once, not LangChain's "No generations found"
        last = AIMessageChunk(
            content="",
            response_metadata=self._metadata(finish),
            usage_metadata=_usage(read, written),
            chunk_position="last",
        )
        yield ChatGenerationChunk(message=last)

    def relevance(self, question: str, document: str, messages: Sequence[Any] | None = None) -> float:
        """The tutorial grader's P(yes) for one pair, in [-1, 1]: a ranking, not only a yes or a no. `messages`:
        the grade prompt filled in, when it is not the tutorial's (a user's template)."""
        if messages is None:
            return self._yes_no(grader_messages(question, document))
        chat = convert_to_messages(messages)
        return self._yes_no([{"role": _ROLES.get(m.type, "user"), "content": str(m.content)} for m in chat])

    def answers(self, question: str, passage: str) -> float:
        """P(yes) that `passage` answers `question`, in [-1, 1]."""
        return self._yes_no(answers_messages(question, passage))

    def choose(self, question: str, passages: list[str]) -> list[float]:
        """How likely the model is to name each of `passages` (at most 9) as the one that answers `question`."""
        if not 0 < len(passages) <= 9:
            raise ValueError(f"choose takes 1 to 9 passages, got {len(passages)}")
        labels = [str(n) for n in range(1, len(passages) + 1)]
        return self.shares([(choose_messages(question, passages), labels)])[0]

    @reported(lambda shares, args: [("", 0)] * len(shares))
    def shares(self, asks: Sequence[tuple[list[dict[str, str]], Sequence[str]]]) -> list[list[float]]:
        """For each (chat, labels): how the first reply token's probability divides among the labels. All are
        read in one context, one after the other, so asks that begin alike evaluate their common start once."""
        pool = _pool(self.model, self.n_ctx)
        with pool.use() as llama:
            return [
                pool.yes_no.shares(
                    llama,
                    [{**m, "content": inert(m["content"], pool.controls)} for m in messages],
                    pool.yes_no.label_tokens(llama, labels),
                )
                for messages, labels in asks
            ]

    @reported()
    def verdict(self, messages: Sequence[Any]) -> float:
        """P(yes) of the reply to the conversation `messages` (messages or role/content dicts), in [-1, 1], in
        the lane's context: a later call that continues the conversation finds its tokens there."""
        pool = _pool(self.model, self.n_ctx)
        with pool.use(self.lane) as llama:
            return pool.yes_no.score(llama, self._messages(convert_to_messages(messages), pool.controls))

    @reported(lambda decoded, args: [(decoded.text, len(decoded.tokens))])
    def decode(
        self, messages: Sequence[Any], *, prefix: str = "", stop: Sequence[str] = (), cut: Cut | None = None
    ) -> Decoded:
        """Its greedy reply to `messages`, going on from `prefix`, with each token's probability (`greedy`)."""
        pool = _pool(self.model, self.n_ctx)
        chat = self._messages(convert_to_messages(messages), pool.controls)
        with pool.use(self.lane) as llama:
            return greedy(
                llama,
                pool.yes_no.format,
                chat,
                prefix=inert(prefix, pool.controls),
                max_tokens=self.max_tokens,
                stop=stop,
                cut=cut,
            )

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, method: str | None = None, **kwargs: Any
    ) -> Runnable:
        """Replies held to the JSON of `schema` (a pydantic model, a TypedDict or a JSON schema) by llama.cpp's
        grammar and parsed into it (a model's instance, else a dict); with `include_raw`, {"raw", "parsed",
        "parsing_error"} as a provider's (a reply its token budget cut does not parse). Every `method`
        ("json_schema", "json_mode", "function_calling") is the grammar: a forced tool call would be one too, and
        JSON mode held to the schema is JSON still."""
        return held_to_schema(self, schema, include_raw=include_raw, method=method)

    @reported()
    def _yes_no(self, messages: list[dict[str, str]]) -> float:
        pool = _pool(self.model, self.n_ctx)
        messages = [{**m, "content": inert(m["content"], pool.controls)} for m in messages]
        with pool.use() as llama:
            return pool.yes_no.score(llama, messages)


def _usage(read: int, written: int) -> UsageMetadata:
    return UsageMetadata(input_tokens=read, output_tokens=written, total_tokens=read + written)


@contextmanager
def _within_window() -> Iterator[None]:
    """llama.cpp's refusal of a prompt longer than its context as `PromptTooLong`, which says what to lower
    (llama-cpp-python raises a bare ValueError: its message is all that tells it apart)."""
    try:
        yield
    except ValueError as exc:
        if "exceed context window" not in str(exc):
            raise
        raise PromptTooLong(
            f"the prompt is longer than the chat model can read ({exc}): the settings gathered too much text; "
            "lower top_k_strips, further_strips, knowledge_tokens or k"
        ) from exc


CHAT_MODEL_HELP = (
    f"'local' ({gguf.DEFAULT.title} on llama.cpp), 'local:tiny' (SmolLM2-135M, fast), 'local:/path/model.gguf' "
    "or '<provider>:<model>' (openai, anthropic, ollama, …)"
)


def _limits(provider: str, max_tokens: int) -> dict[str, Any]:
    """The answer's length and timeout in each provider's words (ChatOllama ignores `max_tokens`)."""
    length = {"num_predict": max_tokens} if provider == "ollama" else {"max_tokens": max_tokens}
    return {**length, **client_limits(provider)}


# how each provider's reply says that its token budget cut it (OpenAI, Anthropic, Ollama)
def chat_model(spec: Any = "local", *, max_tokens: int = 96, lane: str | None = None) -> BaseChatModel:
    """A chat model from its name (`CHAT_MODEL_HELP`; a provider's at temperature 0), or a ready model as it is.
    `lane` gives a local model's prompts of one kind a context of their own; other models ignore it."""
    if isinstance(spec, BaseChatModel):
        return spec
    if gguf.is_local(spec):
        require("llama_cpp", "local")  # missing: say so now, not when the first answer is due
        gguf.check(spec)  # an unknown name, its packages missing, a user's file that is not there
        return LocalChatModel(model=spec.strip(), max_tokens=max_tokens, lane=lane)
    provider, name = split_spec(spec, "chat model", CHAT_MODEL_HELP)
    try:
        return init_chat_model(name, model_provider=provider, temperature=0, **_limits(provider, max_tokens))
    except ImportError as exc:  # a provider without an extra of ours: LangChain's message names its package
        raise ValueError(f"chat model {spec!r}: {exc}") from exc
    except Exception as exc:  # an unknown provider, a missing API key: the provider's own words
        raise ValueError(f"cannot create chat model {spec!r}: {type(exc).__name__}: {exc}") from exc


__all__ = ["CHAT_MODEL_HELP", "chat_model"]  # what callers outside the package use
