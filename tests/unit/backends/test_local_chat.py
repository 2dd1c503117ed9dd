"""The local chat model's streaming, on a stand-in for llama.cpp (what it yields is what matters)."""

from __future__ import annotations

from contextlib import contextmanager

from crag.backends import llm
from crag.backends.llm import LocalChatModel


class FakeLlama:
    """llama.cpp's streamed chat completion: a role delta, then content deltas, then the finish."""

    def __init__(self, *pieces: str):
        self.pieces = pieces

    def create_chat_completion(self, **params):
        if not params["stream"]:
            return {"choices": [{"message": {"role": "assistant", "content": "".join(self.pieces)}}]}
        return self._deltas()

    def _deltas(self):
        yield {"choices": [{"delta": {"role": "assistant"}}]}
        for piece in self.pieces:
            yield {"choices": [{"delta": {"content": piece}}]}
        yield {"choices": [{"delta": {}, "finish_reason": "stop"}]}


class FakePool:
    def __init__(self, llama):
        self.llama = llama

    @contextmanager
    def use(self):
        yield self.llama


def test_tokens_stream_as_written(monkeypatch):
    monkeypatch.setattr(llm, "_pool", lambda model, n_ctx: FakePool(FakeLlama("A ", "painter.")))
    model = LocalChatModel(model="local:tiny")
    assert [c.content for c in model.stream("Who?") if c.content] == ["A ", "painter."]


def test_a_stop_before_the_first_token_is_an_empty_answer_not_an_error(monkeypatch):
    """The model may hit a stop sequence at once (seen with a follow-up on a user's PDFs): LangChain
    raises "No generations found in stream" for a stream that yields nothing."""
    monkeypatch.setattr(llm, "_pool", lambda model, n_ctx: FakePool(FakeLlama()))
    model = LocalChatModel(model="local:tiny")
    assert "".join(c.content for c in model.stream("Who?")) == ""
    # invoke through the stream, as when LangGraph streams the graph's messages (`crag ask --stream`, chat)
    assert model.invoke("Who?", stream=True).content == ""
