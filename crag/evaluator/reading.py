"""What the model reads of a passage longer than it can read: its first `HEAD_TOKENS` tokens, " … ", and the
stretch that holds the most of the question's terms, rather than the start alone, which misses answers
further on. Hand-written: no library picks a window by term overlap for a cross-encoder."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from crag.text import terms, terms_at

HEAD_TOKENS = 16  # the passage's start read always: a title, a man page's name line
STRIDE_SHARE = 4  # stretches start every quarter of a stretch apart
JOIN = " … "  # between the start and the stretch: the model sees that text was left out
K1 = 1.2  # BM25's term-frequency saturation (Robertson's value)
SPECIAL_TOKENS = 3  # [CLS] question [SEP] passage [SEP]


def readings(tokenizer, max_length: int, pairs: Sequence[tuple[str, str]], idf=None) -> list[tuple[str, str]]:
    """`pairs` with each passage as the model reads it within `max_length` tokens, tokenized in one call;
    `idf(term)` weighs the question's terms. A slow tokenizer (no character offsets) reads every passage from
    its start."""
    if not getattr(tokenizer, "is_fast", False):
        return list(pairs)
    join = len(tokenizer(JOIN, add_special_tokens=False)["input_ids"])
    questions = {}
    for question in dict.fromkeys(q for q, _ in pairs):
        wanted = list(dict.fromkeys(terms(question)))
        budget = max_length - SPECIAL_TOKENS - len(tokenizer(question, add_special_tokens=False)["input_ids"])
        questions[question] = ({t: (idf(t) if idf else 1.0) for t in wanted}, budget)
    # a token covers at least one character: a passage no longer than the budget fits
    long = [i for i, (q, p) in enumerate(pairs) if questions[q][0] and len(p) > questions[q][1]]
    out = list(pairs)
    if not long:
        return out
    found = tokenizer([pairs[i][1] for i in long], add_special_tokens=False, return_offsets_mapping=True)
    for i, offsets in zip(long, found["offset_mapping"]):
        question, passage = pairs[i]
        weights, budget = questions[question]
        out[i] = (question, _read(passage, offsets, weights, budget, join))
    return out


def _read(passage: str, offsets: Sequence[tuple[int, int]], weights: dict[str, float], budget: int, join: int) -> str:
    head = min(HEAD_TOKENS, budget // 2)
    span = budget - head - join
    if len(offsets) <= budget or head < 1 or span < 1:
        return passage
    where = [(start, term) for start, term in terms_at(passage) if term in weights]
    head_end = offsets[head - 1][1]

    def worth(first: int, end: int) -> float:
        """BM25's weight (no length norm) of the question's terms in the head and tokens first..end."""
        lo, hi = offsets[first][0], offsets[end - 1][1]
        counts = Counter(term for start, term in where if start < head_end or lo <= start < hi)
        return sum(weights[t] * n * (K1 + 1) / (n + K1) for t, n in counts.items())

    step, last = max(1, span // STRIDE_SHARE), len(offsets) - span  # last > head: the passage is longer than budget
    best, best_start = worth(head, head + span), head  # from the start: the passage read as before
    for start in [*range(head + step, last, step), last]:
        value = worth(start, start + span)
        if value > best:  # a tie keeps the earlier stretch
            best, best_start = value, start
    if best_start == head:
        return passage
    return passage[:head_end] + JOIN + passage[offsets[best_start][0] : offsets[best_start + span - 1][1]]
