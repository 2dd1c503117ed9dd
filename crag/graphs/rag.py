"""The systems CRAG is measured against (wiring only), built from its nodes so that they validate, retrieve,
prompt, check and cite exactly as CRAG does and differ only in the knowledge the answer is written over:
`rag`, the retrieved documents whole in rank order; `rag_web`, the same and the web's results for the
question itself, whole (the CRAG paper's "RAG w. web"); `no_retrieval`, nothing."""

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


rag = build_baseline("rag").compile(name="rag")
rag_web = build_baseline("rag_web").compile(name="rag-web")
no_retrieval = build_baseline("no_retrieval").compile(name="no-retrieval")
