"""The questions a chat model writes for a passage, in the styles users type them; "keywords", "lower" and
"typo" are derived without the model (`with_derived`), as a small model asked for them writes another full
question instead."""

from __future__ import annotations

import re

from crag.english import HOW_DO_I, QUESTION_WORDS, REPLY_LABEL
from crag.text import stopwords

STYLES = ("how-to", "detail", "casual")
MIN_WORDS = 40  # a passage shorter than this answers too little to ask about

QUESTION_PROMPT = """Here is a passage from "{title}":

{text}

Write three questions that this passage answers, as its users would ask them:
1. a task question beginning "How do I"
2. a question about one specific detail the passage states (an option, a value, a name, a behaviour)
3. a short casual question typed quickly into a chat
The passage itself must answer each question. Reply with the three numbered lines only."""


_NUMBERED = re.compile(r"^\s*(\d)[.)]\s*(.+?)\s*$")


def parse_questions(reply: str) -> dict[str, str]:
    """The model's numbered lines as {style: question}."""
    found: dict[str, str] = {}
    for line in reply.splitlines():
        match = _NUMBERED.match(line)
        if not match:
            continue
        index = int(match.group(1)) - 1
        text = REPLY_LABEL.sub("", match.group(2)).strip().strip('"').strip("*").strip()
        if 0 <= index < len(STYLES) and STYLES[index] not in found and len(text.split()) >= 2:
            found[STYLES[index]] = text
    return found


def lower_style(question: str) -> str:
    """The task question without capitals or a question mark: "how to use tar with gzip"."""
    text = question.lower().rstrip("?").rstrip()
    return HOW_DO_I.sub("how to ", text)


def keywords_style(question: str) -> str | None:
    """The detail question's content words in order, as typed into a search box; None if fewer than two."""
    drop = stopwords() | QUESTION_WORDS
    words = [w for w in re.findall(r"[\w./-]+", question.lower()) if w.strip("./-") and w not in drop]
    return " ".join(words) if len(words) >= 2 else None


def typo_style(question: str) -> str | None:
    """One adjacent-letter swap in the question's longest word, None if it has none."""
    words = question.split()
    candidates = [w for w in words if w.isalpha() and len(w) >= 6]
    if not candidates:
        return None
    word = max(candidates, key=len)
    i = len(word) // 2
    swapped = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if swapped == word:
        return None
    return question.replace(word, swapped, 1)


def with_derived(questions: dict[str, str]) -> dict[str, str]:
    out = dict(questions)
    if "how-to" in questions:
        out["lower"] = lower_style(questions["how-to"])
    if "detail" in questions:
        if made := keywords_style(questions["detail"]):
            out["keywords"] = made
        if typo := typo_style(questions["detail"]):
            out["typo"] = typo
    return out


__all__ = ["MIN_WORDS", "QUESTION_PROMPT", "parse_questions", "with_derived"]  # what callers outside the package use
