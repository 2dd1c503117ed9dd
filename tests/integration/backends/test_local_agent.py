"""An offline agent: LangChain's `create_agent` on the default local model (Qwen2.5-Coder-1.5B on llama.cpp)
with `crag_tool` over the fakes' knowledge base. The model decides to call the tool, the ToolMessage comes back
with the graph's record as its artifact, and the model answers from it. Slow (a 1.1 GB model, three or four
replies): `make test-slow`."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent

from crag.components import crag_tool
from crag.models import gguf
from crag.models.chat import LocalChatModel
from tests.fakes import ANSWER, fake_context

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not gguf.installed(gguf.DEFAULT), reason="the default local model is not installed"),
]


@pytest.mark.parametrize(
    ("name", "description"),
    [("crag", None), ("painters", "Answers questions about Swedish painters from the knowledge base.")],
    ids=["the-default-tool", "a-named-tool"],
)
def test_the_local_model_calls_crag_tool_and_answers_from_it(name, description):
    options = {"name": name, **({"description": description} if description else {})}
    tool = crag_tool(fake_context(), **options)
    agent = create_agent(LocalChatModel(model="local", max_tokens=128), tools=[tool])
    out = agent.invoke(
        {"messages": [{"role": "user", "content": "What was Anna Berg's occupation?"}]}, {"recursion_limit": 8}
    )
    kinds = [m.type for m in out["messages"]]
    assert kinds == ["human", "ai", "tool", "ai"], [
        (m.type, m.content, getattr(m, "tool_calls", None)) for m in out["messages"]
    ]
    called, told, answer = out["messages"][1:]
    assert [c["name"] for c in called.tool_calls] == [name]
    assert "Anna Berg" in called.tool_calls[0]["args"]["question"]
    assert told.tool_call_id == called.tool_calls[0]["id"] and told.status == "success"
    assert told.artifact["answer"] == ANSWER and told.artifact["sources"]
    assert "painter" in answer.content.lower() and not answer.tool_calls
