"""The conditional edges after each answer step: final, read further, quote, or ask again."""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime

from crag import resources
from crag.answers.attribution import abstains
from crag.knowledge.routing import unread_knowledge
from crag.prompts import MARKED_PROMPTS
from crag.settings import Context
from crag.state import State


def after_generate(state: State) -> Literal["final", "declined", "declined or withheld"]:
    """ "declined": the model's own "I don't know" with strips set aside to read; "final": an answer that
    stands, or no knowledge to answer from."""
    if not state.get("given") or not abstains(state["answer"]):
        return "final"
    return "declined" if abstains(state["draft"]) and unread_knowledge(state) else "declined or withheld"


def after_reading_further(state: State) -> Literal["final", "declined or withheld"]:
    return "declined or withheld" if abstains(state["answer"]) else "final"


def after_quote(state: State, runtime: Runtime[Context]) -> Literal["final", "nothing to quote"]:
    return "nothing to quote" if not state.get("quoted") and asks_again(resources.context_of(runtime)) else "final"


def asks_again(ctx: Context) -> bool:
    """Whether a declined or withheld answer is asked once more: a retry prompt other than the first, and never
    an unmarked one after a datamarked first (which guards against planted instructions)."""
    retry = ctx.retry_prompt
    unmarking = ctx.generate_prompt in MARKED_PROMPTS and retry not in MARKED_PROMPTS
    return bool(retry) and retry != ctx.generate_prompt and not unmarking
