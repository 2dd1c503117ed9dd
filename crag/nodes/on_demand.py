"""Self-RAG's retrieval on demand: the reader judges whether documents would help (its [Retrieve] token, asked
as a prompt and read from its first reply token, P(yes) against P(no)); at or below
`Context.self_rag_retrieve_threshold` it answers from its memory, marked ungrounded."""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime

from crag import resources
from crag.events import emit
from crag.nodes.answering import written
from crag.nodes.timing import timed
from crag.settings import Context
from crag.state import State


@timed("decide_retrieval")
def decide_retrieval(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    threshold = ctx.self_rag_retrieve_threshold
    if threshold <= 0:  # Self-RAG's "always_retrieve": the model is not asked
        return {}
    try:
        yes = resources.critique(ctx, ["retrieve"], state["question"])["retrieve"][0]
    except Exception as exc:  # a failing or unreachable chat model: search, as plain RAG would
        emit(runtime, "decide_retrieval", error=f"{type(exc).__name__}: {exc}", retrieve=True)
        return {}
    yes = round(yes, 4)
    emit(runtime, "decide_retrieval", probability=yes, threshold=threshold, retrieve=yes > threshold)
    return {"retrieve_probability": yes}


def after_decision(state: State, runtime: Runtime[Context]) -> Literal["documents help", "no help"]:
    """Search unless the model was asked and judged documents no help (P(yes) at most the threshold)."""
    yes = state.get("retrieve_probability")
    threshold = resources.context_of(runtime).self_rag_retrieve_threshold
    return "documents help" if yes is None or yes > threshold else "no help"


@timed("answer_from_memory")
def answer_from_memory(state: State, runtime: Runtime[Context]) -> dict:
    """Self-RAG's answer without retrieval ([No Retrieval]): the model's own, standing ungrounded."""
    ctx = resources.context_of(runtime)
    return written(ctx, ctx.generate_prompt, [], state["question"], "", from_memory=True)
