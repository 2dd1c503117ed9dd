"""CRAG's knowledge read by Self-Reasoning (wiring only): CRAG's steps decide the action and keep the strips
(contextualize → retrieve → grade [→ second opinion] [→ requery] → refine | rewrite_and_search | both), then
the reader's three steps read the kept strips (`crag.graphs.self_reasoning`) instead of `generate`."""

from __future__ import annotations

from crag.graphs.answer import Builder, system_graph
from crag.graphs.crag import add_corrective_steps
from crag.graphs.self_reasoning import add_self_reasoning


def build_crag_self_reasoning() -> Builder:
    builder = system_graph()
    builder.add_edge("contextualize", "retrieve")
    add_self_reasoning(builder, after=add_corrective_steps(builder))
    return builder


crag_self_reasoning = build_crag_self_reasoning().compile(name="crag_self_reasoning")  # for langgraph.json
