"""Where the answer goes next: the conditional edges after each answer step. An answer that stands is final;
one the model declined reads further once when refinement set strips aside; one declined or withheld is
quoted when a strip can be, else asked again when the settings allow it."""

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
    """ "declined": the model's own "I don't know" with strips set aside to read; "declined or withheld": an
    answer that does not stand otherwise; "final": one that stands, or there was no knowledge to answer from."""
    if not state.get("given") or not abstains(state["answer"]):
        return "final"
    return "declined" if abstains(state["draft"]) and unread_knowledge(state) else "declined or withheld"


def after_reading_further(state: State) -> Literal["final", "declined or withheld"]:
    return "declined or withheld" if abstains(state["answer"]) else "final"


def after_quote(state: State, runtime: Runtime[Context]) -> Literal["final", "nothing to quote"]:
    return "nothing to quote" if not state.get("quoted") and asks_again(resources.context_of(runtime)) else "final"


def asks_again(ctx: Context) -> bool:
    """Whether a declined or withheld answer is asked once more: a retry prompt other than the first, and never
    an unmarked one after a datamarked first (datamarking guards against instructions planted in documents)."""
    retry = ctx.retry_prompt
    unmarking = ctx.generate_prompt in MARKED_PROMPTS and retry not in MARKED_PROMPTS
    return bool(retry) and retry != ctx.generate_prompt and not unmarking
