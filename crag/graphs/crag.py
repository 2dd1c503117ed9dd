"""The CRAG graph (wiring only): contextualize → retrieve → grade [→ requery] → refine | rewrite_and_search | both → generate."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from crag.knowledge.routing import after_grade, branches
from crag.nodes import contextualize, generate, grade, refine, requery, retrieve, rewrite_and_search
from crag.settings import Context
from crag.state import InputState, OutputState, State


def route(state: State) -> list[str]:
    return branches(state["action"])


def route_after_grade(state: State) -> list[str]:
    return after_grade(state["action"], state.get("requery_due", False))


def build_graph(*, answer: bool = True):
    """The graph's builder. Without `answer` it stops once the knowledge is refined (no `generate`):
    the graph behind `crag.components.CRAGRetriever`, which returns that knowledge as Documents."""
    builder = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node("contextualize", contextualize)
    builder.add_node("retrieve", retrieve)
    builder.add_node("grade", grade)
    builder.add_node("refine", refine)
    builder.add_node("rewrite_and_search", rewrite_and_search)
    builder.add_node("requery", requery)
    builder.add_edge(START, "contextualize")
    builder.add_edge("contextualize", "retrieve")
    builder.add_edge("retrieve", "grade")
    builder.add_conditional_edges("grade", route_after_grade, ["requery", "refine", "rewrite_and_search"])
    builder.add_conditional_edges("requery", route, ["refine", "rewrite_and_search"])
    last = END
    if answer:
        builder.add_node("generate", generate)
        builder.add_edge("generate", END)
        last = "generate"
    builder.add_edge("refine", last)
    builder.add_edge("rewrite_and_search", last)
    return builder


graph = build_graph().compile(name="crag")
knowledge_graph = build_graph(answer=False).compile(name="crag-knowledge")
