"""Whether a sentence the reader quotes as evidence is word for word in its document: the same characters,
runs of whitespace aside, starting and ending at word boundaries. Nothing is matched loosely: an altered
word, a fixed typo or a cut word makes the quote fail, so what is cited is what the document says."""

from __future__ import annotations


def _collapsed(text: str) -> tuple[str, list[int]]:
    """`text` with each run of whitespace as one space and its ends trimmed, and where each of its
    characters is in `text`."""
    chars: list[str] = []
    where: list[int] = []
    for i, char in enumerate(text):
        if char.isspace():
            if chars and chars[-1] != " ":
                chars.append(" ")
                where.append(i)
        else:
            chars.append(char)
            where.append(i)
    if chars and chars[-1] == " ":
        chars.pop()
        where.pop()
    return "".join(chars), where


def _boundary(text: str, i: int) -> bool:
    """Whether position `i` of `text` is outside any word: no letter or digit just before or just after it."""
    return i < 0 or i >= len(text) or not text[i].isalnum()


def verbatim_span(sentence: str, text: str) -> tuple[int, int] | None:
    """The (start, end) of `sentence` in `text` when `text` says it word for word (whitespace aside), its
    first and last words whole; the first such place. None when it is nowhere, or `sentence` is blank."""
    quote = " ".join(sentence.split())
    if not quote:
        return None
    collapsed, where = _collapsed(text)
    at = collapsed.find(quote)
    while at >= 0:
        end = at + len(quote)
        whole = (_boundary(collapsed, at - 1) or not quote[0].isalnum()) and (
            _boundary(collapsed, end) or not quote[-1].isalnum()
        )
        if whole:
            return where[at], where[end - 1] + 1
        at = collapsed.find(quote, at + 1)
    return None


__all__ = ["verbatim_span"]  # what callers outside the package use
