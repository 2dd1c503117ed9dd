"""The graph's state. Every key but the question, `history`, `messages` and `timings` is the turn's own and
starts empty (`fresh_turn`); `history` keeps the last `MAX_TURNS` turns."""

from __future__ import annotations

import typing
from typing import Annotated, Any, Literal

from langchain_core.documents import Document
from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from crag.records import Citation, Evidence, Quote, Source, Strip, Token, Turn
from crag.thresholds import Action

MAX_TURNS = 8


def add_turns(left: list[Turn] | None, right: list[Turn] | None) -> list[Turn]:
    """Reducer of `history`: append, keeping the last MAX_TURNS turns."""
    return (list(left or []) + list(right or []))[-MAX_TURNS:]


def merge_timings(left: dict[str, float] | None, right: dict[str, float] | None) -> dict[str, float]:
    """Reducer of `timings`: branches add their stages; an entry for `contextualize` starts a new turn's record."""
    right = dict(right or {})
    if "contextualize" in right:
        return right
    return {**(left or {}), **right}


# why an answer is not the model's own words
Replaced = Literal["empty", "declined", "looped", "unsupported", "planted"]


class Candidate(TypedDict):
    """Self-RAG's candidate: an answer written over one passage, the critiques of it and its segment score."""

    n: int  # its passage's place among those the candidates were written over, from 1
    strips: list[Strip]  # that passage: one document (Self-RAG), or one of CRAG's knowledge sets (Self-CRAG)
    draft: str  # what the model wrote
    answer: str  # the draft, or why it was withheld (as `generate`'s answer)
    citations: list[Citation]  # the draft's sentences and whether the passage supports them
    replaced: Replaced | None
    relevant: float  # ISREL: P(the passage is relevant)
    support: list[float]  # ISSUP: P(fully supported), P(partially), P(no support)
    usefulness: list[float]  # ISUSE: P(utility 1) … P(utility 5); empty when not asked
    score: float  # `crag.answers.critiques.segment_score`


def in_order(left: list | None, right: list | None) -> list:
    """Reducer of keys that parallel branches add to (`candidates`, `searches`): each branch adds its own, kept
    in the order of their `n` whichever finishes first; an empty list (a new turn's, or FLARE's `gather`'s
    once it has read them) starts afresh."""
    if right is None:
        return list(left or [])
    merged = {item["n"]: item for item in [*(left or []), *right]} if right else {}
    return [merged[n] for n in sorted(merged)]


def add_candidates(left: list[Candidate] | None, right: list[Candidate] | None) -> list[Candidate]:
    """Reducer of `candidates`: each branch's in passage order (`in_order`)."""
    return in_order(left, right)


class Retrieval(TypedDict):
    """One of FLARE's searches: its query, what it found and what CRAG's correction kept of it."""

    query: str
    documents: list[str]  # the retrieved documents' titles, by rank
    action: Action | None  # the evaluator's action over them; None without correction
    scores: list[float]  # the evaluator's score of each document; empty without correction
    kept: int  # the strips kept as knowledge (the web's included)


class Search(TypedDict):
    """One of FLARE's searches as its branch hands it to `gather`: the record of it, what it found and kept."""

    n: int  # its query's place among the sentence's queries, from 0
    retrieval: Retrieval
    documents: list[Document]  # what it found, by rank
    strips: list[Strip]  # what its correction kept (the documents whole without correction)


def add_searches(left: list[Search] | None, right: list[Search] | None) -> list[Search]:
    """Reducer of `searches`: each branch's in query order (`in_order`); `gather` empties it for the next."""
    return in_order(left, right)


class Sentence(TypedDict):
    """One sentence of a FLARE answer: the model's look-ahead, how sure it was, and what the answer got."""

    n: int  # its place in the answer, from 1
    lookahead: str  # the model's draft of it, over the knowledge found before it
    confidence: float  # the lowest probability among the draft's tokens (1.0 for an empty draft)
    unsure: list[Token]  # the draft's tokens below the threshold θ
    # the searches since the sentence before (before the first: the question's); none when the draft was kept as written
    queries: list[str]
    retrievals: list[Retrieval]
    sentence: str  # what the answer got: the draft, or the sentence written again over what was found
    rewritten: bool
    tokens: int  # the model's tokens in it


class InputState(TypedDict, total=False):
    """A question, or a chat client's `messages` whose last is the user's (`crag.questions.messages`)."""

    question: str
    messages: Annotated[list[AnyMessage], add_messages]


class OutputState(TypedDict, total=False):
    question: str  # as answered: a follow-up on a thread is first made self-contained
    # the conversation, once a client sends messages: each turn adds the user's question and the answer
    # (an AIMessage, the action, sources and citations in its response_metadata)
    messages: Annotated[list[AnyMessage], add_messages]
    documents: list[Document]  # retrieved, with metadata title/source/rank
    action: Action | None  # None in a system that does not grade (the baselines)
    scores: list[float]
    labels: list[str]
    # the chat model's grade of the first `recheck_k` documents, when the evaluator rejected all (else empty)
    recheck_scores: list[float]
    recheck_error: str | None  # why the chat model could not give that grade (the evaluator's verdict stood); else None
    thresholds: dict[str, float]  # the (upper, lower) pair the action was decided with
    reason: str  # why that action, in words
    requeried: str  # what the knowledge base was searched again with (`Context.requery`); "" when it was not
    rewritten_query: str
    web_status: Literal["", "searched", "failed", "not configured"]  # "" when the route does not search
    web_error: str | None
    web_results: list[Document]  # the search hits, passages like `documents`: metadata title/source (the URL)
    internal_knowledge: list[Strip]  # strips kept from the retrieved documents
    # the next strips of refinement's ranking, read only when the model declines over the kept ones
    further_knowledge: list[Strip]
    external_knowledge: list[Strip]  # strips kept from the web results
    given: list[Strip]  # the strips the answer was written over, numbered as its citations number them
    knowledge: str  # what the generator was given, as text
    draft: str  # what the generator wrote (the answer, unless it was withheld as unsupported)
    answer: str
    grounded: bool  # the answer rests on kept knowledge: some sentence of it is supported by a strip
    quoted: bool  # the answer quotes a strip word for word: the model's was withheld or declined
    # its reply over `further_knowledge` after declining; the answer when `read_further`
    further_draft: str
    read_further: bool
    asked_again: bool  # the model declined or was withheld and was asked once more (Context.retry_prompt)
    first_draft: str  # its first reply, when the answer comes from a later one (read further, asked again); else empty
    replaced: Replaced | None  # why the answer is not the model's words; None when they stand or it was not asked
    citations: list[Citation]
    sources: list[Source]  # the cited strips
    # Self-Reasoning's steps (`crag.nodes.self_reasoning`): the reader's conversation, each step's prompt and reply
    reasoning: list[dict[str, str]]
    relevance: float | None  # the reader's P(yes), in -1..1, that its documents are relevant; None when not asked
    relevance_reason: str  # its reply to that question: why
    evidence: list[Evidence]  # the sentences it selected that are word for word in their documents
    evidence_dropped: list[Quote]  # the sentences it selected that are not (invented, altered or misnumbered)
    analysis: str  # its analysis of the steps before its answer
    # Self-RAG's [Retrieve]: the reader's P(yes, documents would help) over yes and no; None when not asked
    retrieve_probability: float | None
    # Self-RAG's candidates, one per passage, with their critiques; the best one's answer is `answer`
    candidates: Annotated[list[Candidate], add_candidates]
    # FLARE's steps (`crag.graphs.flare`): the sentence being written and what was searched for it, then each
    # sentence as it was added to `answer`
    lookahead: str  # the model's draft of the next sentence
    lookahead_tokens: list[Token]  # its tokens with their probabilities
    lookahead_finish: Literal["", "stop", "length", "cut"]  # "stop": the model's reply ended with it
    queries: list[str]  # the searches for the sentence (FLARE's first: the question)
    retrievals: list[Retrieval]  # what each of them found and kept
    sentences: list[Sentence]
    timings: Annotated[dict[str, float], merge_timings]  # seconds per stage of this turn
    history: Annotated[list[Turn], add_turns]


OUTPUT_KEYS = OutputState.__required_keys__ | OutputState.__optional_keys__


class State(OutputState, total=False):
    asked: str  # the question as the user typed it this turn
    # the id of the user's message the last turn took its question from: a turn that failed leaves it last in
    # `messages`, and the next turn asked by `question` must not take it again
    asked_id: str
    requery_due: bool  # set by `grade`: the knowledge base is searched again before the action runs
    # FLARE: in a search's branch (`crag.graphs.flare`), its query's place among `queries`, from 0
    query_n: int
    searches: Annotated[list[Search], add_searches]  # FLARE: the branches' searches, until `gather` reads them


class SearchInput(TypedDict):
    """What one of FLARE's search branches starts from: its query (as the `question` CRAG's steps read)."""

    question: str
    query_n: int


class SearchOutput(TypedDict):
    """What a search branch hands back: its search, and its steps' timings."""

    searches: Annotated[list[Search], add_searches]
    timings: Annotated[dict[str, float], merge_timings]


class IndexInput(TypedDict):
    """What the `index` graph is given: Documents (or their JSON: page_content, and metadata with a "source")."""

    docs: list[Document]


class IndexState(IndexInput, total=False):
    """The `index` graph's state: the documents, and what ingesting them did (`IngestReport` as a dict)."""

    report: dict[str, Any]


ACROSS_TURNS = frozenset({"question", "asked", "asked_id", "history", "messages", "timings"})


def _empty(kind: Any) -> Any:
    if typing.get_origin(kind) is Annotated:
        kind = typing.get_args(kind)[0]
    origin = typing.get_origin(kind)
    if origin is Literal and "" in typing.get_args(kind):
        return ""
    return {list: [], dict: {}, str: "", bool: False}.get(origin or kind)


def fresh_turn() -> dict[str, Any]:
    """Every per-turn key of `State` as a turn starts it."""
    hints = typing.get_type_hints(State, include_extras=True)
    return {key: _empty(kind) for key, kind in hints.items() if key not in ACROSS_TURNS}


__all__ = ["Turn"]  # what callers outside the package use
