"""The words of a follow-up that refer, of what kind, and which refer inside the question: those are
shielded from the rewrite, or a new question would be rewritten about the previous subject."""

from __future__ import annotations

import re

from crag.english import (
    BEFORE_DEMONSTRATIVE,
    CLAUSE,
    DEMONSTRATIVE,
    EXISTENTIAL_THERE,
    EXPLETIVE_IT,
    INDEFINITE,
    NO_OBJECT,
    POSSESSIVE,
    PRONOUN_KIND,
    SUBJECT,
    THING_WORDS,
    TRAILING_THERE,
)
from crag.knowledge.web_query import subjects


def looks_like_person(name: str) -> bool:
    """Two or more title-case words, none naming a thing: "Ada Lovelace", not "University of Tokyo"."""
    words = [w for w in re.split(r"[\s,]+", name) if w]
    capitalised = [w for w in words if w[:1].isupper()]
    if len(capitalised) < 2 or any(w.lower().strip(".") in THING_WORDS for w in words) or re.search(r"\d", name):
        return False
    return all(re.fullmatch(r"(?:Mc|Mac|O')?[A-Z][a-zà-ÿ'’.-]*", w) for w in capitalised)


def _object_gap(after: str) -> bool:
    """Whether "it" is the object "to <verb>" lacks, and so refers: "Is it safe to use across threads?"."""
    return bool(NO_OBJECT.match(after))


def _inside(question: str) -> list[tuple[int, int]]:
    """Spans of the words that refer inside `question`: a pronoun after its own antecedent across a clause
    boundary, an existential "there", an expletive "it", a relative "that"."""
    spans = [_word_span(m, "there") for m in EXISTENTIAL_THERE.finditer(question)]
    for match in EXPLETIVE_IT.finditer(question):
        if match.group("it3") or not _object_gap(question[match.end() :]):  # "how long does it take to …"
            spans.append(next(match.span(g) for g in ("it", "it2", "it3") if match.group(g)))
    own = [(question.find(s), s) for s in subjects(question) if question.find(s) >= 0]
    trailing = TRAILING_THERE.search(question)
    if trailing and own and own[0][0] < trailing.start():
        spans.append(trailing.span("there"))
    for match in re.finditer(r"\bthat\b", question, re.IGNORECASE):
        if DEMONSTRATIVE.match(question, match.start()):  # "that library", "… avoid that?"
            continue
        before = re.findall(r"[\w']+", question[: match.start()].lower())
        if before and before[-1] not in BEFORE_DEMONSTRATIVE:
            spans.append(match.span())
    for match in re.finditer(rf"\b(?:{SUBJECT.replace('|there', '')}|{POSSESSIVE})\b", question, re.IGNORECASE):
        kind = PRONOUN_KIND[match.group(0).lower()]
        starts = [
            at + len(s) for at, s in own if at < match.start() and (kind != "person") == (not looks_like_person(s))
        ]
        if kind != "person":
            starts += [m.end() for m in INDEFINITE.finditer(question, 0, match.start())]
        if any(CLAUSE.search(question, end, match.start()) for end in starts):
            spans.append(match.span())
    return sorted(set(spans))


def _word_span(match: re.Match, word: str) -> tuple[int, int]:
    at = match.group(0).lower().index(word)
    return match.start() + at, match.start() + at + len(word)


def shielded(question: str) -> tuple[str, list[str]]:
    """`question` with the words that refer inside it replaced by NUL placeholders, and those words."""
    if "\0" in question:
        return question, []
    kept: list[str] = []
    parts, at = [], 0
    for start, end in _inside(question):
        parts.append(question[at:start] + f"\0{len(kept)}\0")
        kept.append(question[start:end])
        at = end
    return "".join(parts) + question[at:], kept


def unshield(text: str, kept: list[str]) -> str:
    if not kept:
        return text
    return re.sub(r"\0(\d+)\0", lambda m: kept[int(m.group(1))], text)
