"""What every system's graph shares (wiring only): its start (crag's state and settings, the turn opened by
`contextualize`) and the answer path: `generate`, then, for an answer that does not stand, reading further, a
quote or asking again; `finish` records the turn."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from langgraph.graph import END, START, StateGraph

from crag.nodes import ask_again, contextualize, finish, generate, quote, read_further
from crag.nodes.answer_path import after_generate, after_quote, after_reading_further
from crag.settings import Context
from crag.state import InputState, OutputState, State

# a system's builder: its context is crag's settings; its state and schemas vary (FLARE's search has its own)
Builder = StateGraph[Any, Context, Any, Any]
# a conditional edge's path map, {what its route returns: the node that runs}, as LangGraph types it
PathMap = dict[Hashable, str]


def system_graph() -> Builder:
    """A system's builder: crag's state, settings and input and output schemas, and `contextualize` first (a
    follow-up made self-contained); the system adds its steps after it."""
    builder = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node("contextualize", contextualize)
    builder.add_edge(START, "contextualize")
    return builder


def add_answer_path(builder: Builder, after: list[str], *, answered_by: str = "generate") -> None:
    """Add the answer steps to `builder`, `generate` running once every node of `after` is done.

    `answered_by` names a node of the graph's own that wrote the answer instead of `generate` (Self-RAG's
    `select`); what follows an answer that does not stand is the same."""
    if answered_by == "generate":
        builder.add_node("generate", generate)
    builder.add_node("read_further", read_further)
    builder.add_node("quote", quote)
    builder.add_node("ask_again", ask_again)
    builder.add_node("finish", finish)
    for node in after:
        builder.add_edge(node, answered_by)
    builder.add_conditional_edges(
        answered_by, after_generate, {"final": "finish", "declined": "read_further", "declined or withheld": "quote"}
    )
    builder.add_conditional_edges(
        "read_further", after_reading_further, {"final": "finish", "declined or withheld": "quote"}
    )
    builder.add_conditional_edges("quote", after_quote, {"final": "finish", "nothing to quote": "ask_again"})
    builder.add_edge("ask_again", "finish")
    builder.add_edge("finish", END)
