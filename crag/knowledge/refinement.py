"""Decompose-then-recompose: cut documents into knowledge strips, score every strip with the
evaluator in one batched call, keep the best few and put them back in document order.

Documents are passages (`crag.passages`): retrieved chunks and fetched web paragraphs alike,
so the internal and the external route refine with the same code."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import pysbd
from langchain_core.documents import Document

from crag.english import LANGUAGE
from crag.passages import passage, source_of, title_of, titled_once
from crag.records import Strip
from crag.standing import MIN_SET, standings_of
from crag.text import folded, terms
from crag.thresholds import logit_of, score_of

Mode = Literal["fixed_num", "excerption", "selection"]
WINDOW_WORDS = 50  # `fixed_num`: the paper's 50-word windows
SENTENCES_PER_STRIP = 3  # `excerption`: the paper's sentences grouped by three
MIN_STRIP_WORDS = 4  # the paper scores shorter strips −1, i.e. never keeps them

# a strip whose terms are this much the same (Jaccard) as a better-ranked strip's says nothing new and would take
# a slot: documentation repeats itself (examples given twice, overlapping chunks)
NEAR_DUPLICATE = 0.8

Embed = Callable[[list[str]], Sequence[Sequence[float]]]


@lru_cache(maxsize=1)
def _segmenter():
    return pysbd.Segmenter(language=LANGUAGE, clean=False)


def sentence_spans(text: str) -> list[tuple[str, int, int]]:
    """The sentences of `text` (whitespace collapsed) with their character spans in `text`."""
    return decompose_spans(text, "sentences")


def decompose(text: str, mode: Mode) -> list[str]:
    """Split one document into strips by the paper's three modes (whitespace collapsed)."""
    return [strip for strip, _, _ in decompose_spans(text, mode)]


def decompose_spans(text: str, mode: Mode | Literal["sentences"]) -> list[tuple[str, int, int]]:
    """`decompose`, with each strip's character span (start, end) in the original `text`, so that a citation
    can point at the exact passage. A strip the segmenter altered beyond finding gets the span of everything
    after the previous one, which still contains it."""
    originals = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    starts, position = [], 0  # each word's offset in the collapsed text
    for a, b in originals:
        starts.append(position)
        position += b - a + 1
    collapsed = " ".join(text.split())
    spans, cursor = [], 0
    for strip in _decompose(text, mode):
        found = collapsed.find(strip, cursor)
        if found < 0:
            spans.append((strip, originals[bisect_right(starts, cursor) - 1][0] if originals else 0, len(text)))
            continue
        cursor = found + len(strip)
        first, last = bisect_right(starts, found) - 1, bisect_right(starts, cursor - 1) - 1
        start = originals[first][0] + (found - starts[first])
        end = originals[last][0] + (cursor - starts[last])
        spans.append((strip, start, end))
    return spans


def _decompose(text: str, mode: Mode | Literal["sentences"]) -> list[str]:
    text = " ".join(text.split())
    if not text:
        return []
    if mode == "selection":
        return [text]
    if mode == "fixed_num":
        words = text.split(" ")
        strips = [" ".join(words[i : i + WINDOW_WORDS]) for i in range(0, len(words), WINDOW_WORDS)]
        if len(strips) > 1 and len(strips[-1].split()) < 10:  # a short tail joins the previous window
            tail = strips.pop()
            strips[-1] = f"{strips[-1]} {tail}"
        return strips
    if mode in ("excerption", "sentences"):
        sentences = _sentences(text)
        if mode == "sentences":
            return sentences
        return [" ".join(sentences[i : i + SENTENCES_PER_STRIP]) for i in range(0, len(sentences), SENTENCES_PER_STRIP)]
    raise ValueError(f"unknown refinement mode {mode!r}: use fixed_num, excerption or selection")


def _sentences(text: str) -> list[str]:
    """pysbd's sentences of the whitespace-collapsed `text`, glued back where it cut inside a word (the dot of
    "`.npmrc`" or "~/.bashrc"): a sentence ends only where the text has a space."""
    sentences: list[str] = []
    end = -1  # where the previous piece ended in `text`; -1 when it could not be found
    for piece in _segmenter().segment(text):
        piece = " ".join(piece.split())
        if not piece:
            continue
        found = text.find(piece, max(end, 0))
        if sentences and found >= 0 and found == end:
            sentences[-1] += piece
        else:
            sentences.append(piece)
        end = found + len(piece) if found >= 0 else -1
    return sentences


def cosines(question_vector: Sequence[float], vectors: Sequence[Sequence[float]]) -> list[float]:
    """Each vector's cosine with the question's."""
    rows = np.asarray(vectors, dtype=float)
    query = np.asarray(question_vector, dtype=float)
    norms = np.linalg.norm(rows, axis=1) * (np.linalg.norm(query) or 1.0)
    return (rows @ query / np.where(norms > 0, norms, 1.0)).tolist()


def set_adjusted(scores: Sequence[float], standings: Sequence[float], weight: float) -> list[float]:
    """The evaluator's scores shifted by each strip's standing in its set, on the same [-1, 1] scale (scores
    are tanh(logit / 2); the standing is added to the logit). The evaluator reads each pair on its own and scores
    all strips of a manual page alike; the strip that answers is the one closer to the question than its neighbours."""
    inside = lambda s: min(max(s, -1.0 + 1e-6), 1.0 - 1e-6)  # noqa: E731 - ±1 has no logit
    return [score_of(logit_of(inside(s)) + weight * z) for s, z in zip(scores, standings)]


def ranks_in_set(count: int, weight: float) -> bool:
    """Whether a set of `count` passages is ranked by standing: a weight, and at least `MIN_SET`."""
    return bool(weight) and count >= MIN_SET


def set_selection(scores: Sequence[float], similarities: Sequence[float], weight: float) -> list[float]:
    """Selection scores from the passages' cosines with the question (`similarities`): `set_adjusted`
    when the set is ranked by standing (`ranks_in_set`), else the evaluator's `scores`."""
    if not ranks_in_set(len(scores), weight):
        return list(scores)
    return set_adjusted(scores, standings_of(similarities), weight)


def selection_scores(
    question: str, texts: Sequence[str], scores: Sequence[float], embed: Embed | None, weight: float
) -> list[float]:
    """What refinement ranks the strips `texts` (titled) by: `set_selection` with `embed` (one call for
    the question and every strip; none when the set is not ranked by standing)."""
    if embed is None or not ranks_in_set(len(texts), weight):
        return list(scores)
    vectors = embed([question, *texts])
    return set_selection(scores, cosines(vectors[0], vectors[1:]), weight)


def gate_score(lifted: bool, score: float, selection: float) -> float:
    """The score a strip must clear the strip threshold (and a quote the quote threshold) with. The standing
    tells which strip of a set answers, not whether any does: only strips of retrieved documents the grade did
    not reject are judged by it (`lifted`); web strips and those of rejected documents by their own score."""
    return selection if lifted else score


def judged(strip: Strip) -> float:
    """The `gate_score` a kept strip was judged by."""
    return gate_score(strip.get("lifted", strip["origin"] == "internal"), strip["score"], strip["selection_score"])


def wording(text: str) -> tuple[set[str], str]:
    """What `repeats` compares of a strip: its terms and its folded text."""
    return set(terms(text)), folded(text)


def repeats(a: tuple[set[str], str], b: tuple[set[str], str]) -> bool:
    """Whether two strips, as their `wording`, say the same: `NEAR_DUPLICATE` of their terms
    shared, or (with no terms to compare) the same text."""
    if not a[0] or not b[0]:
        return a[1] == b[1]
    return len(a[0] & b[0]) >= NEAR_DUPLICATE * len(a[0] | b[0])


def distinct(texts: Sequence[str], order: Sequence[int], limit: int) -> list[int]:
    """The first `limit` of `order` (indices into `texts`, best first) that `repeats` no better one."""
    seen: list[tuple[set[str], str]] = []
    found: list[int] = []
    for i in order:
        if len(found) == limit:
            break
        this = wording(texts[i])
        if not any(repeats(this, other) for other in seen):
            seen.append(this)
            found.append(i)
    return found


def refine(question: str, passages: Sequence[Document], evaluator: Any, **settings: Any) -> list[Strip]:
    """The kept strips of `refine_pages` (its signature and docstring say which), for a caller that reads
    no further."""
    return refine_pages(question, passages, evaluator, **settings)[0]


def refine_pages(
    question: str,
    passages: Sequence[Document],
    evaluator: Any,
    *,
    mode: Mode,
    top_k: int,
    threshold: float,
    origin: Literal["internal", "external"],
    keep_best: bool = False,
    embed: Embed | None = None,
    set_weight: float = 0.0,
    rejected: Sequence[bool] | None = None,
    further: int = 0,
) -> tuple[list[Strip], list[Strip]]:
    """The top `top_k` strips scoring at least `threshold`, none repeating a better one (`distinct`), in
    document order; with `keep_best`, the best strip even when it scores lower (for documents the grade judged
    relevant: a strip scored without the rest of its document often falls below the threshold).

    With `embed` (texts -> vectors) and at least `MIN_SET` strips, strips are ranked by `set_adjusted` scores
    and thresholded by their `gate_score`; each keeps the evaluator's `score` beside its `selection_score`.
    `rejected[d]`: the grade scored passage d below the lower threshold. `evaluator` is any Runnable taking
    {"question", "documents"} and returning one score per document; all strips go to it in one call.

    The second list is the next `further` strips of the same ranking, in document order and without the
    threshold (`Context.further_strips`).
    """
    candidates: list[tuple[int, int, str, int, int]] = []  # (document, position, strip, start, end)
    for d, document in enumerate(passages):
        for position, (strip, start, end) in enumerate(decompose_spans(document.page_content, mode)):
            if len(strip.split()) >= MIN_STRIP_WORDS:
                candidates.append((d, position, strip, start, end))
    if not candidates:
        return [], []
    # scored with the document's title, as the evaluator was trained: "He was born in …" says nothing of whom
    titles, sources = [title_of(p) for p in passages], [source_of(p) for p in passages]
    strips = [passage(strip, title=titles[d], source=sources[d]) for d, _, strip, _, _ in candidates]
    scores = [float(s) for s in evaluator.invoke({"question": question, "documents": strips})]
    texts = [titled_once(strip, titles[d]) for d, _, strip, _, _ in candidates]
    selection = selection_scores(question, texts, scores, embed, set_weight)
    lifted = [origin == "internal" and not (rejected is not None and rejected[d]) for d, *_ in candidates]
    gate = [gate_score(up, s, g) for up, s, g in zip(lifted, scores, selection)]
    best_first = sorted(range(len(candidates)), key=lambda i: selection[i], reverse=True)
    ranked = distinct([strip for _, _, strip, _, _ in candidates], best_first, top_k + further)
    kept = sorted(
        (i for n, i in enumerate(ranked[:top_k]) if gate[i] >= threshold or (keep_best and n == 0)),
        key=lambda i: candidates[i][:2],
    )
    unread = sorted(ranked[top_k:], key=lambda i: candidates[i][:2])

    def strip(i: int) -> Strip:
        return Strip(
            text=candidates[i][2],
            score=scores[i],
            selection_score=selection[i],
            title=titles[candidates[i][0]],
            source=sources[candidates[i][0]],
            origin=origin,
            lifted=lifted[i],
            doc=candidates[i][0],
            start=candidates[i][3],
            end=candidates[i][4],
        )

    return [strip(i) for i in kept], [strip(i) for i in unread]


__all__ = ["sentence_spans", "set_selection"]  # what callers outside the package use
