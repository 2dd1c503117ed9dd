"""The systems CRAG is measured against (wiring only), from its nodes so they differ only in the knowledge
answered over: `rag`, the retrieved documents whole; `rag_web`, those and the web's results (the paper's
"RAG w. web"); `no_retrieval`, nothing."""

from __future__ import annotations

import itertools

from crag.graphs.answer import Builder, add_answer_path, system_graph
from crag.nodes import retrieve, use_documents, web_search

STEPS = {
    "rag": ["retrieve", "use_documents"],
    "rag_web": ["retrieve", "use_documents", "web_search"],
    "no_retrieval": [],
}
NODES = {"retrieve": retrieve, "use_documents": use_documents, "web_search": web_search}


def add_document_steps(builder: Builder, after: str | None = "contextualize") -> str:
    """RAG's knowledge: `retrieve`, then the documents whole (`use_documents`), after node `after` (None: the
    system routes to `retrieve` itself); the node after which the knowledge is final."""
    builder.add_node("retrieve", retrieve)
    builder.add_node("use_documents", use_documents)
    if after is not None:
        builder.add_edge(after, "retrieve")
    builder.add_edge("retrieve", "use_documents")
    return "use_documents"


def build_baseline(name: str) -> Builder:
    builder = system_graph()
    order = ["contextualize", *STEPS[name]]
    for step in STEPS[name]:
        builder.add_node(step, NODES[step])
    for a, b in itertools.pairwise(order):
        builder.add_edge(a, b)
    add_answer_path(builder, after=[order[-1]])
    return builder


rag = build_baseline("rag").compile(name="rag")  # for langgraph.json; the others through `crag.graphs.compiled`
