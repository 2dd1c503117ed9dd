"""FLARE's reading of a look-ahead sentence (Jiang et al. 2023): where the sentence ends, whether the model was
unsure of it (a token below θ), and its queries: the sentence with its unsure tokens masked (below β), or the
unsure terms that generated questions ask about. As the official code (jzbjyb/FLARE, src/templates.py) reads
them, without its calls to a model to widen a term: a term here is the whole words its tokens touch."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

from crag.knowledge.refinement import sentence_spans
from crag.records import Token

# a term's unsure tokens this close together are one term (the official `min_gap`)
TERM_GAP = 5
# the most terms a sentence's questions ask about: each is a model call and a search
MAX_TERMS = 3
_MAYBE_ENDED = re.compile(r"[.!?][\"'”’)\]]*\s")


def sentence_end(text: str) -> int | None:
    """Where the first sentence of `text` ends, once a second one has begun (or a line break ends it); None
    while it may go on. A reply's leading whitespace belongs to no sentence."""
    start = len(text) - len(text.lstrip())
    newline = text.find("\n", start)
    if newline > start:
        return len(text[:newline].rstrip())
    if not _MAYBE_ENDED.search(text, start):
        return None
    spans = sentence_spans(text)
    return spans[0][2] if len(spans) >= 2 else None


def confidence(tokens: Sequence[Token]) -> float:
    """The lowest probability among `tokens`; 1.0 for none."""
    return min((t["prob"] for t in tokens), default=1.0)


def unsure(tokens: Sequence[Token], threshold: float) -> list[Token]:
    """The tokens whose probability is below `threshold` (θ): any one of them sends the sentence to a search."""
    return [t for t in tokens if t["prob"] < threshold]


def masked(tokens: Sequence[Token], mask: float) -> str:
    """The sentence as a query, its tokens below `mask` (β) left out (the official "simple" mask)."""
    return " ".join("".join(t["text"] if t["prob"] >= mask else " " for t in tokens).split())


def unsure_terms(tokens: Sequence[Token], mask: float, limit: int = MAX_TERMS) -> list[str]:
    """The sentence's unsure terms: runs of tokens below `mask`, joined when fewer than `TERM_GAP` tokens apart,
    each widened to the whole words it touches; punctuation alone is no term. At most `limit`, first first."""
    spans: list[list[int]] = []
    last = None
    for i, token in enumerate(tokens):
        if token["prob"] >= mask:
            continue
        if last is not None and i - last < TERM_GAP:
            spans[-1][1] = i + 1
        else:
            spans.append([i, i + 1])
        last = i
    text = "".join(t["text"] for t in tokens)
    offsets = [0]
    for token in tokens:
        offsets.append(offsets[-1] + len(token["text"]))
    terms: list[str] = []
    for first, end in spans:
        start, stop = offsets[first], offsets[end]
        while start < stop and text[start].isspace():  # a token's leading space is no part of the term
            start += 1
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        while stop < len(text) and not text[stop].isspace():
            stop += 1
        term = text[start:stop].strip().strip(string.punctuation + "“”‘’").strip()
        if term and term not in terms:
            terms.append(term)
    return terms[:limit]


__all__ = ["masked", "sentence_end", "unsure", "unsure_terms"]  # what callers outside the package use
