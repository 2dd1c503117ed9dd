"""Strips, sources, citations and turns as plain dicts, so the graph's state stays JSON."""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict


class Turn(TypedDict):
    """One finished turn of a thread: what was asked, the question CRAG answered, the answer."""

    asked: str
    question: str  # `asked` made self-contained using the earlier turns
    answer: str


class Strip(TypedDict):
    """A knowledge strip kept by refinement, with where it came from."""

    text: str
    score: float  # the evaluator's
    selection_score: float  # what refinement ranked it by: `score` shifted by its standing among the strips
    # whether its standing may lift it over the thresholds: cut from a retrieved document not rejected
    lifted: bool
    title: str
    source: str  # file path or URL of the document it was cut from
    origin: Literal["internal", "external"]
    doc: int  # index of its passage among the refined ones: `documents` (internal), fetched web paragraphs (external)
    start: int  # the strip's character span in that document's text
    end: int


class Source(TypedDict):
    """A cited strip: the knowledge given to the generator is numbered per strip, and `id` is its number."""

    id: int
    title: str
    source: str
    origin: Literal["internal", "external"]
    doc: int
    start: int
    end: int
    text: str


class Citation(TypedDict):
    """One sentence of the answer, its span in `answer`, and the ids of the `sources` supporting it."""

    sentence: str
    start: int
    end: int
    sources: list[int]


class Quote(TypedDict):
    """A sentence the reader selected as evidence (Self-Reasoning's second step), as it wrote it."""

    document: int  # the number of the document it says the sentence is from, from 1
    sentence: str
    reason: str  # why it selected it


class Evidence(TypedDict):
    """A sentence the reader selected as evidence (Self-Reasoning's second step), kept because its document
    says it word for word (`crag.answers.evidence`)."""

    number: int  # its document's number in the reader's conversation, from 1
    sentence: str  # as the text the reader was shown spells it
    reason: str  # why the reader selected it, in its words
    start: int  # the sentence's character span in that text
    end: int


class Token(TypedDict):
    """One token a model wrote, as text, and the probability it gave it (FLARE's confidence)."""

    text: str  # its characters; a character split across tokens is the last one's
    prob: float
