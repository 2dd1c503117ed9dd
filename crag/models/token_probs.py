"""A reply with each token's probability, as FLARE reads its confidence: the local model's greedy decode,
read step by step from llama.cpp's last logits (no `logits_all` table of every position, as the yes/no grader
reads them), or a provider's log-probabilities (OpenAI-compatible ones: `bind(logprobs=True)`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig

from crag.models.providers import cut_short
from crag.models.yes_no import evaluate, last_logits
from crag.records import Token

# where a reply written so far ends early (a character offset), or None to go on: FLARE's one sentence
Cut = Callable[[str], int | None]
Finish = Literal["stop", "length", "cut"]

# a provider cannot be handed the start of its own reply: it is asked to go on from it
CONTINUE = "Your answer so far:\n{prefix}\n\nContinue it from where it stops; write only what comes next."


@dataclass(frozen=True)
class Decoded:
    """What a model wrote: its text, the tokens it is made of (their texts join to `text`) and why it ended:
    "stop" (the end of its reply or a stop string), "length" (its token budget) or "cut" (the caller's `Cut`)."""

    text: str
    tokens: list[Token]
    finish: Finish


def first_stop(text: str, stops: Sequence[str]) -> int | None:
    """Where the earliest of `stops` begins in `text`, or None."""
    found = [i for s in stops if s and (i := text.find(s)) >= 0]
    return min(found) if found else None


def ended(text: str, tokens: list[Token], finish: Finish, stop: Sequence[str] = (), cut: Cut | None = None) -> Decoded:
    """`text` cut at its first stop string, else where `cut` ends it, its tokens cut with it."""
    end = first_stop(text, stop)
    if end is not None:
        finish = "stop"
    elif cut is not None and (end := cut(text)) is not None:
        finish = "cut"
    if end is None:
        return Decoded(text, tokens, finish)
    return Decoded(text[:end], cut_tokens(tokens, end), finish)


def cut_tokens(tokens: list[Token], end: int) -> list[Token]:
    """The tokens of the first `end` characters: the one across `end` keeps its part before it."""
    kept, at = [], 0
    for token in tokens:
        if at >= end:
            break
        part = token["text"][: end - at]
        kept.append(Token(text=part, prob=token["prob"]))
        at += len(part)
    return kept


def greedy(
    llama: Any,
    formatter: Callable[..., Any],
    messages: list[dict[str, str]],
    *,
    prefix: str = "",
    max_tokens: int,
    stop: Sequence[str] = (),
    cut: Cut | None = None,
) -> Decoded:
    """The reply `create_chat_completion` writes at temperature 0 (the argmax at each step, llama.cpp's greedy
    sampler), each token with its softmax probability over the vocabulary, read from the last position's logits.

    `formatter`: the model's chat template (`Jinja2ChatFormatter`, as llama-cpp-python's handler formats the
    metadata's template); `prefix`: the reply's start, written after the template's assistant turn for the model to
    go on from. It stops at an end-of-generation token, a stop string (the template's end-of-turn text too), after
    `max_tokens`, or where `cut` ends the text. The context's cached start is reused, as `generate` reuses it."""
    import llama_cpp

    formatted = formatter(messages=messages)
    prompt = llama.tokenize((formatted.prompt + prefix).encode(), add_bos=False, special=True)
    if len(prompt) + max_tokens > llama.n_ctx():
        raise ValueError(
            f"the prompt ({len(prompt)} tokens) and {max_tokens} more exceed the context of {llama.n_ctx()}"
        )
    stops = [*stop, *([formatted.stop] if isinstance(formatted.stop, str) else formatted.stop or [])]
    evaluate(llama, prompt)
    written: list[int] = []
    tokens: list[Token] = []
    text = ""
    finish: Finish = "length"
    vocab = llama._model.vocab  # llama-cpp-python's vocabulary handle lives on its model wrapper
    for _ in range(max_tokens):
        logits = last_logits(llama)
        token = int(np.argmax(logits))
        if llama_cpp.llama_vocab_is_eog(vocab, token):
            finish = "stop"
            break
        written.append(token)
        # the whole reply detokenized again, as llama-cpp-python does: a character split across tokens (UTF-8)
        # appears once its last byte is written, with that token
        now = llama.detokenize(written, prev_tokens=prompt).decode("utf-8", "ignore")
        tokens.append(Token(text=now[len(text) :], prob=float(1.0 / np.exp(logits - logits[token]).sum())))
        text = now
        if first_stop(text, stops) is not None or (cut is not None and cut(text) is not None):
            return ended(text, tokens, "stop", stops, cut)
        llama.eval([token])
    return Decoded(text, tokens, finish)


def from_logprobs(message: BaseMessage) -> list[Token]:
    """The tokens of a provider's reply from its log-probabilities (OpenAI's `response_metadata["logprobs"]`)."""
    logprobs = (getattr(message, "response_metadata", None) or {}).get("logprobs") or {}
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        raise ValueError(
            "the chat model returned no token log-probabilities; FLARE needs a local model or a provider that "
            "returns them (OpenAI-compatible ones with logprobs)"
        )
    return [Token(text=t["token"], prob=math.exp(t["logprob"])) for t in content]


def with_probabilities(
    model: BaseChatModel,
    messages: Sequence[Any],
    *,
    prefix: str = "",
    stop: Sequence[str] = (),
    cut: Cut | None = None,
    config: RunnableConfig | None = None,
) -> Decoded:
    """A provider's reply to `messages` with each token's probability (`logprobs=True`), as long as the model's
    own token limit allows, ended as `greedy` ends the local model's; given a `prefix` the provider is asked to
    go on from it (`CONTINUE`)."""
    chat = list(convert_to_messages(list(messages)))
    if prefix.strip():
        chat.append(HumanMessage(CONTINUE.format(prefix=prefix.strip())))
    reply = model.bind(logprobs=True).invoke(chat, stop=list(stop) or None, config=config)
    tokens = from_logprobs(reply)
    text = "".join(t["text"] for t in tokens)
    if text != str(reply.content):  # the tokens do not spell the reply: trust the reply's text, whole
        tokens = [Token(text=str(reply.content), prob=min((t["prob"] for t in tokens), default=1.0))]
        text = str(reply.content)
    return ended(text, tokens, "length" if cut_short(reply) else "stop", stop, cut)


__all__ = ["Decoded", "greedy", "with_probabilities"]  # what callers outside the package use
