"""Fakes for the graph tests: an evaluator, a retriever, a web backend and chat models."""

from __future__ import annotations

import pytest
from langchain_core.runnables import RunnableLambda

from crag.search.web import WebSearchError
from crag.settings import Context
from tests.fakes import DOCS, WEB, FakeEvaluator, FakeWeb, WordEmbeddings, fake_chat


@pytest.fixture()
def make_context():
    def make(rules, *replies, web=None, docs=DOCS, **kw):
        return Context(
            evaluator=FakeEvaluator(rules),
            chat_model=fake_chat(*replies),
            retriever=RunnableLambda(lambda q: list(docs)),
            web_backend=web if web is not None else FakeWeb(WEB),
            # the scripted replies begin with the web query's: the model writes it here (the default takes
            # the question's keywords, tests/unit/graph/test_graph.py checks it)
            # the chat model's second opinion on Incorrect is off unless a test asks for it (its own tests are in
            # test_recheck.py): the scripted replies are the rewrite's and the answer's
            **{"embeddings": WordEmbeddings(), "rewrite": "model", "recheck_threshold": None, **kw},
        )

    return make


@pytest.fixture()
def failing_web():
    return FakeWeb(error=WebSearchError("search timed out after 10 s"))
