"""`contextualize`: validate the question, start the turn afresh, and make a follow-up self-contained. The
question is `question`, or the last of a chat client's `messages` when that is the user's; the turns before
it in `messages` are the history of a thread that has none (`crag.questions.messages`)."""

from __future__ import annotations

import uuid

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from crag import resources
from crag.events import CONDENSE_TAGS, emit
from crag.nodes.timing import timed
from crag.questions.checks import InvalidQuestion, validate_question
from crag.questions.followup import append_previous, parse_condensed, refers_back, resolve
from crag.questions.messages import asked_by_user, resent, turns
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


def opened(state: State) -> tuple[str, dict]:
    """The question as asked, and what the conversation gets: a resent copy of it removed and, on a thread
    without history, its earlier turns as the history; or, asked by `question` on a thread that has
    `messages`, the question as the user's message."""
    messages = state.get("messages") or []
    # a user's message an earlier turn already took (that turn failed before its answer) is not asked again
    taken = bool(messages) and messages[-1].id is not None and messages[-1].id == state.get("asked_id")
    asked = None if taken else asked_by_user(messages)
    if asked is None:
        if state.get("question") is None:
            raise InvalidQuestion("no question: give a question, or messages whose last is the user's")
        asked = validate_question(state.get("question"))
        if not messages:
            return asked, {}
        message = HumanMessage(asked, id=str(uuid.uuid4()))
        return asked, {"messages": [message], "asked_id": message.id}
    removed = resent(messages)
    gone = {r.id for r in removed}
    earlier = [m for m in messages[:-1] if m.id not in gone]
    update: dict = {"asked_id": messages[-1].id, **({"messages": removed} if removed else {})}
    if not state.get("history") and turns(earlier):
        update["history"] = turns(earlier)
    return asked, update


@timed("contextualize")
def contextualize(state: State, runtime: Runtime[Context]) -> dict:
    asked, conversation = opened(state)
    resources.check(resources.context_of(runtime))
    history = (state.get("history") or []) + conversation.get("history", [])
    question = asked
    if history and refers_back(asked):
        question = condense(resources.context_of(runtime), asked, history)
        emit(runtime, "contextualize", asked=asked, question=question)
    return {**fresh_turn(), **conversation, "asked": asked, "question": question}


__all__ = ["model_condensed"]  # what callers outside the package use
