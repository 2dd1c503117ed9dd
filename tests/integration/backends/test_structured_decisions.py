"""Every decision a hosted chat model makes, through LangChain's `with_structured_output`: each provider's real
LangChain class (ChatOpenAI, ChatAnthropic, ChatOllama) against a fake server on 127.0.0.1 that speaks its API and
answers in the structured form that class asks for (OpenAI and Ollama: a JSON schema; Anthropic: a forced tool
call). The server reads the schema it was sent and fills each field from `SCRIPT`, so what is sent is checked as
well as what is read; with `prose` it answers in words instead, as a model that ignores the schema does, and the
reply's first word is read."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from crag import resources
from crag.models.chat import chat_model
from crag.models.providers import cut_short
from crag.models.structured import SearchQueryReply, written
from crag.nodes.contextualize import model_condensed
from crag.nodes.flare_search import question_for
from crag.nodes.rewrite_and_search import rewrite_query
from tests.fake_providers import Script, fake_providers
from tests.fakes import fake_context
from tests.servers import point_providers_at, running

QUESTION = "What is Anna Berg's occupation?"
PASSAGE = "Anna Berg (1890-1950) was a Swedish painter of the sea."
PROVIDERS = ["openai:gpt-4o-mini", "anthropic:claude-haiku-4-5", "ollama:llama3.2"]


@pytest.fixture(scope="module")
def server():
    script, seen = Script(), []
    with running(fake_providers(script, seen)) as url:
        yield url, script, seen


@pytest.fixture()
def provider(server, monkeypatch):
    url, script, seen = server
    seen.clear()
    script.fields, script.prose, script.cut = {}, None, False
    point_providers_at(monkeypatch, url)
    return script, seen


def schema_sent(request: tuple[str, dict, dict]) -> dict:
    """The JSON schema the LangChain class sent (a request `seen`), in its provider's own place for it."""
    path, _, body = request
    if path == "/v1/chat/completions":
        assert body["response_format"]["type"] == "json_schema"
        return body["response_format"]["json_schema"]["schema"]
    if path == "/v1/messages":
        (tool,) = body["tools"]
        assert body["tool_choice"]["type"] in ("tool", "any")  # the call is forced, not offered
        return tool["input_schema"]
    assert path == "/api/chat"
    return body["format"]


@pytest.mark.parametrize("spec", PROVIDERS)
def test_the_grade_and_the_judgements_are_structured(provider, spec):
    script, seen = provider
    ctx = fake_context(chat_model=spec)
    script.fields = {"binary_score": "yes"}
    assert resources.relevance(ctx, QUESTION, [Document(PASSAGE)]) == [1.0]
    _, _, body = seen[-1]
    assert schema_sent(seen[-1])["properties"]["binary_score"]["type"] == "string"  # the tutorial's GradeDocuments
    options = body.get("options", body)
    assert max(options.get(key, 0) for key in ("max_tokens", "max_completion_tokens", "num_predict")) >= 24
    script.fields = {"binary_score": "no"}
    assert resources.relevance(ctx, QUESTION, [Document(PASSAGE)]) == [-1.0]

    script.fields = {"label": "partially"}
    said = resources.critique(ctx, ["issup"], QUESTION, PASSAGE, "A painter.")
    assert said == {"issup": [0.0, 1.0, 0.0]}
    assert schema_sent(seen[-1])["properties"]["label"]["enum"] == ["fully", "partially", "no"]

    script.fields = {"label": "no"}
    assert resources.answers(ctx, QUESTION, PASSAGE) == -1.0
    assert schema_sent(seen[-1])["properties"]["label"]["enum"] == ["yes", "no"]
    script.fields = {"label": "2"}
    assert resources.choose(ctx, QUESTION, ["Uppsala is a city.", PASSAGE, "The sea."]) == [0.0, 1.0, 0.0]
    assert schema_sent(seen[-1])["properties"]["label"]["enum"] == ["1", "2", "3"]
    assert len(seen) == 5  # one request each: no second request to read a first word


@pytest.mark.parametrize("spec", PROVIDERS)
def test_a_reply_that_ignores_the_schema_is_read_by_its_first_word(provider, spec):
    script, seen = provider
    ctx = fake_context(chat_model=spec)
    script.prose = "Yes, it is relevant."
    assert resources.relevance(ctx, QUESTION, [Document(PASSAGE)]) == [1.0]
    script.prose = "**Irrelevant**: it is about the sea."
    assert resources.critique(ctx, ["isrel"], QUESTION, PASSAGE) == {"isrel": [0.0, 1.0]}
    script.prose = "Perhaps."  # no label at all: equal shares, which overrule nothing
    assert resources.choose(ctx, QUESTION, ["a", "b"]) == [0.5, 0.5]
    assert resources.answers(ctx, QUESTION, PASSAGE) == 0.0
    # OpenAI's client parses the reply itself and keeps nothing when it fails: the model is asked again, plainly
    assert len(seen) == (8 if spec.startswith("openai") else 4)
    if spec.startswith("openai"):
        assert "response_format" in seen[-2][2] and "response_format" not in seen[-1][2]
    else:
        assert schema_sent(seen[-1])["properties"]["label"]["enum"] == ["yes", "no"]  # the structured one


@pytest.mark.parametrize("spec", PROVIDERS)
def test_the_queries_and_the_condensed_question_are_structured(provider, spec):
    script, seen = provider
    ctx = fake_context(rewrite_model=spec)
    script.fields = {"query": "Anna Berg, occupation"}
    assert rewrite_query(ctx, QUESTION, mode="model") == "Anna Berg, occupation"
    assert "query" in schema_sent(seen[-1])["required"]
    # a query that answers instead of asking is still refused by the same check as the local model's line
    script.fields = {"query": "Anna Berg, painter, 1890"}
    assert rewrite_query(ctx, QUESTION, mode="model") == "Anna Berg, occupation"  # the question's own keywords

    script.fields = {"question": "Where was Anna Berg born?"}
    history = [{"question": "Who was Anna Berg?", "answer": "A Swedish painter."}]
    assert model_condensed(ctx, "Where was she born?", history) == "Where was Anna Berg born?"
    assert "question" in schema_sent(seen[-1])["properties"]


@pytest.mark.parametrize("spec", ["openai:gpt-4o-mini", "ollama:llama3.2"])
def test_a_json_reply_cut_short_is_no_query_and_no_grade(provider, spec):
    script, seen = provider
    script.prose, script.cut = '{"query": "Anna Berg, occ', True  # a reply cut by its token limit
    model = chat_model(spec, max_tokens=24)
    text, reply = written(model, QUESTION, SearchQueryReply)
    assert text == "" and cut_short(reply)  # not the "Anna Berg, occ" LangChain's lenient JSON parser makes of it
    assert rewrite_query(fake_context(rewrite_model=spec), QUESTION, mode="model") == "Anna Berg, occupation"
    script.prose = '{"label": "ye'
    assert resources.answers(fake_context(chat_model=spec), QUESTION, PASSAGE) == 0.0  # neither yes nor no
    assert len(seen) == 3  # never asked again: it would be cut again


@pytest.mark.parametrize("spec", PROVIDERS)
def test_self_reasonings_verdict_and_flares_question_are_structured(provider, spec):
    script, seen = provider
    ctx = fake_context(chat_model=spec, rewrite_model=spec)
    messages = [{"role": "user", "content": f"Documents:\n[1] {PASSAGE}\n\nQuestion: {QUESTION}\n\nRelevant?"}]
    script.fields = {"relevant": "yes", "reason": "It names her occupation."}
    score, text = resources.relevance_verdict(ctx, messages)
    assert score == 1.0 and "occupation" in text
    assert schema_sent(seen[-1])["properties"]["relevant"]["enum"] == ["yes", "no"]
    script.prose = "No: it is about the sea."  # the schema ignored: the first word
    assert resources.relevance_verdict(ctx, messages)[0] == -1.0
    script.prose = None
    script.fields = {"question": "What did Anna Berg paint?"}
    assert question_for(ctx, PASSAGE, "the sea") == "What did Anna Berg paint?"
    assert "question" in schema_sent(seen[-1])["properties"]
