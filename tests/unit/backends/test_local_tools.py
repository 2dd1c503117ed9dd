"""The local chat model's tool calling on a stand-in for llama.cpp: the tools and the conversation as its chat
template reads them, the model's tool-call markup read back as `AIMessage.tool_calls`, each `tool_choice`, and
an agent's loop over `crag_tool`."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from crag.components import crag_tool
from crag.models import chat as llm
from crag.models.chat import LocalChatModel
from crag.models.tool_calls import calls_in, openai_tools, tool_choice_of
from tests.fakes import ANSWER, fake_context
from tests.unit.backends.test_local_chat import FakePool


@tool
def painters(question: str) -> str:
    """Answers questions about Swedish painters."""
    return "Anna Berg was a painter."


@tool
def weather(city: str, days: int = 1) -> str:
    """The weather in a city."""
    return "Sunny."


class ScriptedLlama:
    """llama.cpp's chat completion giving `replies` in turn (a text, or a message dict as llama-cpp-python
    returns for a named tool choice), recording each call's parameters."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.calls = []

    def create_chat_completion(self, **params):
        self.calls.append(params)
        reply = self.replies.pop(0)
        message = reply if isinstance(reply, dict) else {"role": "assistant", "content": reply}
        usage = {"prompt_tokens": 10, "completion_tokens": 5}
        return {"choices": [{"message": message, "finish_reason": "stop"}], "usage": usage}


def scripted(monkeypatch, *replies) -> ScriptedLlama:
    llama = ScriptedLlama(*replies)
    monkeypatch.setattr(llm, "_pool", lambda model, n_ctx: FakePool(llama))
    return llama


CALL = '<tool_call>\n{"name": "painters", "arguments": {"question": "Who was Anna Berg?"}}\n</tool_call>'


def test_the_models_markup_is_a_tool_call_with_an_id_made_up(monkeypatch):
    llama = scripted(monkeypatch, CALL, f"Let me look.\n{CALL}\n{CALL}")
    model = LocalChatModel(model="local").bind_tools([painters])
    reply = model.invoke("Who was Anna Berg?")
    assert reply.content == "" and reply.invalid_tool_calls == []
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("painters", {"question": "Who was Anna Berg?"})]
    assert reply.tool_calls[0]["id"].startswith("call_")
    # the template is given the tools as OpenAI's schemas; no grammar: the model chooses
    assert llama.calls[0]["tools"][0]["function"]["name"] == "painters"
    assert "response_format" not in llama.calls[0] and "tool_choice" not in llama.calls[0]
    two = model.invoke("Who was Anna Berg?")
    assert two.content == "Let me look." and len({c["id"] for c in two.tool_calls}) == 2


def test_a_reply_that_is_the_call_alone_is_the_call_but_only_for_a_bound_tool():
    """Qwen2.5-Coder writes the call's JSON in a code fence, without the markup."""
    fenced = '```json\n{"name": "painters", "arguments": {"question": "Who?"}}\n```'
    text, calls, invalid = calls_in(fenced, ["painters"])
    assert (text, [(c["name"], c["args"]) for c in calls], invalid) == ("", [("painters", {"question": "Who?"})], [])
    # a tool that is not bound, or JSON that is an answer: the reply stays text
    for reply in (fenced.replace("painters", "greeting"), '{"answer": "A painter."}', "She was a painter."):
        assert calls_in(reply, ["painters"]) == (reply, [], [])


def test_a_call_that_does_not_parse_is_an_invalid_tool_call():
    cut = '<tool_call>\n{"name": "painters", "arguments": {"question": "Who w'  # its token budget ran out
    text, calls, invalid = calls_in(cut, ["painters"])
    assert (text, calls) == ("", []) and len(invalid) == 1
    assert invalid[0]["args"].startswith('{"name": "painters"') and "JSONDecodeError" in invalid[0]["error"]
    # arguments written as a JSON string, as OpenAI's API does, are read as the object
    _, calls, _ = calls_in('<tool_call>{"name": "weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}</tool_call>', [])
    assert calls[0]["args"] == {"city": "Oslo"}
    _, calls, invalid = calls_in('<tool_call>{"name": "weather", "arguments": [1]}</tool_call>', [])
    assert calls == [] and invalid[0]["name"] == "weather" and "arguments" in invalid[0]["error"]


def test_any_holds_the_reply_to_one_call_of_some_tool_by_a_grammar(monkeypatch):
    llama = scripted(monkeypatch, '{"name": "weather", "arguments": {"city": "Oslo"}}')
    reply = LocalChatModel(model="local").bind_tools([painters, weather], tool_choice="any").invoke("Oslo?")
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("weather", {"city": "Oslo"})]
    grammar = llama.calls[0]["response_format"]
    assert grammar["type"] == "json_object"
    names = [option["properties"]["name"]["const"] for option in grammar["schema"]["anyOf"]]
    assert names == ["painters", "weather"]
    assert grammar["schema"]["anyOf"][1]["properties"]["arguments"]["required"] == ["city"]


def test_a_named_choice_is_llama_cpp_pythons_own_call(monkeypatch):
    said = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call__0_weather_cmpl-1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    }
    llama = scripted(monkeypatch, said)
    reply = LocalChatModel(model="local").bind_tools([painters, weather], tool_choice="weather").invoke("Oslo?")
    assert reply.tool_calls == [
        {"name": "weather", "args": {"city": "Oslo"}, "id": "call__0_weather_cmpl-1", "type": "tool_call"}
    ]
    assert llama.calls[0]["tool_choice"] == {"type": "function", "function": {"name": "weather"}}


def test_none_gives_no_tools_and_an_unknown_choice_is_refused(monkeypatch):
    llama = scripted(monkeypatch, CALL)
    reply = LocalChatModel(model="local").bind_tools([painters], tool_choice="none").invoke("Who?")
    assert "tools" not in llama.calls[0] and reply.tool_calls == [] and reply.content == CALL
    for forced in ("any", "required", True):  # OpenAI's and Anthropic's words for a forced call
        assert tool_choice_of(forced, openai_tools([painters])) == "any"
    assert tool_choice_of({"type": "function", "function": {"name": "painters"}}, openai_tools([painters])) == {
        "type": "function",
        "function": {"name": "painters"},
    }
    with pytest.raises(ValueError, match=r"tool_choice 'paint'.*\['painters'\]"):
        LocalChatModel(model="local").bind_tools([painters], tool_choice="paint")


def test_the_conversation_reaches_the_template_with_its_calls_and_the_tools_replies(monkeypatch):
    llama = scripted(monkeypatch, "She was a painter.")
    call = {"name": "painters", "args": {"question": "Who?"}, "id": "call-1", "type": "tool_call"}
    conversation = [
        SystemMessage("Be brief."),
        HumanMessage("Who was Anna Berg?"),
        AIMessage("", tool_calls=[call]),
        ToolMessage("Anna Berg was a painter.", tool_call_id="call-1", artifact={"sources": []}),
    ]
    LocalChatModel(model="local").bind_tools([painters]).invoke(conversation)
    assert llama.calls[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Who was Anna Berg?"},
        {
            "role": "assistant",
            "content": "",
            # an object: the template writes it with `tojson`, a string would be quoted twice
            "tool_calls": [
                {
                    "id": "call-1",
                    "type": "function",
                    "function": {"name": "painters", "arguments": {"question": "Who?"}},
                }
            ],
        },
        {"role": "tool", "content": "Anna Berg was a painter.", "tool_call_id": "call-1"},
    ]


def test_with_tools_a_stream_is_the_whole_reply_in_one_chunk(monkeypatch):
    scripted(monkeypatch, CALL)
    chunks = list(LocalChatModel(model="local").bind_tools([painters]).stream("Who was Anna Berg?"))
    assert len(chunks) == 1
    assert chunks[0].tool_calls[0]["args"] == {"question": "Who was Anna Berg?"}
    assert chunks[0].usage_metadata == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}


def test_an_agent_calls_crag_tool_and_answers_from_its_reply(monkeypatch):
    llama = scripted(monkeypatch, CALL.replace("painters", "crag"), "She was a painter.")
    agent = create_agent(LocalChatModel(model="local"), tools=[crag_tool(fake_context())])
    out = agent.invoke({"messages": [{"role": "user", "content": "What did Anna Berg do?"}]})
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    called, told, answer = out["messages"][1:]
    assert told.tool_call_id == called.tool_calls[0]["id"] and told.content.startswith(ANSWER)
    assert told.artifact["answer"] == ANSWER and answer.content == "She was a painter."
    # the tool's reply reaches the model as the template's "tool" turn (its text; the artifact is not sent)
    assert llama.calls[1]["messages"][-1] == {
        "role": "tool",
        "content": told.content,
        "tool_call_id": told.tool_call_id,
    }


def test_the_templates_own_example_in_doubled_braces_is_a_call_too():
    """Qwen2.5's template shows the call as {{"name": ..., "arguments": ...}}; the model copies it."""
    for said in (
        '{{"name": "painters", "arguments": {"question": "Who?"}}}',
        '{{"name": "painters", "arguments": {"question": "Who?"}}}}',
    ):
        text, calls, _ = calls_in(said, ["painters"])
        assert (text, [(c["name"], c["args"]) for c in calls]) == ("", [("painters", {"question": "Who?"})])
    assert calls_in('{"name": "painters", "arguments": {}}} and more', ["painters"])[1] == []


def test_a_call_made_again_after_its_response_is_asked_again_without_tools(monkeypatch):
    """The same call with the same arguments, already answered: the agent would loop; the model answers instead."""
    llama = scripted(monkeypatch, CALL, "She was a painter.")
    call = {"name": "painters", "args": {"question": "Who was Anna Berg?"}, "id": "call-1", "type": "tool_call"}
    conversation = [
        HumanMessage("Who was Anna Berg?"),
        AIMessage("", tool_calls=[call]),
        ToolMessage("Anna Berg was a painter.", tool_call_id="call-1"),
    ]
    reply = LocalChatModel(model="local").bind_tools([painters]).invoke(conversation)
    assert (reply.content, reply.tool_calls) == ("She was a painter.", [])
    assert "tools" in llama.calls[0] and "tools" not in llama.calls[1]
    assert reply.usage_metadata == {"input_tokens": 20, "output_tokens": 10, "total_tokens": 30}  # both asks
    # a new call (other arguments) stands, and so does a forced one
    other = CALL.replace("Who was Anna Berg?", "Where did she live?")
    for choice, said in (
        (None, other),
        ("any", '{"name": "painters", "arguments": {"question": "Who was Anna Berg?"}}'),
    ):
        scripted(monkeypatch, said)
        assert LocalChatModel(model="local").bind_tools([painters], tool_choice=choice).invoke(conversation).tool_calls
