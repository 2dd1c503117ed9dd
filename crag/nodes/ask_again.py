"""`ask_again`: nothing could be quoted for a declined or withheld answer: ask again (`Context.retry_prompt`)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.events import emit
from crag.nodes.answering import written
from crag.nodes.timing import timed
from crag.settings import Context
from crag.state import State


@timed("ask_again")
def ask_again(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    emit(runtime, "ask_again", retry_prompt=ctx.retry_prompt, first_draft=state["draft"])
    assert ctx.retry_prompt is not None  # `asks_again` routes here only with a retry prompt
    reply = written(ctx, ctx.retry_prompt, state["given"], state["question"], state["knowledge"])
    return {"asked_again": True, "first_draft": state["draft"], **reply}
