"""Errors shared by layers that do not import each other."""

from __future__ import annotations


class Unavailable(RuntimeError):
    """A service a run depends on (a Chroma server, the threads' Postgres) is down or too slow right now.

    The same request may succeed later, so a server answers it with 503 and `Retry-After` rather than
    a 500; the message names the service and what went wrong.
    """
