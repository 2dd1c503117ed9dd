"""The systems CRAG is measured against (wiring only), from its nodes so they differ only in the knowledge
answered over: `rag`, the retrieved documents whole; `rag_web`, those and the web's results (the paper's
"RAG w. web"); `no_retrieval`, nothing."""

from __future__ import annotations

import itertools

from langgraph.graph import START, StateGraph

from crag.graphs.answer import add_answer_path
from crag.nodes import contextualize, retrieve, use_documents, web_search
from crag.settings import Context
from crag.state import InputState, OutputState, State

STEPS = {
    "rag": ["retrieve", "use_documents"],
    "rag_web": ["retrieve", "use_documents", "web_search"],
    "no_retrieval": [],
}
NODES = {"retrieve": retrieve, "use_documents": use_documents, "web_search": web_search}


def build_baseline(name: str) -> StateGraph:
    builder = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node("contextualize", contextualize)
    order = ["contextualize", *STEPS[name]]
    for step in STEPS[name]:
        builder.add_node(step, NODES[step])
    builder.add_edge(START, "contextualize")
    for a, b in itertools.pairwise(order):
        builder.add_edge(a, b)
    add_answer_path(builder, after=[order[-1]])
    return builder


rag = build_baseline("rag").compile(name="rag")  # for langgraph.json; the others through `crag.graphs.compiled`
