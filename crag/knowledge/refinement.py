"""Decompose-then-recompose: passages cut into strips, scored in one evaluator call, the best kept in document order."""

from __future__ import annotations

import re
import threading
from bisect import bisect_right
from collections.abc import Callable, Sequence
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

# the Jaccard overlap of terms above which a strip repeats a better one (documentation repeats itself)
NEAR_DUPLICATE = 0.8

Embed = Callable[[list[str]], Sequence[Sequence[float]]]


_THREAD = threading.local()


def _segmenter() -> pysbd.Segmenter:
    """This thread's sentence segmenter: pysbd keeps the text it is splitting on the segmenter itself, so one
    shared by threads (parallel branches, a server's requests) returns another's sentences, or none."""
    segmenter = getattr(_THREAD, "segmenter", None)
    if segmenter is None:
        segmenter = _THREAD.segmenter = pysbd.Segmenter(language=LANGUAGE, clean=False)
    return segmenter


def sentence_spans(text: str) -> list[tuple[str, int, int]]:
    """The sentences of `text` (whitespace collapsed) with their character spans in `text`."""
    return decompose_spans(text, "sentences")


def decompose(text: str, mode: Mode) -> list[str]:
    """Split one document into strips by the paper's three modes."""
    return [strip for strip, _, _ in decompose_spans(text, mode)]


def decompose_spans(text: str, mode: Mode | Literal["sentences"]) -> list[tuple[str, int, int]]:
    """`decompose` with each strip's (start, end) in `text`; a strip the segmenter altered beyond finding
    gets the span of everything after the previous one."""
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
    """pysbd's sentences, glued back where it cut inside a word ("~/.bashrc"): a sentence ends at a space."""
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
    rows = np.asarray(vectors, dtype=float)
    query = np.asarray(question_vector, dtype=float)
    norms = np.linalg.norm(rows, axis=1) * (np.linalg.norm(query) or 1.0)
    return (rows @ query / np.where(norms > 0, norms, 1.0)).tolist()


def set_adjusted(scores: Sequence[float], standings: Sequence[float], weight: float) -> list[float]:
    """The evaluator's scores with `weight` × each strip's standing added to their logits: the evaluator
    scores all strips of a manual page alike, and the one that answers stands above its neighbours."""
    inside = lambda s: min(max(s, -1.0 + 1e-6), 1.0 - 1e-6)  # noqa: E731 - ±1 has no logit
    return [score_of(logit_of(inside(s)) + weight * z) for s, z in zip(scores, standings)]


def ranks_in_set(count: int, weight: float) -> bool:
    return bool(weight) and count >= MIN_SET


def set_selection(scores: Sequence[float], similarities: Sequence[float], weight: float) -> list[float]:
    """`set_adjusted` by the standings of the cosines with the question, else the evaluator's `scores`."""
    if not ranks_in_set(len(scores), weight):
        return list(scores)
    return set_adjusted(scores, standings_of(similarities), weight)


def selection_scores(
    question: str, texts: Sequence[str], scores: Sequence[float], embed: Embed | None, weight: float
) -> list[float]:
    """What refinement ranks the titled strips `texts` by: `set_selection`, embedding them in one call."""
    if embed is None or not ranks_in_set(len(texts), weight):
        return list(scores)
    vectors = embed([question, *texts])
    return set_selection(scores, cosines(vectors[0], vectors[1:]), weight)


def gate_score(lifted: bool, score: float, selection: float) -> float:
    """The score a strip is thresholded by: the standing says which strip answers, not whether any does, so
    only `lifted` strips (of retrieved documents not rejected) are judged by it."""
    return selection if lifted else score


def judged(strip: Strip) -> float:
    return gate_score(strip.get("lifted", strip["origin"] == "internal"), strip["score"], strip["selection_score"])


def wording(text: str) -> tuple[set[str], str]:
    return set(terms(text)), folded(text)


def repeats(a: tuple[set[str], str], b: tuple[set[str], str]) -> bool:
    """Whether two strips' `wording` says the same: `NEAR_DUPLICATE` of terms shared, else equal texts."""
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
    """The kept strips of `refine_pages`."""
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
    """The top `top_k` distinct strips whose `gate_score` is at least `threshold`, in document order, and the
    next `further` of the ranking. `keep_best` keeps the best strip whatever its score (scored without its
    document, it often falls short); `embed` ranks by `set_adjusted` scores; `rejected[d]`: passage d rejected."""
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

    def as_strip(i: int) -> Strip:
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

    return [as_strip(i) for i in kept], [as_strip(i) for i in unread]


__all__ = ["sentence_spans", "set_selection"]  # what callers outside the package use
