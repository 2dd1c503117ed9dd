"""The graph's state. Every per-turn key is overwritten, never appended, and `contextualize` resets
them all at the start of a turn, so nothing piles up across the turns of a thread. The one key that
grows is `history` (questions and answers only), and it keeps the last `MAX_TURNS` turns."""

from __future__ import annotations

from typing import Annotated, Literal

from langchain_core.documents import Document
from typing_extensions import TypedDict

Action = Literal["correct", "incorrect", "ambiguous"]
MAX_TURNS = 8


class Turn(TypedDict):
    """One finished turn of a thread: what was asked, the question CRAG answered, the answer."""

    asked: str
    question: str  # `asked` made self-contained using the earlier turns
    answer: str


def add_turns(left: list[Turn] | None, right: list[Turn] | None) -> list[Turn]:
    """Reducer of `history`: append, keeping the last MAX_TURNS turns."""
    return (list(left or []) + list(right or []))[-MAX_TURNS:]


class Strip(TypedDict):
    """A knowledge strip kept by refinement, with where it came from."""

    text: str
    score: float
    title: str
    source: str  # file path or URL of the document it was cut from
    origin: Literal["internal", "external"]
    doc: int  # index of that document among the refined ones (keeps document order)


class Source(TypedDict):
    id: int  # the number the answer cites as [id]
    title: str
    source: str
    origin: Literal["internal", "external"]


class InputState(TypedDict):
    question: str


class OutputState(TypedDict, total=False):
    question: str  # as answered: a follow-up on a thread is first made self-contained
    documents: list[Document]  # retrieved, with metadata title/source/rank
    action: Action
    scores: list[float]
    labels: list[str]
    rewritten_query: str
    knowledge: str
    answer: str
    sources: list[Source]
    web_error: str | None
    history: Annotated[list[Turn], add_turns]


class State(OutputState, total=False):
    asked: str  # the question as the user typed it this turn
    internal_knowledge: list[Strip]
    external_knowledge: list[Strip]
    web_results: list[dict]
