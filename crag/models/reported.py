"""Model calls made outside LangChain's `invoke` reported to the callbacks of the run they belong to, as an
`invoke`'s are. The local model's token probabilities (FLARE's drafts), its yes/no and its label shares read
llama.cpp's logits directly, so no callback saw them: the harness's count of model calls (`StageTimer`) missed
them, and so did a tracer. LangChain's own way in is used: the run's config (`ensure_config`, which a LangGraph
node's call inherits) gives the callback manager, which opens and closes an LLM run around the call. What a call
wrote is told as an `invoke`'s reply is, an AIMessage with `usage_metadata`, so one reader counts both (the
prompt's tokens are not counted here: 0)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from langchain_core.messages import AIMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, Generation, LLMResult
from langchain_core.runnables.config import ensure_config, get_callback_manager_for_config

F = TypeVar("F", bound=Callable[..., Any])
# what a call wrote: (text, tokens written), one per model call it made
Replies = Callable[[Any, tuple], list[tuple[str, int]]]


def one(result: Any, args: tuple) -> list[tuple[str, int]]:
    """A call that reads one reply's first-token probabilities and writes nothing."""
    return [("", 0)]


def reported(replies: Replies = one) -> Callable[[F], F]:
    """Wrap a local chat model's method so each call is an LLM run of the current config's callbacks;
    `replies(result, args)` says what it wrote, one (text, tokens) per model call (a batch of asks is several calls)."""

    def wrap(method: F) -> F:
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            manager = get_callback_manager_for_config(ensure_config())
            if not manager.handlers:
                return method(self, *args, **kwargs)
            name = f"{type(self).__name__}.{method.__name__}"
            (run,) = manager.on_llm_start({"name": name}, [name], name=name)
            try:
                result = method(self, *args, **kwargs)
            except BaseException as exc:
                run.on_llm_error(exc)
                raise
            generations: list[Generation] = [
                ChatGeneration(
                    message=AIMessage(
                        content=text,
                        response_metadata=self._metadata(None),  # the model's name, as its replies have
                        usage_metadata=UsageMetadata(input_tokens=0, output_tokens=tokens, total_tokens=tokens),
                    )
                )
                for text, tokens in replies(result, args)
            ]
            run.on_llm_end(LLMResult(generations=[generations]))
            return result

        return wrapper  # type: ignore[return-value]

    return wrap


__all__ = ["reported"]  # what callers outside the package use
