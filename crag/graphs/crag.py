"""The CRAG graph (wiring only): contextualize → retrieve → grade [→ second opinion] [→ requery] → refine |
rewrite_and_search | both → the answer path (`crag.graphs.answer`)."""

from __future__ import annotations

from collections.abc import Hashable

from langgraph.graph import END
from langgraph.runtime import Runtime

from crag.graphs.answer import Builder, PathMap, add_answer_path, system_graph
from crag.knowledge.routing import after_grade, branches
from crag.nodes import grade, refine, requery, retrieve, rewrite_and_search, second_opinion
from crag.nodes.grade import second_opinion_due
from crag.settings import Context
from crag.state import State

# the edges' labels in the drawing (Studio, the README): what sends a run along each
ACTIONS: PathMap = {"correct / ambiguous": "refine", "incorrect / ambiguous": "rewrite_and_search"}
AFTER_GRADE: PathMap = {"all rejected": "second_opinion", "not correct: search again": "requery", **ACTIONS}
LABEL = {node: label for label, node in AFTER_GRADE.items()}


def route(state: State) -> list[Hashable]:
    # `grade` has set the action; without one, both branches would run, as for Ambiguous
    return [LABEL[node] for node in branches(state["action"] or "ambiguous")]


def route_after_second_opinion(state: State) -> list[Hashable]:
    return [LABEL[node] for node in after_grade(state["action"] or "ambiguous", state.get("requery_due", False))]


def route_after_grade(state: State, runtime: Runtime[Context]) -> list[Hashable]:
    return [LABEL["second_opinion"]] if second_opinion_due(state, runtime) else route_after_second_opinion(state)


def add_corrective_steps(builder: Builder, *, chat_steps: bool = True) -> list[str]:
    """CRAG's steps from `retrieve` to its knowledge (grade [→ second opinion] [→ requery] → refine |
    rewrite_and_search | both); the nodes after which the knowledge is whole.

    Without `chat_steps` the two steps that ask the chat model, the second opinion and requery, are left out
    (grade → the action's steps): FLARE's searches, a chat-model call each for every sentence searched for."""
    builder.add_node("retrieve", retrieve)
    builder.add_node("grade", grade)
    if chat_steps:
        builder.add_node("second_opinion", second_opinion)
        builder.add_node("requery", requery)
    builder.add_node("refine", refine)
    builder.add_node("rewrite_and_search", rewrite_and_search)
    builder.add_edge("retrieve", "grade")
    if not chat_steps:
        builder.add_conditional_edges("grade", route, ACTIONS)
        return ["refine", "rewrite_and_search"]
    builder.add_conditional_edges("grade", route_after_grade, AFTER_GRADE)
    builder.add_conditional_edges(
        "second_opinion", route_after_second_opinion, {k: v for k, v in AFTER_GRADE.items() if v != "second_opinion"}
    )
    builder.add_conditional_edges("requery", route, ACTIONS)
    return ["refine", "rewrite_and_search"]


def build_graph(*, answer: bool = True) -> Builder:
    """The CRAG graph's builder, to compile with your own checkpointer or name.

    Without `answer` it stops once the knowledge is refined: the graph behind `CRAGRetriever`."""
    builder = system_graph()
    builder.add_edge("contextualize", "retrieve")
    knowledge = add_corrective_steps(builder)
    if answer:
        add_answer_path(builder, after=knowledge)
    else:
        for node in knowledge:
            builder.add_edge(node, END)
    return builder


graph = build_graph().compile(name="crag")
knowledge_graph = build_graph(answer=False).compile(name="crag-knowledge")


__all__ = ["build_graph", "graph"]  # what callers outside the package use
