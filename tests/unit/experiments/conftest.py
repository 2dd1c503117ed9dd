"""Fixtures for the harness tests: Contexts and input files built from the fakes in tests/fakes.py."""

from __future__ import annotations

import pytest
from langchain_core.runnables import RunnableLambda

from crag.context import Context
from crag.core.passages import source_of, title_of
from tests.fakes import (
    HARNESS_KB,
    HARNESS_QUESTIONS,
    HARNESS_RULES,
    HARNESS_WEB,
    EchoChat,
    FakeEvaluator,
    FakeWeb,
    WordEmbeddings,
    kb_documents,
    write_jsonl,
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
        }
        return Context(**{**settings, **changes})

    return make


@pytest.fixture()
def inputs(tmp_path):
    """(questions, kb, web) JSONL files for the two-question fixture."""
    web = [{"title": title_of(r), "text": r.page_content, "url": source_of(r)} for r in HARNESS_WEB]
    return (
        write_jsonl(tmp_path / "questions.jsonl", HARNESS_QUESTIONS),
        write_jsonl(tmp_path / "kb.jsonl", HARNESS_KB),
        write_jsonl(tmp_path / "web.jsonl", web),
    )
