"""LangChain's own integration standard tests (`langchain-tests`) for the local chat model and the local
embeddings, on the real models: replies called, streamed, batched and async, their usage_metadata, stop
sequences, conversations, structured output, JSON mode and tool calling (`bind_tools`, found by the suite
itself). What the local model cannot do is turned off by the suite's own properties: images, audio and PDFs
(it reads text), a model named per call.

The chat suite runs on the default model (Qwen2.5-Coder-1.5B): structured output needs it, as the smaller
ones, greedy, repeat a sentence inside the JSON's first string until `max_tokens` cuts it (seen for both
`local:small` and `local:tiny` on the suite's joke). It is slow: `make test-slow`."""

from __future__ import annotations

import pytest
from langchain_tests.integration_tests import ChatModelIntegrationTests, EmbeddingsIntegrationTests

from crag.models import gguf
from crag.models.chat import LocalChatModel, reset_prompt_caches
from crag.models.embeddings import LocalEmbeddings

MODEL = "local"


@pytest.mark.slow
@pytest.mark.skipif(not gguf.installed(gguf.DEFAULT), reason="the default local model is not installed")
class TestLocalChatModelIntegration(ChatModelIntegrationTests):
    @property
    def chat_model_class(self) -> type[LocalChatModel]:
        return LocalChatModel

    @property
    def chat_model_params(self) -> dict:
        return {"model": MODEL}

    @property
    def returns_usage_metadata(self) -> bool:
        return True

    @property
    def supports_json_mode(self) -> bool:  # JSON mode is the schema's grammar, as every method is
        return True

    @property
    def supports_model_override(self) -> bool:  # a call's `model=` is not read: the settings choose the model
        return False

    def test_a_streamed_reply_counts_the_tokens_a_called_one_does(self, model: LocalChatModel) -> None:
        """llama.cpp's stream carries no usage: its counts, made from the template and the deltas, are the
        called reply's (the same greedy reply) for an answer that ends, one its budget cuts and a stop. Each
        reads its prompt from scratch: one read after a cached start may differ in its last digits, and so may
        the greedy reply."""
        for ask, stop in (("Name a Swedish painter.", None), ("Write me 2 haikus.", None), ("Count to 9.", ["4"])):
            reset_prompt_caches()
            called = model.invoke(ask, stop=stop)
            reset_prompt_caches()
            streamed = None
            for chunk in model.stream(ask, stop=stop):
                streamed = chunk if streamed is None else streamed + chunk
            assert streamed.content == called.content
            assert streamed.usage_metadata == called.usage_metadata, ask


class TestLocalEmbeddingsIntegration(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self) -> type[LocalEmbeddings]:
        return LocalEmbeddings
