"""`read_further`: the model declined over the kept strips, so it reads the next strips of the ranking once."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.answers.attribution import abstains
from crag.events import emit
from crag.knowledge.routing import unread_knowledge
from crag.nodes.answering import format_knowledge, written
from crag.nodes.timing import timed
from crag.settings import Context
from crag.state import State


@timed("read_further")
def read_further(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    further = unread_knowledge(state)
    emit(runtime, "read_further", further=len(further), first_draft=state["draft"])
    more = format_knowledge(further)
    given = [*state["given"], *further]  # it may cite the kept strips too
    reply = written(ctx, ctx.generate_prompt, further, state["question"], more, cite=given)
    if abstains(reply["answer"]):
        return {"further_draft": reply["draft"]}
    knowledge = f"{state['knowledge']}\n\n{more}"
    return {"further_draft": reply["draft"], "first_draft": state["draft"], "read_further": True, "given": given,
            "knowledge": knowledge, **reply}  # fmt: skip
