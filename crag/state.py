"""The graph's state. Every key is overwritten, never appended, and `retrieve` resets them all at the
start of a turn, so nothing piles up across the turns of a thread."""

from __future__ import annotations

from typing import Literal

from langchain_core.documents import Document
from typing_extensions import TypedDict

Action = Literal["correct", "incorrect", "ambiguous"]


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
    question: str
    documents: list[Document]  # retrieved, with metadata title/source/rank
    action: Action
    scores: list[float]
    labels: list[str]
    rewritten_query: str
    knowledge: str
    answer: str
    sources: list[Source]
    web_error: str | None


class State(OutputState, total=False):
    internal_knowledge: list[Strip]
    external_knowledge: list[Strip]
    web_results: list[dict]
