"""Chat models by "<provider>:<model>" through LangChain's init_chat_model, each provider's real
LangChain class talking to a fake server on 127.0.0.1 that speaks its API (OpenAI, Anthropic,
Ollama), and the whole graph answering through one of them."""

from __future__ import annotations

import pytest

from crag.graphs.crag import graph
from crag.models.chat import chat_model
from tests.fake_providers import REPLY, Script, fake_providers
from tests.fakes import fake_context
from tests.servers import point_providers_at, running


@pytest.fixture(scope="module")
def server():
    seen: list = []
    with running(fake_providers(Script(), seen)) as url:
        yield url, seen


@pytest.fixture()
def providers_at(server, monkeypatch):
    url, seen = server
    seen.clear()
    point_providers_at(monkeypatch, url)
    return seen


@pytest.mark.parametrize(
    ("spec", "path", "length_key"),
    [
        ("openai:gpt-4o-mini", "/v1/chat/completions", "max_completion_tokens"),  # OpenAI's name for it now
        ("anthropic:claude-haiku-4-5", "/v1/messages", "max_tokens"),
        ("ollama:llama3.2", "/api/chat", "num_predict"),
    ],
)
def test_each_provider_answers_through_its_own_api(providers_at, spec, path, length_key):
    model = chat_model(spec, max_tokens=24)
    assert model.invoke("Who was Anna Berg?").content == REPLY
    ((seen_path, _, body),) = providers_at
    assert seen_path == path and body["model"] == spec.split(":", 1)[1]
    options = body.get("options", body)  # Ollama puts the sampling settings under "options"
    assert options[length_key] == 24 and options["temperature"] == 0


def test_the_graph_answers_through_a_provider(providers_at):
    context = fake_context()
    context.chat_model = "openai:gpt-4o-mini"
    result = graph.invoke({"question": "What is Anna Berg's occupation?"}, context=context)
    assert result["answer"] == REPLY and result["action"] == "correct"
    prompt = providers_at[-1][2]["messages"][-1]["content"]
    assert "Anna Berg was a Swedish painter" in prompt  # the refined knowledge reached the provider


def test_a_bad_name_or_a_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="'anthropic:claude-x' needs ANTHROPIC_API_KEY"):
        chat_model("anthropic:claude-x")
    with pytest.raises(ValueError, match="cannot create chat model 'nonsense:x'"):
        chat_model("nonsense:x")
    with pytest.raises(ValueError, match="unknown chat model 'gpt-4o'"):
        chat_model("gpt-4o")
    with pytest.raises(ValueError, match="langchain-mistralai"):  # a provider without an extra of ours
        chat_model("mistralai:mistral-small")
