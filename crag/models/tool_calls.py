"""Tool calling for the local chat model: LangChain's tools and messages in the shapes llama-cpp-python's chat
completion takes, and its replies' tool calls back as `AIMessage.tool_calls`.

llama-cpp-python gives the GGUF's own chat template the `tools` (Qwen2.5's writes them into the system prompt
and asks for `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`), and for a named `tool_choice` holds the
reply to that tool's arguments by a grammar and returns the call itself. It does not read the markup of a free
choice ("auto"), so `calls_in` does; "any" is a grammar over every tool's {"name", "arguments"}. Its
`chatml-function-calling` handler is not used: its own template drops role "tool" messages (the tools' responses
an agent sends back), and its answer step's grammar admits only a call or the end of the turn."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, InvalidToolCall, ToolCall, ToolMessage
from langchain_core.messages.tool import invalid_tool_call, tool_call
from langchain_core.utils.function_calling import convert_to_openai_tool

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
# Qwen2.5's (and Hermes') tool-call markup, the protocol its template asks for
_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
# the JSON object the template asks for, written without the markup and maybe in a code fence (Qwen2.5-Coder's way)
_BARE = re.compile(r"\s*(?:```(?:json)?\s*)?(\{.*\})\s*(?:```)?\s*", re.DOTALL)
_DECODER = json.JSONDecoder()
_FORCED = ("any", "required")


def tool_params(kwargs: dict[str, Any]) -> dict[str, Any]:
    """llama-cpp-python's chat completion parameters for the bound `tools` and `tool_choice` (none with "none")."""
    tools, choice = kwargs.get("tools"), kwargs.get("tool_choice")
    if not tools or choice == "none":
        return {}
    if choice == "any":
        return {"tools": tools, "response_format": any_tool_format(tools)}
    return {"tools": tools, **({"tool_choice": choice} if isinstance(choice, dict) else {})}


def openai_tools(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """Tools as OpenAI's tool schemas (LangChain's contract for `bind_tools`): what the template is given."""
    return [convert_to_openai_tool(tool) for tool in tools]


def tool_choice_of(choice: Any, tools: list[dict[str, Any]]) -> str | dict[str, Any] | None:
    """LangChain's `tool_choice` as this model takes it: None or "auto" (the model chooses), "none", "any" (some
    tool; also "required" and True), or a tool's name as OpenAI's {"type": "function", "function": {"name"}}."""
    names = [tool["function"]["name"] for tool in tools]
    if choice in (None, "auto", "none"):
        return choice
    if choice is True or choice in _FORCED:
        return "any"
    if isinstance(choice, dict):
        choice = (choice.get("function") or {}).get("name") or choice.get("name")
    if isinstance(choice, str) and choice in names:
        return _named(choice)
    raise ValueError(f"tool_choice {choice!r}: give 'auto', 'none', 'any' or one of the tools' names {names}")


def _named(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


def any_tool_format(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A `response_format` whose grammar holds the reply to one call of any of `tools`, as {"name", "arguments"}."""
    calls = [
        {
            "type": "object",
            "properties": {
                "name": {"const": tool["function"]["name"]},
                "arguments": tool["function"].get("parameters") or {"type": "object", "properties": {}},
            },
            "required": ["name", "arguments"],
        }
        for tool in tools
    ]
    return {"type": "json_object", "schema": {"anyOf": calls}}


def llama_messages(messages: list[BaseMessage], inert: Any) -> list[dict[str, Any]]:
    """Messages as the chat template reads them: role and content (made `inert`); an assistant's tool calls
    with their arguments as objects (the template writes them with `tojson`); a tool's reply as role "tool"."""
    out: list[dict[str, Any]] = []
    for message in messages:
        entry: dict[str, Any] = {"role": _ROLES.get(message.type, "user"), "content": inert(_text(message))}
        if isinstance(message, AIMessage) and message.tool_calls:
            entry["tool_calls"] = [
                {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["args"]}}
                for call in message.tool_calls
            ]
        if isinstance(message, ToolMessage):
            entry["tool_call_id"] = message.tool_call_id
        out.append(entry)
    return out


def _text(message: BaseMessage) -> str:
    """A message's text: its string, or its text blocks' (a list content, as the standard tests send)."""
    return message.content if isinstance(message.content, str) else message.text


def calls_in(text: str, names: Sequence[str]) -> tuple[str, list[ToolCall], list[InvalidToolCall]]:
    """The text outside `<tool_call>` markup, and the calls inside it; or a reply that is one such call alone.

    The markup is the model's tool protocol (its template asks for "a json object with function name and
    arguments within <tool_call></tool_call> XML tags"), not prose: each call is JSON with "name" and "arguments".
    Qwen2.5-Coder-1.5B writes the object without the tags, in a ```json fence (its first token, seen on
    crag_tool): a whole reply that is that object, naming one of the tools (`names`), is the call too. A call that
    does not parse (a reply cut by its token budget) is an invalid tool call, as LangChain's providers return."""
    calls: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    bodies = _CALL.findall(text)
    bare = None if bodies else _BARE.fullmatch(text)
    if bare:
        parsed = _object(bare.group(1))
        if isinstance(parsed, dict) and parsed.get("name") in names and "arguments" in parsed:
            _add(calls, invalid, parsed["name"], parsed["arguments"], made_up_id())
            return "", calls, invalid
    for body in bodies:
        try:
            parsed = json.loads(body)
            name, args = parsed["name"], parsed.get("arguments", {})
        except (ValueError, KeyError, TypeError) as exc:
            error = f"{type(exc).__name__}: {exc}"
            invalid.append(invalid_tool_call(name=None, args=body, id=made_up_id(), error=error))
            continue
        _add(calls, invalid, name, args, made_up_id())
    rest = _CALL.sub("", text).strip() if bodies else text
    return rest, calls, invalid


def _object(text: str) -> Any:
    """The JSON in `text`, also as the template's own example writes it, in doubled braces ({{"name": ...}}, a
    quirk of Qwen2.5's template the model copies, with as many closing braces as it likes); None if not JSON."""
    body = text[1:] if text.startswith("{{") else text
    try:
        parsed, end = _DECODER.raw_decode(body)
    except ValueError:
        return None
    rest = body[end:].strip()
    return parsed if rest == "" or (body is not text and set(rest) == {"}"}) else None


def repeats(calls: list[ToolCall], messages: Sequence[BaseMessage]) -> bool:
    """Whether every one of `calls` was made before in `messages` (the same tool and arguments) and answered."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    made = [
        (c["name"], c["args"])
        for m in messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c["id"] in answered
    ]
    return bool(calls) and all((c["name"], c["args"]) in made for c in calls)


def _add(calls: list[ToolCall], invalid: list[InvalidToolCall], name: Any, args: Any, call_id: str) -> None:
    """One call, its arguments an object (some models write them as a JSON string, as OpenAI's API does)."""
    raw = args
    try:
        if isinstance(args, str):
            args = json.loads(args)
        if not isinstance(name, str) or not isinstance(args, dict):
            raise TypeError("a call needs a name (a string) and arguments (an object)")
    except (ValueError, TypeError) as exc:
        text = raw if isinstance(raw, str) else json.dumps(raw)
        invalid.append(
            invalid_tool_call(
                name=name if isinstance(name, str) else None,
                args=text,
                id=call_id,
                error=f"{type(exc).__name__}: {exc}",
            )
        )
        return
    calls.append(tool_call(name=name, args=args, id=call_id))


def calls_from_reply(
    message: dict[str, Any], kwargs: dict[str, Any]
) -> tuple[str, list[ToolCall], list[InvalidToolCall]]:
    """A chat completion's message: llama-cpp-python's own tool calls (a named `tool_choice`), one call held to
    `any_tool_format`'s grammar (its whole text), or calls in the text (`calls_in`); none without tools."""
    text = message.get("content") or ""
    if not tool_params(kwargs):
        return text, [], []
    if message.get("tool_calls"):
        calls: list[ToolCall] = []
        invalid: list[InvalidToolCall] = []
        for call in message["tool_calls"]:
            function = call["function"]
            _add(calls, invalid, function["name"], function["arguments"], call.get("id") or made_up_id())
        return text, calls, invalid
    names = [tool["function"]["name"] for tool in kwargs["tools"]]
    return calls_in(f"<tool_call>{text}</tool_call>" if kwargs.get("tool_choice") == "any" else text, names)


def made_up_id() -> str:
    """An id for a call the model gave none (its markup has no ids): the ToolMessage answers by it."""
    return f"call_{uuid.uuid4().hex[:24]}"


__all__ = ["calls_from_reply", "calls_in", "llama_messages", "openai_tools", "repeats", "tool_choice_of", "tool_params"]
