"""Self-supervised training pairs from a user's own collection, for `crag evaluator adapt`.
Queries are Markdown headings (removed from their section) and cut-out sentences (inverse cloze, Lee et al.
2019); negatives are the chunks nearest the query, from other documents and its own, plus a random one."""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pysbd

from crag.english import LANGUAGE
from crag.evaluator.pairs import Pair, clean

HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
MIN_QUERY_WORDS = 3  # a shorter sentence says too little to ask for a passage
MAX_QUERY_WORDS = 30  # a longer one is a paragraph
MIN_HEADING_WORDS = 2  # "Retrying exceptions" is a real query; "Usage" is not
MIN_REST_WORDS = 20  # what is left of a chunk must still be a passage
RETRIEVED_DEPTH = 10  # a retrieved set: the query's own chunk and the retriever's nine nearest others


@dataclass(frozen=True)
class CollectionChunk:
    """One stored chunk: text, title, source document and its stored embedding."""

    text: str
    title: str
    source: str
    vector: Sequence[float]


def collection_chunks(store) -> list[CollectionChunk]:
    """Every chunk of a LangChain Chroma store, with its stored embedding."""
    got = store.get(include=["documents", "metadatas", "embeddings"])
    return [
        CollectionChunk(text or "", str((meta or {}).get("title") or ""), str((meta or {}).get("source") or ""), vector)
        for text, meta, vector in zip(got["documents"], got["metadatas"], got["embeddings"])
    ]


def _words(text: str) -> int:
    return len(text.split())


def heading_queries(chunk: CollectionChunk) -> list[tuple[str, str]]:
    """(heading, the chunk without that heading line) for each usable Markdown heading in the chunk."""
    found = []
    for match in HEADING.finditer(chunk.text):
        heading = clean(match.group(1).strip("*_` "))
        rest = clean(chunk.text[: match.start()] + " " + chunk.text[match.end() :])
        if MIN_HEADING_WORDS <= _words(heading) <= MAX_QUERY_WORDS and _words(rest) >= MIN_REST_WORDS:
            found.append((heading, rest))
    return found


def cloze_query(
    chunk: CollectionChunk, segment: Callable[[str], list[str]], rng: random.Random
) -> tuple[str, str] | None:
    """(a sentence of the chunk, the chunk without it), or None when no sentence fits."""
    sentences = [
        s.strip()
        for s in segment(chunk.text)
        if MIN_QUERY_WORDS <= _words(s) <= MAX_QUERY_WORDS and not HEADING.fullmatch(s.strip())
    ]
    if not sentences:
        return None
    sentence = rng.choice(sentences)
    rest = clean(chunk.text.replace(sentence, " ", 1))
    return (clean(sentence), rest) if _words(rest) >= MIN_REST_WORDS else None


def _segmenter() -> Callable[[str], list[str]]:
    return pysbd.Segmenter(language=LANGUAGE, clean=False).segment


def held_apart_split(keys: Iterable[str], held_apart: float) -> dict[str, str]:
    """Where each key's pairs go: "check" and "calibrate" for half of a `held_apart` share each (at least
    one key), else "train"; keys are ranked by a hash, so the choice is stable."""
    ranked = sorted(set(keys), key=lambda k: hashlib.sha256(k.encode("utf-8", "surrogatepass")).hexdigest())
    share = 0 if held_apart <= 0 else max(1, round(len(ranked) * held_apart / 2))
    return {key: "check" if i < share else "calibrate" if i < 2 * share else "train" for i, key in enumerate(ranked)}


def self_supervised_sets(
    chunks: list[CollectionChunk],
    embed_queries: Callable[[list[str]], Sequence[Sequence[float]]],
    *,
    hard_negatives: int = 2,
    same_document_negatives: int = 2,
    depth: int = RETRIEVED_DEPTH,
    seed: int = 0,
    segment: Callable[[str], list[str]] | None = None,
    max_queries: int | None = None,
    generated: Sequence[tuple[int, str]] = (),
    round_trip: int = 3,
) -> tuple[list[Pair], list[Pair]]:
    """(training pairs, retrieved sets: each query among its positive and `depth - 1` nearest chunks), grouped
    by document. A `generated` (chunk, question) is kept only when its chunk comes back among the first
    `round_trip` (Promptagator's filter); `max_queries` keeps a seeded sample."""
    if len({c.source for c in chunks}) < 2:
        raise ValueError("adapting needs a collection of at least two documents: negatives come from other documents")
    rng = random.Random(seed)
    segment = segment or _segmenter()
    queries: list[tuple[int, str, str, str]] = []  # (chunk index, query, positive passage, kind)
    for index, chunk in enumerate(chunks):
        for heading, rest in heading_queries(chunk):
            queries.append((index, heading, rest, "heading"))
        cloze = cloze_query(chunk, segment, rng)
        if cloze:
            queries.append((index, *cloze, "cloze"))
    if max_queries is not None and len(queries) > max_queries:
        queries = sorted(rng.sample(queries, max_queries))
    orders = [nearest_chunks(chunks, embed_queries([q for _, q, _, _ in queries]))] if queries else []
    if generated:
        asked = [(index, question, chunks[index].text, "generated") for index, question in generated]
        ranked = nearest_chunks(chunks, embed_queries([q for _, q, _, _ in asked]))
        kept = [i for i, (index, *_rest) in enumerate(asked) if index in ranked[i][:round_trip]]
        queries += [asked[i] for i in kept]
        orders.append(ranked[kept])
    if not queries:
        return [], []
    order = np.concatenate(orders)
    texts = [clean(c.text) for c in chunks]  # once: each chunk is a negative, or checked as one, many times
    lowered = [t.lower() for t in texts]
    pairs, sets = [], []
    for (index, query, positive, kind), ranked in zip(queries, order):
        own = chunks[index]
        pairs.append(Pair(query, positive, 1, own.title, own.source, f"self:{kind}"))
        sets.append(Pair(query, positive, 1, own.title, own.source, f"self:{kind}:retrieved"))
        key = clean(query).lower()
        others = [int(j) for j in ranked if chunks[j].source != own.source]
        picked = others[:hard_negatives]
        farther = others[hard_negatives:]
        if farther:
            picked.append(rng.choice(farther))
        without = [int(j) for j in ranked if int(j) != index and key not in lowered[j]]  # not the query's text
        siblings = [j for j in without if chunks[j].source == own.source]
        picked += siblings[:same_document_negatives]
        for j in picked:
            pairs.append(Pair(query, texts[j], 0, chunks[j].title, own.source, f"self:{kind}:negative"))
        for j in without[: depth - 1]:
            sets.append(Pair(query, texts[j], 0, chunks[j].title, own.source, f"self:{kind}:retrieved"))
    return pairs, sets


def nearest_chunks(chunks: list[CollectionChunk], query_vectors: Sequence[Sequence[float]]) -> np.ndarray:
    """Per query, every chunk's index from the nearest by cosine. Hand-written: one matrix product ranks all
    queries, where a store search would embed each again and return only its top k."""
    matrix = np.asarray([c.vector for c in chunks], dtype="float32")
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    vectors = np.asarray(query_vectors, dtype="float32")
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return np.argsort(-(vectors @ matrix.T), axis=1, kind="stable")
