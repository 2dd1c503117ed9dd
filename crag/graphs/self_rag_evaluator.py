"""Self-RAG whose critics are CRAG's own (wiring only): the retrieval evaluator stands for ISREL and the
grounding check (`crag.answers.attribution`) for ISSUP, so the reader only writes the candidates and is never
asked to critique (no ISUSE). Deciding whether to retrieve is a critique of the reader's too, so this system
always retrieves (Self-RAG's "always_retrieve" mode): contextualize → retrieve → the documents whole → a
candidate per document, each judged by the evaluator and the grounding check → select → the answer path."""

from __future__ import annotations

from langgraph.graph import START, StateGraph

from crag.graphs.self_rag import add_candidates_path
from crag.nodes import contextualize, retrieve, use_documents
from crag.nodes.candidate import candidate_by_evaluator
from crag.settings import Context
from crag.state import InputState, OutputState, State


def build_self_rag_evaluator() -> StateGraph:
    builder = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node("contextualize", contextualize)
    builder.add_node("retrieve", retrieve)
    builder.add_node("use_documents", use_documents)
    builder.add_edge(START, "contextualize")
    builder.add_edge("contextualize", "retrieve")
    builder.add_edge("retrieve", "use_documents")
    add_candidates_path(builder, after="use_documents", write=candidate_by_evaluator)
    return builder


self_rag_evaluator_critics = build_self_rag_evaluator().compile(name="self_rag_evaluator_critics")
