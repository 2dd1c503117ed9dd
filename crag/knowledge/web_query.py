"""Query rewriting for web search: at most three keywords, parsed robustly.
A small model's rewrite that loses one of the question's subjects or brings in a name of its own is
rejected for the question's own keywords (`fallback_query`)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from crag.english import NAME_RUN, RARE_ZIPF, SENTENCE_WORD_ZIPF, STOPWORDS, zipf

# the question's own keywords, the chat model's few-shot rewrite (the paper's), or the question as asked
Rewrite = Literal["keywords", "model", "off"]

MAX_KEYWORDS = 3
MAX_KEYWORD_WORDS = 6  # the paper's longest example keyword has 6 words; longer ones are sentences


def usable(keyword: str) -> bool:
    return bool(re.search(r"\w", keyword)) and len(keyword.split()) <= MAX_KEYWORD_WORDS


class SearchQuery(BaseModel):
    keywords: list[str] = Field(min_length=1, max_length=MAX_KEYWORDS)

    @field_validator("keywords")
    @classmethod
    def _usable(cls, keywords: list[str]) -> list[str]:
        for keyword in keywords:
            if not usable(keyword):
                raise ValueError(f"not a keyword: {keyword!r}")
        return keywords

    @property
    def text(self) -> str:
        return ", ".join(self.keywords)


def content_words(text: str) -> set[str]:
    """Lower-cased words of `text` without stop words."""
    return {w.lower() for w in re.findall(r"\w+", text)} - STOPWORDS


def names(text: str) -> list[str]:
    """Runs of capitalised words: "What is Anna Berg's occupation?" → ["Anna Berg"]. Mid-sentence,
    capitalised function words are part of a name ("When did The Who form?")."""
    found = []
    for match in NAME_RUN.finditer(text):
        words = match.group(0).split()
        sentence_start = not text[: match.start()].strip() or text[: match.start()].rstrip()[-1] in ".!?:\n"
        while words and words[0].lower() in STOPWORDS and (sentence_start or words[0] == "I"):
            words = words[1:]
        if words:
            found.append(re.sub(r"['’]s$", "", " ".join(words).rstrip("?.!,")))
    return found


# a quoted term: "…", “…”, `…`, or '…' not inside a word (so "Berg's" is no quote)
QUOTED = re.compile(r'"([^"]+)"|“([^”]+)”|`([^`]+)`|(?<!\w)\'([^\']+)\'(?!\w)')
# code and file names: json.dumps, --max-count, pyproject.toml, __init__, get(), v2.1
CODE = re.compile(
    r"(?<![\w.-])(?=[\w.-]*[A-Za-z])(?:--?|__)?\w+(?:(?:[._/-]|::)\w+)*(?:__|\(\))?(?=[\s,;:?!)]|\.?$|\.\s)"
)


def subjects(question: str) -> list[str]:
    """What the question is about, each once: quoted terms, names, code ("json.dumps") and rare words."""
    found: list[tuple[int, str]] = []
    for match in QUOTED.finditer(question):
        found.append((match.start(), next(g for g in match.groups() if g).strip()))
    unquoted = QUOTED.sub(lambda m: " " * len(m.group(0)), question)
    for name in names(unquoted):
        at = unquoted.find(name)
        # a capitalised first word is a name only when it is not an everyday word ("Explain", "List")
        if at >= 0 and not (" " not in name and not unquoted[:at].strip() and zipf(name.lower()) >= SENTENCE_WORD_ZIPF):
            found.append((at, name))
    for match in CODE.finditer(unquoted):
        token = match.group(0)
        if (re.search(r"[._/()-]|::", token) and not token.endswith("'s")) or (
            token.isalpha()
            and token.islower()
            and token not in STOPWORDS
            and len(token) > 2
            and zipf(token) < RARE_ZIPF
        ):
            found.append((match.start(), token))
    result: list[str] = []
    for _, term in sorted(found):
        low = term.lower()
        if term and not any(low in r.lower() for r in result):  # "json" inside "json.dumps" is one subject
            result = [r for r in result if r.lower() not in low] + [term]
    return result


def _mentions(term: str, text: str) -> bool:
    if term.lower() in text.lower():
        return True
    return bool(content_words(term) & content_words(text)) and bool(names(term))


def parse_query(output: str, question: str | None = None) -> SearchQuery | None:
    """The model's keywords, or None when unusable: with `question`, the query must keep its `subjects` and
    bring in no name or number it lacks (the model answering, or the prompt's example leaking)."""
    for line in output.splitlines():
        line = line.strip()
        if not line or line.lower().startswith("question:"):
            continue
        line = re.sub(r"^(query|keywords?)\s*:\s*", "", line, flags=re.IGNORECASE)
        parts = [p.strip(" \t\"'`.;:()[]") for p in line.split(",")]
        parts = [p for p in parts if p]
        if question is not None:
            if _answers(", ".join(parts), question):
                return None
            asked = content_words(question)
            parts = [p for p in parts if content_words(p) & asked]
        seen: list[str] = []
        for part in parts:
            if part.lower() not in (s.lower() for s in seen):
                seen.append(part)
        if question is not None and not _faithful(", ".join(seen[:MAX_KEYWORDS]), question):
            return None
        try:
            return SearchQuery(keywords=seen[:MAX_KEYWORDS])
        except ValueError:
            return None
    return None


def _faithful(query: str, question: str) -> bool:
    return all(_mentions(term, query) for term in subjects(question)[:MAX_KEYWORDS])


def _answers(reply: str, question: str) -> bool:
    """The reply brings in a name or a number the question lacks: the model answering, not a rewrite."""
    asked = content_words(question)
    numbers = set(re.findall(r"\d+", reply)) - set(re.findall(r"\d+", question))
    return bool(numbers) or any(not content_words(n) & asked for n in names(reply))


def fallback_query(question: str) -> SearchQuery:
    """Keywords from the question alone: its subjects, then its other content words, the rarest first."""
    keywords = subjects(question)
    covered = {w for k in keywords for w in content_words(k)}
    words = [re.sub(r"['’]s$", "", w) for w in re.findall(r"\w[\w'’-]*\w|\w", question)]
    content = [w for w in dict.fromkeys(words) if w and w.lower() not in STOPWORDS and w.lower() not in covered]
    content.sort(key=lambda w: zipf(w.lower()))  # stable: equally common words keep question order
    # a subject may be no keyword: "`:`" quotes a colon
    keywords = [k for k in dict.fromkeys(keywords + content) if usable(k)][:MAX_KEYWORDS]
    if keywords:
        return SearchQuery(keywords=keywords)
    # nothing word-like (e.g. "???"): search for the question as written rather than for nothing
    return SearchQuery.model_construct(keywords=[" ".join(question.split()[:MAX_KEYWORD_WORDS]) or question])


__all__ = ["STOPWORDS", "content_words", "zipf"]  # what callers outside the package use
