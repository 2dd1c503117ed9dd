"""`contextualize`: validate the question, start the turn afresh, and make a follow-up self-contained."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.events import CONDENSE_TAGS, emit
from crag.nodes.timing import timed
from crag.questions.checks import validate_question
from crag.questions.followup import append_previous, parse_condensed, refers_back, resolve
from crag.settings import Context
from crag.state import State, fresh_turn
from crag.templates import filled


def model_condensed(ctx: Context, question: str, history: list) -> str | None:
    """The chat model's self-contained question; None when its rewrite is unusable or it fails."""
    try:
        prompt = filled("condense", ctx.prompts, question=question, history=history)
        tokens = resources.condense_tokens(question)
        text, reply = resources.write(ctx, "condense", prompt, config={"tags": CONDENSE_TAGS}, reply_tokens=tokens)
        # a rewrite cut by its token budget has lost the question's end ("… a word boundary, wi")
        return None if resources.cut_short(reply) else parse_condensed(text, question)
    except Exception:  # a failing rewriter must not stop the turn
        return None


def condense(ctx: Context, question: str, history: list) -> str:
    """The model's rewrite (it reads names the rules cannot), else the rules', else the previous question appended."""
    return model_condensed(ctx, question, history) or resolve(question, history) or append_previous(question, history)


@timed("contextualize")
def contextualize(state: State, runtime: Runtime[Context]) -> dict:
    asked = validate_question(state.get("question"))
    resources.check(resources.context_of(runtime))
    history = state.get("history") or []
    question = asked
    if history and refers_back(asked):
        question = condense(resources.context_of(runtime), asked, history)
        emit(runtime, "contextualize", asked=asked, question=question)
    return {**fresh_turn(), "asked": asked, "question": question}


__all__ = ["model_condensed"]  # what callers outside the package use
