"""Query rewriting for web search: at most three keywords, parsed robustly.

A 135M-parameter model often answers the few-shot prompt with extra lines, a repeated
"question:", quotes or a whole sentence. We keep the first usable `query:` line, validate it
into `SearchQuery`, and when nothing usable remains, fall back to keywords taken from the
question itself (deterministic: proper-noun runs first, then content words).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field, field_validator

MAX_KEYWORDS = 3
MAX_KEYWORD_WORDS = 6  # the paper's longest example keyword has 6 words; longer ones are sentences
STOPWORDS = frozenset(
    "a an the of in on at to for from by with about as into over after before between is are was were be been "
    "being do does did what which who whom whose when where why how that this these those it its and or but "
    "not no yes there their they he she his her him them you your i me my we our us".split()
)


class SearchQuery(BaseModel):
    keywords: list[str] = Field(min_length=1, max_length=MAX_KEYWORDS)

    @field_validator("keywords")
    @classmethod
    def _usable(cls, keywords: list[str]) -> list[str]:
        for keyword in keywords:
            if not re.search(r"\w", keyword) or len(keyword.split()) > MAX_KEYWORD_WORDS:
                raise ValueError(f"not a keyword: {keyword!r}")
        return keywords

    @property
    def text(self) -> str:
        return ", ".join(self.keywords)


# a run of capitalised words, allowing the lower-case particles of names ("Duke of York", "Ludwig van Beethoven")
NAME_RUN = re.compile(r"[A-Z][\w'’.-]*(?:\s+(?:(?:of|de|da|del|von|van|the|la|le)\s+)?[A-Z][\w'’.-]*)*")


def content_words(text: str) -> set[str]:
    """Lower-cased words of `text` that carry meaning (no stop words or pronouns)."""
    return {w.lower() for w in re.findall(r"\w+", text)} - STOPWORDS


def names(text: str) -> list[str]:
    """Runs of capitalised words, without a capitalised question word in front or a possessive 's
    behind: "What is Anna Berg's occupation?" → ["Anna Berg"]."""
    found = []
    for match in NAME_RUN.finditer(text):
        words = match.group(0).split()
        while words and words[0].lower() in STOPWORDS:
            words = words[1:]
        if words:
            found.append(re.sub(r"['’]s$", "", " ".join(words).rstrip("?.!,")))
    return found


def parse_query(output: str, question: str | None = None) -> SearchQuery | None:
    """The model's keywords, or None when its output is unusable.

    With `question`, keywords that share no content word with it are dropped: the rewrite
    extracts keywords from the question, so a reply like "The answer to the question is" is
    the model talking, not a query. And when the question names someone or something (a run of
    capitalised words), the query must keep that name: "Henry Feilden, occupation" for a
    question about someone else is the prompt's example leaking, not a rewrite.
    """
    for line in output.splitlines():
        line = line.strip()
        if not line or line.lower().startswith("question:"):
            continue
        line = re.sub(r"^(query|keywords?)\s*:\s*", "", line, flags=re.IGNORECASE)
        parts = [p.strip(" \t\"'`.;:()[]") for p in line.split(",")]
        parts = [p for p in parts if p]
        if question is not None:
            asked = content_words(question)
            parts = [p for p in parts if content_words(p) & asked]
        seen: list[str] = []
        for part in parts:
            if part.lower() not in (s.lower() for s in seen):
                seen.append(part)
        if question is not None and not _keeps_a_name(seen[:MAX_KEYWORDS], question):
            return None
        try:
            return SearchQuery(keywords=seen[:MAX_KEYWORDS])
        except ValueError:
            return None
    return None


def _keeps_a_name(keywords: list[str], question: str) -> bool:
    name_words = {w for name in names(question) for w in content_words(name)}
    if not name_words:
        return True
    keyword_words = {re.sub(r"['’]s$", "", w).lower() for k in keywords for w in re.findall(r"[\w'’-]+", k)}
    return bool(name_words & keyword_words)


def fallback_query(question: str) -> SearchQuery:
    """Keywords from the question alone: runs of capitalised words (names), then content words."""
    words = re.findall(r"[\w'’-]+", question)
    keywords: list[str] = []
    run: list[str] = []
    for i, word in enumerate(words + [""]):
        if word[:1].isupper() and (i > 0 or word.lower() not in STOPWORDS):
            run.append(word)
            continue
        if run:
            keywords.append(" ".join(run))
            run = []
    content = [w for w in words if w.lower() not in STOPWORDS and not any(w in k.split() for k in keywords)]
    keywords = [re.sub(r"['’]s$", "", k) for k in keywords + content]
    keywords = [k for k in dict.fromkeys(keywords) if k][:MAX_KEYWORDS]
    if keywords:
        return SearchQuery(keywords=keywords)
    # nothing word-like (e.g. "???"): search for the question as written rather than for nothing
    return SearchQuery.model_construct(keywords=[" ".join(question.split()[:MAX_KEYWORD_WORDS]) or question])
