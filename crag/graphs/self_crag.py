"""Self-CRAG, as the CRAG paper builds it (its Table 1): Self-RAG over CRAG's corrected knowledge (wiring
only). After Self-RAG's [Retrieve] judgement CRAG's own steps (`crag.graphs.crag.add_corrective_steps`:
retrieve → grade [→ second opinion] [→ requery] → refine | rewrite_and_search | both) decide the action and
keep their strips; Self-RAG's candidates are then written over those strips (internal, external or both by
the action) instead of the retrieved documents, and the best-scoring one answers."""

from __future__ import annotations

from langgraph.graph import START, StateGraph

from crag.graphs.crag import add_corrective_steps
from crag.graphs.self_rag import add_candidates_path, add_retrieval_on_demand
from crag.nodes import contextualize
from crag.nodes.candidate import passages
from crag.settings import Context
from crag.state import InputState, OutputState, State


def build_self_crag() -> StateGraph:
    builder = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node("contextualize", contextualize)
    builder.add_edge(START, "contextualize")
    add_retrieval_on_demand(builder, then="retrieve")
    builder.add_node("passages", passages)
    for node in add_corrective_steps(builder):
        builder.add_edge(node, "passages")  # Ambiguous runs both: the candidates fan out once, from here
    add_candidates_path(builder, after="passages")
    return builder


self_crag = build_self_crag().compile(name="self_crag")
