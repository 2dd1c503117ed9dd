"""Self-RAG whose critics are CRAG's own (wiring only): the retrieval evaluator stands for ISREL and the
grounding check (`crag.answers.attribution`) for ISSUP, so the reader only writes the candidates and is never
asked to critique (no ISUSE). Deciding whether to retrieve is a critique of the reader's too, so this system
always retrieves (Self-RAG's "always_retrieve" mode): contextualize → retrieve → the documents whole → a
candidate per document, each judged by the evaluator and the grounding check → select → the answer path."""

from __future__ import annotations

from crag.graphs.answer import Builder, system_graph
from crag.graphs.rag import add_document_steps
from crag.graphs.self_rag import add_candidates_path
from crag.nodes.candidate import candidate_by_evaluator


def build_self_rag_evaluator() -> Builder:
    builder = system_graph()
    add_candidates_path(builder, after=add_document_steps(builder), write=candidate_by_evaluator)
    return builder


self_rag_evaluator_critics = build_self_rag_evaluator().compile(name="self_rag_evaluator_critics")
