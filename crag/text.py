"""Words as CRAG compares them: lower-cased, Snowball-stemmed, without stopwords and question words."""

from __future__ import annotations

import re
from functools import lru_cache

from crag.english import CONTRACTIONS, QUESTION_WORDS, STEMMER

_WORD = re.compile(r"\w+")
_TOKEN = re.compile(r"\w+|[^\w\s]")


def folded(text: str) -> str:
    """`text` casefolded with whitespace runs as one space: compared "case and spacing aside"."""
    return " ".join(text.casefold().split())


@lru_cache(maxsize=1)
def _analyzer():
    import Stemmer
    from bm25s.stopwords import STOPWORDS_EN  # the English list (`crag.english.LANGUAGE`)

    return Stemmer.Stemmer(STEMMER), frozenset(STOPWORDS_EN) | QUESTION_WORDS | CONTRACTIONS


def stopwords() -> frozenset[str]:
    """The words `terms` leaves out: bm25s' English stopwords, question words and `CONTRACTIONS`."""
    return _analyzer()[1]


def stem_words(words: list[str]) -> list[str]:
    """The Snowball stems of `words` ("painted", "paints" → "paint")."""
    return _analyzer()[0].stemWords(words)


def terms(text: str) -> list[str]:
    """Lower-cased, stemmed words of `text` without stopwords and question words."""
    stop = _analyzer()[1]
    return stem_words([w for w in _WORD.findall(text.lower()) if w not in stop])


def terms_at(text: str) -> list[tuple[int, str]]:
    """`terms(text)` with where each word starts in `text` (a character offset)."""
    stop = _analyzer()[1]
    # each match lowered on its own: lowering the whole text can shift offsets ("İ" lowers to two)
    found = [(m.start(), w) for m in _WORD.finditer(text) if (w := m.group().lower()) not in stop]
    return list(zip((start for start, _ in found), stem_words([w for _, w in found])))


def count_tokens(text: str) -> int:
    """Words and punctuation marks: a model-independent measure of how much text a reader is given."""
    return len(_TOKEN.findall(text))


__all__ = ["folded", "terms"]  # what callers outside the package use
