"""A conversation as chat clients send it: LangChain messages (or their dicts, `{"role": "user", "content": …}`)
kept with `add_messages`. The turn's question is the last message when it is the user's; the user's and the
assistant's messages before it are the turns before (`Turn`); the answer joins them as an `AIMessage`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.messages import convert_to_messages as _convert

from crag.questions.checks import InvalidQuestion, validate_question
from crag.records import Turn


def as_messages(messages: Any) -> list[BaseMessage]:
    """`messages` as LangChain messages (objects, or dicts by `role` or `type`); InvalidQuestion saying which
    one is not a message."""
    if not isinstance(messages, list):
        raise InvalidQuestion(f"messages must be a list, got {type(messages).__name__}")
    converted = []
    for n, message in enumerate(messages):
        try:
            converted += _convert([message])
        except (ValueError, TypeError, NotImplementedError, KeyError) as exc:
            raise InvalidQuestion(
                f"messages[{n}] is not a chat message: give {{'role': 'user', 'content': '…'}} or a LangChain "
                f"message ({str(exc).splitlines()[0][:200]})"
            ) from None
    return converted


def asked_by_user(messages: Sequence[BaseMessage]) -> str | None:
    """The question a conversation asks: its last message's text when that is the user's, else None."""
    if messages and isinstance(messages[-1], HumanMessage):
        return validate_question(messages[-1].text)
    return None


def _key(message: BaseMessage) -> tuple[str, str]:
    return message.type, message.text


def resent(messages: Sequence[BaseMessage]) -> list[RemoveMessage]:
    """The removal of a second copy of the conversation before the question: a client that sends the whole
    conversation again, as dicts without ids, to a thread that holds it (`add_messages` merges only by id)."""
    earlier = list(messages[:-1])
    half = len(earlier) // 2
    if not half or len(earlier) % 2 or [_key(m) for m in earlier[:half]] != [_key(m) for m in earlier[half:]]:
        return []
    return [RemoveMessage(id=m.id) for m in earlier[half:] if m.id]


def turns(messages: Sequence[BaseMessage]) -> list[Turn]:
    """The finished turns of a conversation: each reply of the assistant with the user's message before it
    (system and tool messages, and the assistant's tool calls, are not turns)."""
    found, pending = [], None
    for message in messages:
        if isinstance(message, HumanMessage):
            pending = message.text
        elif isinstance(message, AIMessage) and not message.tool_calls and pending is not None:
            found.append(Turn(asked=pending, question=pending, answer=message.text))
            pending = None
    return found


# what is said of an answer beside its text: on the conversation's AI message, and in crag_tool's artifact
ABOUT_ANSWER = ("question", "action", "grounded", "sources", "citations")


def answer_message(answer: str, metadata: dict[str, Any]) -> AIMessage:
    """The answer as the conversation's next message: its text the answer (what a chat UI shows), the rest
    in `response_metadata`, which describes a reply and, unlike `additional_kwargs`, no LangChain chat model
    sends back to a provider when the conversation is replayed to it."""
    return AIMessage(content=answer, response_metadata=metadata)


__all__ = ["ABOUT_ANSWER", "answer_message", "as_messages", "asked_by_user", "resent", "turns"]
