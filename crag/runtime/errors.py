"""Errors shared by layers that do not import each other."""

from __future__ import annotations


class Unavailable(RuntimeError):
    """A service a run depends on (a Chroma server, the threads' Postgres) is down or too slow: a server
    answers 503 with `Retry-After`, as the same request may succeed later."""


class PromptTooLong(ValueError):
    """A request's settings gathered more text than the chat model's context window holds (top_k_strips,
    further_strips, knowledge_tokens, k at their largest): a server answers 422, as the same request fails
    again and smaller settings succeed."""
