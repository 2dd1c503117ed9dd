"""Follow-up questions on a thread: detect them and make them self-contained.

CRAG retrieves and grades with the question alone, so "When was she born?" must become "When was
Ada Lovelace born?" before retrieval. Only questions that refer back (a pronoun, "there", "and …?")
are rewritten: a self-contained question goes through untouched. Rules come first, because they are
instant and SmolLM2-135M's rewrites are mostly unusable: "and X?" repeats the previous question
about X, and pronouns become the previous question's entity. When the rules find nothing to
substitute, the chat model is asked, and its rewrite is kept only if it no longer refers back and
keeps the follow-up's own words; failing that, the previous question is appended, which still
tells retrieval and the evaluator what the follow-up is about.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crag.rewrite import content_words, names
from crag.state import Turn

SUBJECT = r"he|she|it|they|him|them|there"
POSSESSIVE = r"his|her|hers|its|their|theirs"
REFERS_BACK = re.compile(
    rf"\b({SUBJECT}|{POSSESSIVE}|this|that|these|those|then|the same|the former|the latter)\b"
    r"|^\s*(and|what about|how about)\b",
    re.IGNORECASE,
)
ELLIPSIS = re.compile(r"^\s*(and|what about|how about)\s+(?P<entity>.+?)\s*\??\s*$", re.IGNORECASE)
HISTORY_TURNS = 3  # turns shown to the rewriter
ANSWER_CHARS = 200


def refers_back(question: str) -> bool:
    return bool(REFERS_BACK.search(question))


def format_history(history: Sequence[Turn]) -> str:
    lines = []
    for turn in list(history)[-HISTORY_TURNS:]:
        answer = re.sub(r"\s*\[\d+\]", "", turn["answer"])[:ANSWER_CHARS]
        lines.append(f"Q: {turn['question']}\nA: {answer}")
    return "\n".join(lines)


def parse_condensed(reply: str, question: str) -> str | None:
    """The model's rewrite when it is usable: one line that no longer refers back and keeps at
    least half of the follow-up's own words; None otherwise."""
    line = next((ln.strip() for ln in reply.splitlines() if ln.strip()), "")
    line = re.sub(r"^(rewritten( question)?|question|q)\s*:\s*", "", line, flags=re.IGNORECASE).strip().strip('"\'“”')
    if len(line) < 3 or len(line) > 3 * len(question) + 100 or refers_back(line):
        return None
    own = content_words(question)
    if own and len(own & content_words(line)) < len(own) / 2:
        return None
    return line


def main_entity(text: str) -> str | None:
    """The longest name in `text` ("Ada Lovelace")."""
    found = names(text)
    return max(found, key=len) if found else None


def resolve(question: str, history: Sequence[Turn]) -> str | None:
    """The rule-based rewrite, or None when the rules find nothing to substitute."""
    if not history:
        return None
    previous = history[-1]["question"]
    entity = main_entity(previous)
    ellipsis = ELLIPSIS.match(question)
    if ellipsis and entity and entity in previous:
        return previous.replace(entity, ellipsis.group("entity").strip())
    if entity and re.search(rf"\b({SUBJECT}|{POSSESSIVE})\b", question, re.IGNORECASE):
        text = re.sub(rf"\b({POSSESSIVE})\b(?=\s+[A-Za-z])", f"{entity}'s", question, flags=re.IGNORECASE)
        text = re.sub(r"\bthere\b", f"in {entity}", text, flags=re.IGNORECASE)
        text = re.sub(rf"\b({SUBJECT}|{POSSESSIVE})\b", entity, text, flags=re.IGNORECASE)
        if not refers_back(text):
            return text
    return None


def append_previous(question: str, history: Sequence[Turn]) -> str:
    return f"{question} ({history[-1]['question']})" if history else question
