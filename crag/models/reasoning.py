"""The reader's own reasoning (Self-Reasoning, Xia et al. 2025) as chat-model calls on a conversation: a yes/no
verdict, read from the first reply token's probabilities where the model is local, and replies held to a
schema: llama.cpp's JSON grammar locally, a provider's structured output where it has one."""

from __future__ import annotations

from typing import Any, Literal, cast

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field, ValidationError

from crag.models.chat import LocalChatModel
from crag.models.yes_no import reply_score

QUOTES = 3  # the most sentences the reader selects as evidence


class Judgement(BaseModel):
    """Whether the documents are relevant to the question, and why (a provider's structured step 1)."""

    relevant: Literal["yes", "no"] = Field(description="whether the documents are relevant to the question")
    reason: str = Field(description="why, in one sentence")


class Quote(BaseModel):
    """One key sentence selected as evidence."""

    document: int = Field(description="the number of the document the sentence is copied from")
    sentence: str = Field(description="the sentence, copied word for word from that document")
    reason: str = Field(description="why the sentence is selected as evidence")


class Selection(BaseModel):
    """The evidence-aware selective process's reply: the key sentences, each with its reason."""

    evidence: list[Quote] = Field(max_length=QUOTES, description="the key sentences that answer the question")


class Analysis(BaseModel):
    """The trajectory analysis's reply: an analysis of the steps before, then the answer."""

    analysis: str = Field(description="a short analysis of the relevance judgement and the evidence")
    answer: str = Field(description="the final answer to the question, in one short sentence")


def structured(model: BaseChatModel, messages: list, schema: type[BaseModel], config: Any = None):
    """(the reply to `messages` parsed into `schema`, or None when it does not parse; the reply's text):
    held to the schema where the model can be (the local model, a provider with structured output), else
    its reply read as JSON."""
    try:
        bound = model.with_structured_output(schema, include_raw=True)
    except NotImplementedError:  # no structured output (no tool calling or JSON mode): read the reply
        text = str(model.invoke(messages, config=config).content)
        try:
            return schema.model_validate_json(text), text
        except ValidationError:
            return None, text
    out = cast(dict[str, Any], bound.invoke(messages, config=config))  # include_raw: {"raw", "parsed", ...}
    parsed = out["parsed"] if isinstance(out["parsed"], schema) else None
    # a provider's tool call leaves the text empty: the parsed reply stands for it in the conversation
    text = str(out["raw"].content) or (parsed.model_dump_json() if parsed else "")
    return parsed, text


def verdict(model: BaseChatModel, messages: list, config: Any = None) -> tuple[float, str]:
    """(P(yes) of the reply to `messages`, in [-1, 1]; the reply's text). A local model's from its first reply
    token, the reply then written in the same context (its prompt already read); a provider's from its
    structured `Judgement`, else from its reply's first word."""
    if isinstance(model, LocalChatModel):
        score = model.verdict(messages)
        return score, str(model.invoke(messages, config=config).content)
    judged, text = structured(model, messages, Judgement, config)
    return (reply_score(judged.relevant) if judged is not None else reply_score(text)), text


__all__ = ["Analysis", "Selection", "structured", "verdict"]  # what callers outside the package use
