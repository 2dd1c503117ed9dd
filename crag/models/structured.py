"""A chat model's reply held to a schema by LangChain's `with_structured_output`, as LangGraph's CRAG tutorial
grades: what each provider does with it is its own class's choice (OpenAI and Ollama: a JSON schema the reply must
follow; Anthropic: a forced tool call). A model without it (no tool calling, no JSON mode), or a reply that does
not parse, leaves its text for the caller's fallback (a first word, a line)."""

from __future__ import annotations

import functools
from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel, Field, ValidationError

from crag.models.chat import LocalChatModel
from crag.models.providers import cut_short


def held_to(
    model: BaseChatModel, messages: Any, schema: type[BaseModel], config: Any = None
) -> tuple[BaseModel | None, BaseMessage]:
    """(the reply to `messages` parsed into `schema`, or None when it does not parse; the reply itself). A
    model without structured output is asked plainly, its reply read as JSON. A reply that does not parse is
    kept (`include_raw`), but ChatOpenAI parses inside OpenAI's client, which keeps nothing when it fails: then
    the model is asked once more, plainly, for a text its caller can read."""
    try:
        bound = model.with_structured_output(schema, include_raw=True)
    except NotImplementedError:  # no tool calling or JSON mode: the reply as written
        return _plain(model, messages, schema, config)
    try:
        out = bound.invoke(messages, config=config)
    except (ValidationError, OutputParserException):
        return _plain(model, messages, schema, config)
    except _cut_short_errors():  # asked again it would be cut again: a reply cut short, with nothing in it
        return None, AIMessage(content="", response_metadata={"finish_reason": "length"})
    out = out if isinstance(out, dict) else {"parsed": out}  # include_raw: {"raw", "parsed", "parsing_error"}
    parsed = out.get("parsed") if isinstance(out.get("parsed"), schema) else None
    raw = out.get("raw")
    return parsed, raw if isinstance(raw, BaseMessage) else AIMessage(content="")


@functools.cache
def _cut_short_errors() -> tuple[type[BaseException], ...]:
    """What OpenAI's client raises for a structured reply its token limit cut (ChatOpenAI lets it through)."""
    try:
        from openai import LengthFinishReasonError  # noqa: PLC0415 - optional: the openai extra brings it
    except ImportError:
        return ()
    return (LengthFinishReasonError,)


def _plain(
    model: BaseChatModel, messages: Any, schema: type[BaseModel], config: Any
) -> tuple[BaseModel | None, BaseMessage]:
    raw = model.invoke(messages, config=config)
    try:
        return schema.model_validate_json(str(raw.content)), raw
    except ValidationError:
        return None, raw


def fallback_text(reply: BaseMessage) -> str:
    """The reply's text for a caller that reads it itself: empty when it is JSON that did not fit the schema
    (a reply cut mid-object, a field missing), which holds nothing a line or a first word could give."""
    text = str(reply.content)
    return "" if text.lstrip().startswith("{") else text


# What a provider returns for a reply that is a short text (a query, a passage, a question): one field, so the
# caller's checks (`crag.knowledge.web_query.parse_query`, …) read the text and no prose around it.
class SearchQueryReply(BaseModel):
    """The web search query."""

    query: str = Field(description="at most three keywords, separated by commas")


class RequeryReply(BaseModel):
    """The search query for the documents."""

    query: str = Field(description="one search query, in the words the documents would use")


class PassageReply(BaseModel):
    """A passage written only to search the documents with."""

    passage: str = Field(description="two or three sentences, written as the documents would be")


class QuestionReply(BaseModel):
    """The last question, rewritten to stand without the conversation."""

    question: str = Field(description="the rewritten question")


def written(
    model: BaseChatModel, messages: Any, schema: type[BaseModel], config: Any = None
) -> tuple[str, BaseMessage]:
    """(a short text the model writes, its reply): the local model's reply as it always was (the prompts' few-shot
    form ends where its text begins); a provider's one field of `schema` (`SearchQueryReply`, …) where it has
    structured output and the reply was not cut short, else the reply's text (`fallback_text`)."""
    if isinstance(model, LocalChatModel):
        said = model.invoke(messages, config=config)
        return str(said.content), said
    parsed, reply = held_to(model, messages, schema, config)
    if parsed is not None and not cut_short(reply):  # LangChain's JSON parsers close a cut object: "Anna Berg, occ"
        return str(next(iter(parsed.model_dump().values()))), reply
    return fallback_text(reply), reply


__all__ = ["PassageReply", "QuestionReply", "RequeryReply", "SearchQueryReply", "held_to", "written"]
