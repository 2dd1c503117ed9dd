"""One graph per system, wiring only: CRAG (`crag.graphs.crag`) and the systems it is measured against.

`BUILDERS` names each system's graph builder: the names `crag eval run`'s pipelines, `langgraph.json` and the
command line use. A new system is a module here and a line below."""

from __future__ import annotations

import functools
from collections.abc import Callable

from crag.graphs.answer import Builder
from crag.graphs.crag import build_graph
from crag.graphs.crag_self_reasoning import build_crag_self_reasoning
from crag.graphs.flare import build_flare
from crag.graphs.rag import build_baseline
from crag.graphs.self_crag import build_self_crag
from crag.graphs.self_rag import build_self_rag
from crag.graphs.self_rag_evaluator import build_self_rag_evaluator
from crag.graphs.self_reasoning import build_self_reasoning
from crag.graphs.tutorial import build_tutorial

BUILDERS: dict[str, Callable[[], Builder]] = {
    "crag": build_graph,
    "rag": functools.partial(build_baseline, "rag"),
    "rag_web": functools.partial(build_baseline, "rag_web"),
    "no_retrieval": functools.partial(build_baseline, "no_retrieval"),
    "tutorial_crag": build_tutorial,
    "self_reasoning": build_self_reasoning,
    # its ablations: without the relevance step, the evidence step or the trajectory analysis
    "self_reasoning_no_relevance": functools.partial(build_self_reasoning, without="relevance_aware"),
    "self_reasoning_no_evidence": functools.partial(build_self_reasoning, without="evidence_aware"),
    "self_reasoning_no_trajectory": functools.partial(build_self_reasoning, without="trajectory_analysis"),
    "crag_self_reasoning": build_crag_self_reasoning,
    "self_rag": build_self_rag,
    "self_crag": build_self_crag,
    "self_rag_evaluator_critics": build_self_rag_evaluator,
    "flare": build_flare,
}


def build(name: str) -> Builder:
    """The system's graph builder, to compile with a checkpointer; ValueError naming the systems."""
    if name not in BUILDERS:
        raise ValueError(f"unknown system {name!r}; choose from {', '.join(BUILDERS)}")
    return BUILDERS[name]()


@functools.cache
def compiled(name: str):
    """The system's graph, compiled without a checkpointer (one per process)."""
    return build(name).compile(name=name)


__all__ = ["BUILDERS", "build", "compiled"]
