"""The knowledge base searched again (`Context.requery`): what to search with, and which documents to keep.
The web is often off or knows nothing of the user's product; a second way into the collection may find it."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from crag.text import folded

MAX_QUERY_CHARS = 600  # a hypothetical passage is a few sentences; more is the model running on


def query_text(reply: str, question: str) -> str | None:
    """The reply's first paragraph without quotes or a "Query:" label; None when empty or the question again."""
    text = reply.strip().split("\n\n")[0].strip()
    for label in ("query:", "search query:", "passage:"):
        if text.lower().startswith(label):
            text = text[len(label) :].strip()
    text = text.strip("\"'`").strip()[:MAX_QUERY_CHARS]
    if not text or folded(text).rstrip("?.") == folded(question).rstrip("?."):
        return None
    return text


def merge_graded(
    first: Sequence[Document],
    first_scores: Sequence[float],
    second: Sequence[Document],
    second_scores: Sequence[float],
    k: int,
) -> tuple[list[Document], list[float]]:
    """The `k` best-graded documents of both searches, each text once, in the order found: the second
    search can only add what the grade ranks above the first's."""
    seen: set[str] = set()
    found = []
    for document, score in [*zip(first, first_scores), *zip(second, second_scores)]:
        if document.page_content not in seen:
            seen.add(document.page_content)
            found.append((document, score))
    keep = set(sorted(range(len(found)), key=lambda i: (-found[i][1], i))[:k])
    return [found[i][0] for i in sorted(keep)], [found[i][1] for i in sorted(keep)]
