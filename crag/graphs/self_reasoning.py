"""Self-Reasoning over RAG's documents (wiring only): contextualize → retrieve → use_documents → the reader's
steps, one conversation: relevance_aware → evidence_aware → trajectory_analysis → finish; nothing relevant, or
no evidence its documents say word for word → decline → finish. Each ablation goes without one step."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from langgraph.graph import END

from crag.graphs.answer import Builder, system_graph
from crag.graphs.rag import add_document_steps
from crag.nodes import finish
from crag.nodes.self_reasoning import (
    after_evidence,
    after_relevance,
    decline,
    direct_answer,
    evidence_aware,
    relevance_aware,
    trajectory_analysis,
)

STEPS = ("relevance_aware", "evidence_aware", "trajectory_analysis")
NODES: dict[str, Callable] = {
    "relevance_aware": relevance_aware,
    "evidence_aware": evidence_aware,
    "trajectory_analysis": trajectory_analysis,
    "direct_answer": direct_answer,  # the answer asked for without the trajectory analysis
}
# a step that may find nothing to go on: its route, the label that goes on, the label that declines
BRANCHES = {
    "relevance_aware": (after_relevance, "relevant", "nothing relevant"),
    "evidence_aware": (after_evidence, "evidence kept", "none verbatim"),
}


def add_self_reasoning(builder: Builder, after: list[str], without: str | None = None) -> None:
    """Add the reader's steps to `builder`, the first running once every node of `after` is done, and the
    shared `finish`; `without` (a step of STEPS) leaves that step out."""
    steps = [step for step in STEPS if step != without]
    if without == "trajectory_analysis":
        steps.append("direct_answer")
    for step in steps:
        builder.add_node(step, NODES[step])
    builder.add_node("decline", decline)
    builder.add_node("finish", finish)
    for node in after:
        builder.add_edge(node, steps[0])
    for step, following in itertools.pairwise([*steps, "finish"]):
        if step in BRANCHES:
            choose, onward, declined = BRANCHES[step]
            builder.add_conditional_edges(step, choose, {onward: following, declined: "decline"})
        else:
            builder.add_edge(step, following)
    builder.add_edge("decline", "finish")
    builder.add_edge("finish", END)


def build_self_reasoning(without: str | None = None) -> Builder:
    if without is not None and without not in STEPS:
        raise ValueError(f"unknown step {without!r}; choose from {', '.join(STEPS)}")
    builder = system_graph()
    add_self_reasoning(builder, after=[add_document_steps(builder)], without=without)
    return builder


self_reasoning = build_self_reasoning().compile(name="self_reasoning")  # for langgraph.json
