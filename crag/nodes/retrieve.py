"""`retrieve`: validate the question, fetch the top-k documents, and start the turn afresh."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from crag import resources
from crag.context import Context
from crag.state import State

MAX_QUESTION_CHARS = 2000


class InvalidQuestion(ValueError):
    """The question cannot be answered as given; the message says why."""


def validate_question(question: Any) -> str:
    if not isinstance(question, str):
        raise InvalidQuestion(f"the question must be text, got {type(question).__name__}")
    question = " ".join(question.split())
    if not question:
        raise InvalidQuestion("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidQuestion(f"the question has {len(question):,} characters; the limit is {MAX_QUESTION_CHARS:,}")
    return question


def retrieve(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    question = validate_question(state.get("question"))
    documents = resources.retrieve(ctx, question)
    runtime.stream_writer({"node": "retrieve", "documents": [d.metadata.get("title", "") for d in documents]})
    # every per-turn key is reset here, so a thread's earlier turns leave nothing behind
    return {
        "question": question,
        "documents": documents,
        "scores": [],
        "labels": [],
        "rewritten_query": "",
        "web_results": [],
        "web_error": None,
        "internal_knowledge": [],
        "external_knowledge": [],
        "knowledge": "",
        "answer": "",
        "sources": [],
    }
