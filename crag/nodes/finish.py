"""`finish`: record whether the answer is grounded, its sources, and the turn in the thread's history."""

from __future__ import annotations

from crag.answers.attribution import grounded
from crag.nodes.answering import sources_of
from crag.state import State, Turn


def finish(state: State) -> dict:
    citations, question = state.get("citations") or [], state["question"]
    turn = Turn(asked=state.get("asked") or question, question=question, answer=state["answer"])
    return {
        "grounded": grounded(citations),
        "sources": sources_of(citations, state.get("given") or []),
        "history": [turn],
    }
