"""Fixtures for the harness tests (the fakes live in eval_fakes.py)."""

from __future__ import annotations

import pytest
from eval_fakes import KB, QUESTIONS, RULES, WEB, EchoChat, FakeEvaluator, FakeWeb, kb_documents, write_jsonl
from langchain_core.runnables import RunnableLambda

from crag.context import Context


@pytest.fixture()
def make_context():
    def make(rules=None, chat=None, **changes):
        settings = dict(evaluator=FakeEvaluator(RULES if rules is None else rules), chat_model=chat or EchoChat(),
                        retriever=RunnableLambda(kb_documents), web_backend=FakeWeb(list(WEB)), k=5)
        return Context(**{**settings, **changes})

    return make


@pytest.fixture()
def inputs(tmp_path):
    """(questions, kb, web) JSONL files for the two-question fixture."""
    web = [{"title": r.title, "text": r.content, "url": r.url} for r in WEB]
    return (write_jsonl(tmp_path / "questions.jsonl", QUESTIONS), write_jsonl(tmp_path / "kb.jsonl", KB),
            write_jsonl(tmp_path / "web.jsonl", web))
