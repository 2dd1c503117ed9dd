"""FLARE (Jiang et al. 2023, "Active Retrieval Augmented Generation") from CRAG's nodes (wiring only): the answer
written a sentence at a time. contextualize → query (the question) → a `search` per query → gather →
draft_sentence; a draft with a token below θ → query (masked, or questions) → a `search` per query → gather →
rewrite_sentence; a sure one → accept_sentence; after each sentence the next is drafted until the answer ends →
cite_answer → finish. In 'previous' mode (the paper's baseline) every sentence is searched for with the one
before it, and kept as drafted.

Each `search` is a subgraph of CRAG's own steps over its query (retrieve → grade → refine | rewrite_and_search |
both → keep), run in parallel (`Send`, a branch per query); with `flare_correct` off, `search_whole` reads the
documents whole instead (retrieve → use_documents → keep), as the FLARE paper does."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from crag import resources
from crag.graphs.answer import Builder, PathMap, system_graph
from crag.graphs.crag import add_corrective_steps
from crag.graphs.rag import add_document_steps
from crag.nodes import finish
from crag.nodes.flare import (
    accept_sentence,
    after_draft,
    after_search,
    after_sentence,
    cite_answer,
    draft_sentence,
    rewrite_sentence,
)
from crag.nodes.flare_search import gather, keep, query
from crag.settings import Context
from crag.state import SearchInput, SearchOutput, State

# the edges' labels in the drawing (Studio): what sends a run along each
SEARCHES: PathMap = {
    "each query: CRAG's correction": "search",
    "each query, flare_correct off: the documents whole": "search_whole",
}
AFTER_DRAFT: PathMap = {"answer ended": "cite_answer", "unsure: search": "query", "sure": "accept_sentence"}
AFTER_SENTENCE: PathMap = {
    "next sentence": "draft_sentence",
    "search before the next": "query",
    "answer ended": "cite_answer",
}
AFTER_SEARCH: PathMap = {"write it again": "rewrite_sentence", "draft the next sentence": "draft_sentence"}


def build_search(*, correct: bool = True) -> CompiledStateGraph[Any, Context, Any, Any]:
    """One query's search, from its `question` to the `Search` that `keep` hands back: CRAG's steps without
    the two that ask the chat model (the second opinion and requery: a call each per search, for every
    sentence searched for), or, not `correct`, RAG's (the documents whole)."""
    builder = StateGraph(State, context_schema=Context, input_schema=SearchInput, output_schema=SearchOutput)
    builder.add_edge(START, "retrieve")
    knowledge = add_corrective_steps(builder, chat_steps=False) if correct else [add_document_steps(builder, None)]
    builder.add_node("keep", keep)
    for node in knowledge:  # Ambiguous runs both in one step: `keep` runs once after them
        builder.add_edge(node, "keep")
    builder.add_edge("keep", END)
    return builder.compile(name="flare-search" if correct else "flare-search-whole")


def each_query(state: State, runtime: Runtime[Context]) -> list[Send]:
    """A branch per query, run in parallel: CRAG's correction of its search, or its documents whole."""
    node = "search" if resources.context_of(runtime).flare_correct else "search_whole"
    return [Send(node, SearchInput(question=q, query_n=n)) for n, q in enumerate(state["queries"])]


def build_flare() -> Builder:
    builder = system_graph()
    for name, node in (
        ("query", query),
        ("search", build_search()),
        ("search_whole", build_search(correct=False)),
        ("gather", gather),
        ("draft_sentence", draft_sentence),
        ("accept_sentence", accept_sentence),
        ("rewrite_sentence", rewrite_sentence),
        ("cite_answer", cite_answer),
        ("finish", finish),
    ):
        builder.add_node(name, node)
    builder.add_edge("contextualize", "query")
    builder.add_conditional_edges("query", each_query, SEARCHES)
    builder.add_edge("search", "gather")
    builder.add_edge("search_whole", "gather")
    builder.add_conditional_edges("gather", after_search, AFTER_SEARCH)
    builder.add_conditional_edges("draft_sentence", after_draft, AFTER_DRAFT)
    for node in ("accept_sentence", "rewrite_sentence"):
        builder.add_conditional_edges(node, after_sentence, AFTER_SENTENCE)
    builder.add_edge("cite_answer", "finish")
    builder.add_edge("finish", END)
    return builder


flare = build_flare().compile(name="flare")  # for langgraph.json
