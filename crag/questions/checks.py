"""What a question must be before CRAG works on it. Every way in (the graph, the CLI, the server's
request schema) applies the same rule and the same limit, so it lives below all of them."""

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
