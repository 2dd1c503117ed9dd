"""Knowledge by a budget (`Context.knowledge_tokens`): the kept strips first, then whole retrieved documents, best
rank first, while the budget lasts; a document taken whole replaces its strips. A reader of long texts would
otherwise lose the answers refinement's fixed cut removes when the evaluator ranks the answering strip low."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from crag.passages import source_of, title_of
from crag.records import Strip
from crag.text import count_tokens


def whole(document: Document, d: int, score: float, lifted: bool, origin: str = "internal") -> Strip:
    """Document `d` (retrieved, or a web result's page) as one strip, judged by its grade."""
    text = document.page_content
    return Strip(
        text=text,  # as RAG gives it: the layout of a listing or an option table is part of its sense
        score=score,
        selection_score=score,
        lifted=lifted,
        title=title_of(document),
        source=source_of(document),
        origin=origin,  # type: ignore[typeddict-item]
        doc=d,
        start=0,
        end=len(text),
    )


def fill(
    strips: Sequence[Strip],
    documents: Sequence[Document],
    scores: Sequence[float],
    budget: int,
    *,
    rejected: Sequence[bool] | None = None,
) -> tuple[list[Strip], set[int]]:
    """(knowledge, documents given whole): `strips` (internal, kept by refinement) and, in retrieval order, every
    document whose whole text still fits in `budget` tokens beside what is already given; a document taken whole
    replaces its own strips. Strips come back in document order."""
    given = {s["doc"]: 0 for s in strips}
    for s in strips:
        given[s["doc"]] += count_tokens(s["text"])
    used = sum(given.values())
    taken: set[int] = set()
    for d, document in enumerate(documents):
        cost = count_tokens(document.page_content) - given.get(d, 0)
        if used + cost <= budget:
            taken.add(d)
            used += cost
    kept = [s for s in strips if s["doc"] not in taken]
    graded = list(scores) if len(scores) == len(documents) else [0.0] * len(documents)
    kept += [whole(documents[d], d, graded[d], not (rejected and rejected[d])) for d in taken]
    return sorted(kept, key=lambda s: (s["doc"], s["start"])), taken
