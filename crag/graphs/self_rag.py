"""Self-RAG (Asai et al. 2023) from CRAG's nodes (wiring only): contextualize → the reader judges whether to
retrieve ([Retrieve]) → retrieve → the documents whole → a candidate answer per document, written and
critiqued (ISREL, ISSUP, ISUSE) on a branch of its own → `select` the best segment score → the answer path
(`crag.graphs.answer`, after `select` instead of `generate`); judged no help, the model answers from its
memory → finish. `crag.graphs.self_crag` and `crag.graphs.self_rag_evaluator` reuse the steps below."""

from __future__ import annotations

from collections.abc import Callable

from langgraph.types import Send

from crag.graphs.answer import Builder, PathMap, add_answer_path, system_graph
from crag.graphs.rag import add_document_steps
from crag.nodes.candidate import branches, candidate
from crag.nodes.on_demand import after_decision, answer_from_memory, decide_retrieval
from crag.nodes.select import select
from crag.state import State

# the edges' labels in the drawing (Studio): what sends a run along each
ON_DEMAND: PathMap = {"documents help": "retrieve", "no help": "answer_from_memory"}
FAN_OUT: PathMap = {"a branch per passage": "candidate", "no passages": "select"}


def fan_out(passages: Callable[[State], list]) -> Callable[[State], list[Send] | list[str]]:
    """A `candidate` branch per passage `passages` makes of the state; none: straight to `select`."""
    return lambda state: [Send("candidate", branch) for branch in passages(state)] or ["no passages"]


def add_retrieval_on_demand(builder: Builder, then: str) -> None:
    """After `contextualize`, the [Retrieve] judgement: on to node `then`, or an answer from memory → finish
    (which `add_candidates_path` adds)."""
    builder.add_node("decide_retrieval", decide_retrieval)
    builder.add_node("answer_from_memory", answer_from_memory)
    builder.add_edge("contextualize", "decide_retrieval")
    builder.add_conditional_edges("decide_retrieval", after_decision, {**ON_DEMAND, "documents help": then})
    builder.add_edge("answer_from_memory", "finish")


def add_candidates_path(
    builder: Builder, after: str, write: Callable[..., dict] = candidate, passages: Callable = branches
) -> None:
    """The candidates over `passages` of the state (default: each document of the final knowledge) once node
    `after` is done, each by `write`, then `select` and the answer path."""
    builder.add_node("candidate", write)
    builder.add_node("select", select)
    builder.add_conditional_edges(after, fan_out(passages), FAN_OUT)
    add_answer_path(builder, after=["candidate"], answered_by="select")


def build_self_rag() -> Builder:
    builder = system_graph()
    add_retrieval_on_demand(builder, then="retrieve")
    add_candidates_path(builder, after=add_document_steps(builder, after=None))
    return builder


self_rag = build_self_rag().compile(name="self_rag")
