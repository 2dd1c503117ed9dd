"""The CRAG of LangGraph's and LlamaIndex's tutorials, as a baseline (wiring only): contextualize → retrieve →
the chat model grades each document → all relevant: answer; else the model rewrites the question → web
search → answer over the relevant documents and the web's results, whole (no evaluator, no refinement)."""

from __future__ import annotations

from crag.graphs.answer import Builder, add_answer_path, system_graph
from crag.nodes import retrieve, web_search
from crag.nodes.reader_grade import after_reader_grade, grade_by_reader, transform_query


def build_tutorial() -> Builder:
    builder = system_graph()
    builder.add_node("retrieve", retrieve)
    builder.add_node("grade_documents", grade_by_reader)
    builder.add_node("transform_query", transform_query)
    builder.add_node("web_search", web_search)
    builder.add_edge("contextualize", "retrieve")
    builder.add_edge("retrieve", "grade_documents")
    add_answer_path(builder, after=["web_search"])
    builder.add_conditional_edges(
        "grade_documents",
        after_reader_grade,
        {"all relevant, or no web": "generate", "some not relevant": "transform_query"},
    )
    builder.add_edge("transform_query", "web_search")
    return builder


tutorial_crag = build_tutorial().compile(name="tutorial_crag")
