"""Fixtures for the harness tests: Contexts built from the fakes in tests/fakes.py (the input files: tests/conftest.py)."""

from __future__ import annotations

import pytest
from langchain_core.runnables import RunnableLambda

from crag.settings import Context
from tests.fakes import (
    HARNESS_RULES,
    HARNESS_WEB,
    EchoChat,
    FakeEvaluator,
    FakeWeb,
    WordEmbeddings,
    kb_documents,
)


@pytest.fixture()
def make_context():
    def make(rules=None, chat=None, **changes):
        settings = {
            "evaluator": FakeEvaluator(HARNESS_RULES if rules is None else rules),
            "chat_model": chat or EchoChat(),
            "retriever": RunnableLambda(kb_documents),
            "web_backend": FakeWeb(list(HARNESS_WEB)),
            "embeddings": WordEmbeddings(),
            "k": 5,
            "recheck_threshold": None,  # EchoChat answers; the second opinion has its own tests
        }
        return Context(**{**settings, **changes})

    return make
