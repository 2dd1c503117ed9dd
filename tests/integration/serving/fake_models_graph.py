"""The CRAG graph for a `langgraph dev` started by a test: every run's models, retriever and web are the
fakes of tests/fakes.py (`fake_context`), whatever its context says, so a chat client drives the real Agent
Server in milliseconds. langgraph.json names this module's `graph`; nothing else imports it."""

from __future__ import annotations

import dataclasses

from crag import resources
from crag.graphs.crag import graph
from tests.fakes import fake_context

_context_of = resources.context_of
FAKES = ("evaluator", "chat_model", "retriever", "web_backend", "embeddings")


def context_of(runtime) -> object:
    fakes = fake_context()
    return dataclasses.replace(_context_of(runtime), **{name: getattr(fakes, name) for name in FAKES})


resources.context_of = context_of  # the nodes read their run's context through it

__all__ = ["graph"]
