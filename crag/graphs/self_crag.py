"""Self-CRAG as the CRAG paper's authors built it (its Table 1; their `scripts/data_process.py`), wiring only:
Self-RAG over CRAG's three knowledge sets. After Self-RAG's [Retrieve] judgement: retrieve → grade → refine and
rewrite_and_search, both whatever the action → a candidate over each set (your documents' kept strips, the
web's, both: Correct's, Incorrect's and Ambiguous's knowledge), critiqued; the best-scoring one answers. The
evaluator's grade decides which strips are kept, not which set is read: choosing is Self-RAG's part."""

from __future__ import annotations

from crag.graphs.answer import Builder, system_graph
from crag.graphs.self_rag import add_candidates_path, add_retrieval_on_demand
from crag.nodes import grade, refine, retrieve, rewrite_and_search
from crag.nodes.candidate import knowledge_sets, passages


def build_self_crag() -> Builder:
    builder = system_graph()
    add_retrieval_on_demand(builder, then="retrieve")
    for name, node in (("retrieve", retrieve), ("grade", grade), ("refine", refine), ("passages", passages)):
        builder.add_node(name, node)
    builder.add_node("rewrite_and_search", rewrite_and_search)
    builder.add_edge("retrieve", "grade")
    for branch in ("refine", "rewrite_and_search"):  # both knowledge sets, side by side
        builder.add_edge("grade", branch)
        builder.add_edge(branch, "passages")
    add_candidates_path(builder, after="passages", passages=knowledge_sets)
    return builder


self_crag = build_self_crag().compile(name="self_crag")
