"""Fakes for the graph tests: an evaluator, a retriever, a web backend and chat models."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from fakes import FakeEvaluator, FakeWeb, fake_chat
from langchain_core.runnables import RunnableLambda

from crag.backends.web import WebResult, WebSearchError
from crag.context import Context


DOCS = [
    Document(page_content="Anna Berg was a Swedish painter. She painted the sea. Her works hang in Stockholm.",
             metadata={"title": "Anna Berg", "source": "kb/anna.txt"}),
    Document(page_content="Carl Dahl is a footballer from Oslo. He plays as a striker for a club.",
             metadata={"title": "Carl Dahl", "source": "kb/carl.txt"}),
]
WEB = [WebResult(title="Anna Berg (painter)", url="local://Anna Berg (painter)",
                 content="Anna Berg (1890–1950) was a Swedish painter of seascapes and harbours.")]


@pytest.fixture()
def make_context():
    def make(rules, *replies, web=None, docs=DOCS, **kw):
        return Context(
            evaluator=FakeEvaluator(rules),
            chat_model=fake_chat(*replies),
            retriever=RunnableLambda(lambda q: list(docs)),
            web_backend=web if web is not None else FakeWeb(WEB),
            **kw,
        )

    return make


@pytest.fixture()
def failing_web():
    return FakeWeb(error=WebSearchError("search timed out after 10 s"))
