"""FLARE (Jiang et al. 2023, "Active Retrieval Augmented Generation") from CRAG's nodes (wiring only): the answer
written a sentence at a time. contextualize → query (the question) → retrieve → correct → draft_sentence; a draft
with a token below θ → query (masked, or questions) → retrieve → correct → rewrite_sentence; a sure one →
accept_sentence; after each sentence the next is drafted until the answer ends → cite_answer → finish. In
'previous' mode (the paper's baseline) every sentence is searched for with the one before it, and kept as drafted."""

from __future__ import annotations

from langgraph.graph import END, StateGraph

from crag.graphs.answer import system_graph
from crag.nodes import finish
from crag.nodes.flare import (
    accept_sentence,
    after_correct,
    after_draft,
    after_sentence,
    cite_answer,
    draft_sentence,
    rewrite_sentence,
)
from crag.nodes.flare_search import correct, query, retrieve_queries

# the edges' labels in the drawing (Studio): what sends a run along each
AFTER_DRAFT = {"answer ended": "cite_answer", "unsure: search": "query", "sure": "accept_sentence"}
AFTER_SENTENCE = {"next sentence": "draft_sentence", "search before the next": "query", "answer ended": "cite_answer"}
AFTER_CORRECT = {"write it again": "rewrite_sentence", "draft the next sentence": "draft_sentence"}


def build_flare() -> StateGraph:
    builder = system_graph()
    for name, node in (
        ("query", query),
        ("retrieve", retrieve_queries),
        ("correct", correct),
        ("draft_sentence", draft_sentence),
        ("accept_sentence", accept_sentence),
        ("rewrite_sentence", rewrite_sentence),
        ("cite_answer", cite_answer),
        ("finish", finish),
    ):
        builder.add_node(name, node)
    builder.add_edge("contextualize", "query")
    builder.add_edge("query", "retrieve")
    builder.add_edge("retrieve", "correct")
    builder.add_conditional_edges("correct", after_correct, AFTER_CORRECT)
    builder.add_conditional_edges("draft_sentence", after_draft, AFTER_DRAFT)
    for node in ("accept_sentence", "rewrite_sentence"):
        builder.add_conditional_edges(node, after_sentence, AFTER_SENTENCE)
    builder.add_edge("cite_answer", "finish")
    builder.add_edge("finish", END)
    return builder


flare = build_flare().compile(name="flare")  # for langgraph.json
