"""LangChain's own unit standard tests (`langchain-tests`) for the local chat model and the local embeddings:
construction from the standard parameters, tracing parameters, `with_structured_output` for every schema
kind and method; nothing is loaded (the model file is read at the first request)."""

from __future__ import annotations

from langchain_tests.unit_tests import ChatModelUnitTests, EmbeddingsUnitTests

from crag.models.chat import LocalChatModel
from crag.models.embeddings import LocalEmbeddings


class TestLocalChatModelUnit(ChatModelUnitTests):
    @property
    def chat_model_class(self) -> type[LocalChatModel]:
        return LocalChatModel

    @property
    def chat_model_params(self) -> dict:
        return {"model": "local:tiny"}


class TestLocalEmbeddingsUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[LocalEmbeddings]:
        return LocalEmbeddings
