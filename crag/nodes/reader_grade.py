"""The LangGraph tutorial's corrective steps (its CRAG notebook): the chat model grades each document yes or
no, the relevant ones are kept whole, and any "no" sends the question, rewritten by the model, to the web."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.events import emit
from crag.nodes.rewrite_and_search import rewrite_query
from crag.nodes.timing import timed
from crag.nodes.whole import whole_strips
from crag.settings import Context
from crag.state import State
from crag.thresholds import Action


@timed("grade")
def grade_by_reader(state: State, runtime: Runtime[Context]) -> dict:
    """Every document graded by the chat model (its P(yes) in -1..1 when local, its reply's first word when
    hosted): Correct when all are relevant, Incorrect when none is, Ambiguous between."""
    ctx = resources.context_of(runtime)
    documents = state.get("documents", [])
    grades = [round(g, 4) for g in resources.relevance(ctx, state["question"], documents)] if documents else []
    labels = ["correct" if g > 0 else "incorrect" for g in grades]
    ranks = [i for i, label in enumerate(labels) if label == "correct"]
    action: Action = "incorrect" if not ranks else "correct" if len(ranks) == len(documents) else "ambiguous"
    reason = f"the chat model judged {len(ranks)} of {len(documents)} documents relevant: {action.title()}"
    emit(runtime, "grade", scores=grades, labels=labels, action=action, reason=reason)
    kept = whole_strips([documents[i] for i in ranks], "internal", ranks)
    return {"scores": grades, "labels": labels, "action": action, "reason": reason, "internal_knowledge": kept}


def after_reader_grade(state: State, runtime: Runtime[Context]) -> str:
    """To the web when some document is not relevant and there is a web to search."""
    if state["action"] == "correct" or not resources.context_of(runtime).has_web:
        return "all relevant, or no web"
    return "some not relevant"


@timed("rewrite")
def transform_query(state: State, runtime: Runtime[Context]) -> dict:
    """The web query the chat model writes (the tutorial's question re-writer; the CRAG paper's prompt)."""
    query = rewrite_query(resources.context_of(runtime), state["question"], mode="model")
    emit(runtime, "rewrite_and_search", rewritten_query=query)
    return {"rewritten_query": query}
