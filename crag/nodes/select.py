"""`select`: Self-RAG's choice among its candidates: the best segment score's answer becomes the answer, its
passage the one strip it was given and cites. The shared `generate` is not run: the candidate was already
written over that passage, and writing again would throw away what the critiques scored. What follows an
answer that does not stand (reading further, a quote, asking again) is the shared answer path's."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.answers.critiques import best
from crag.events import emit
from crag.nodes.answering import format_knowledge, written
from crag.nodes.timing import timed
from crag.prompts import NO_KNOWLEDGE_ANSWER
from crag.settings import Context
from crag.state import State


@timed("select")
def select(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    candidates = state.get("candidates") or []
    chosen = best(candidates)
    if chosen is None:  # no passage to answer over: as `generate` does with no knowledge
        if not ctx.answer_without_knowledge:
            return {"answer": NO_KNOWLEDGE_ANSWER}
        return written(ctx, ctx.generate_prompt, [], state["question"], "")
    emit(runtime, "select", n=chosen["n"], scores=[c["score"] for c in candidates])
    return {
        "given": chosen["strips"],
        "knowledge": format_knowledge(chosen["strips"]),
        "draft": chosen["draft"],
        "answer": chosen["answer"],
        "citations": chosen["citations"],
        "replaced": chosen["replaced"],
    }
