"""`finish`: record whether the answer is grounded, its sources, and the turn in the thread's history; in a
conversation of `messages`, the answer as its next message."""

from __future__ import annotations

from crag.answers.attribution import grounded
from crag.nodes.answering import sources_of
from crag.questions.messages import ABOUT_ANSWER, answer_message
from crag.state import State, Turn


def finish(state: State) -> dict:
    citations, question = state.get("citations") or [], state["question"]
    turn = Turn(asked=state.get("asked") or question, question=question, answer=state["answer"])
    done = {"grounded": grounded(citations), "sources": sources_of(citations, state.get("given") or [])}
    update = {**done, "history": [turn]}
    if state.get("messages"):  # a chat client's conversation: the answer is its next message
        answered = {**state, **done, "question": question, "citations": citations}
        about = {key: answered.get(key) for key in ABOUT_ANSWER}
        update["messages"] = [answer_message(state["answer"], about)]
    return update
