"""What a question must be: one rule for every way in (the graph, the CLI, the server's schema)."""

from __future__ import annotations

from typing import Any

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
