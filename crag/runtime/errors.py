"""Errors shared by layers that do not import each other."""

from __future__ import annotations


class Unavailable(RuntimeError):
    """A service a run depends on (a Chroma server, the threads' Postgres) is down or too slow: a server
    answers 503 with `Retry-After`, as the same request may succeed later."""
