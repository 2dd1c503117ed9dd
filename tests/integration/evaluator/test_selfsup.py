"""Self-supervised pairs from a collection (issue 13): queries from headings and sentences, the query's
text cut from its positive, hard negatives from other documents only, deterministic, read from a
real Chroma store."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from crag.evaluator.training.selfsup import (
    CollectionChunk,
    cloze_query,
    collection_chunks,
    heading_queries,
    held_apart_split,
    nearest_chunks,
    self_supervised_sets,
)

FILLER = " ".join(f"word{i}" for i in range(25))
RETRY = f"## Retrying on exceptions\n\nTenacity retries a call when it raises. {FILLER}."
WAIT = f"Waits grow exponentially between attempts. The wait_exponential function sets them. {FILLER}."
LOCK = f"# Acquiring a file lock\n\nA FileLock is acquired with a timeout in seconds. {FILLER}."
CACHE = f"The cache keeps entries for an hour before they expire. Entries are kept on disk. {FILLER}."


def chunk(text, source, vector, title=""):
    return CollectionChunk(text=text, title=title or source, source=source, vector=vector)


CHUNKS = [
    chunk(RETRY, "tenacity.md", [1.0, 0.0, 0.0]),
    chunk(WAIT, "tenacity.md", [0.9, 0.1, 0.0]),
    chunk(LOCK, "filelock.md", [0.0, 1.0, 0.0]),
    chunk(CACHE, "cache.md", [0.5, 0.0, 0.5]),
]


def sentences(text):
    return [s.strip() + "." for s in text.replace("\n", " ").split(".") if s.strip()]


def embed_like(chunks):
    """Embeds a query as the chunk it was taken from, so its own document is always nearest."""

    def embed(queries):
        return [next(c.vector for c in chunks if q.rstrip(".") in c.text) for q in queries]

    return embed


def test_a_heading_asks_for_its_section_without_the_heading():
    assert heading_queries(CHUNKS[0]) == [
        ("Retrying on exceptions", f"Tenacity retries a call when it raises. {FILLER}.")
    ]
    assert heading_queries(chunk(f"# Usage\n\n{FILLER}", "a", [1])) == []  # one word asks for nothing
    assert heading_queries(chunk("## Retrying on exceptions\n\nToo short.", "a", [1])) == []  # no passage left


def test_a_sentence_asks_for_its_chunk_with_the_sentence_cut_out():
    query, rest = cloze_query(CHUNKS[1], sentences, random.Random(0))
    assert query in ("Waits grow exponentially between attempts.", "The wait_exponential function sets them.")
    assert query not in rest and FILLER in rest


def test_without_sibling_negatives_pairs_take_negatives_from_other_documents_only():
    pairs = self_supervised_sets(
        CHUNKS, embed_like(CHUNKS), hard_negatives=1, same_document_negatives=0, seed=3, segment=sentences
    )[0]
    positives = [p for p in pairs if p.label == 1]
    assert {p.source for p in positives} == {"self:heading", "self:cloze"}
    assert any(p.question == "Retrying on exceptions" for p in positives)
    by_query = {}
    for p in pairs:
        by_query.setdefault((p.question, p.group), []).append(p)
    for (question, source), group in by_query.items():
        negatives = [p for p in group if p.label == 0]
        assert len(negatives) == 2  # one hard, one random
        assert all(p.title != source for p in negatives)  # never the query's own document
        assert all(question not in p.passage for p in group if p.label == 1)
    # the hard negative of a tenacity query is the chunk nearest to it in another document
    retry = by_query[("Retrying on exceptions", "tenacity.md")]
    assert next(p.title for p in retry if p.label == 0) == "cache.md"
    assert (
        pairs
        == self_supervised_sets(
            CHUNKS, embed_like(CHUNKS), hard_negatives=1, same_document_negatives=0, seed=3, segment=sentences
        )[0]
    )


def test_sibling_sections_are_negatives_unless_they_hold_the_query():
    pairs = self_supervised_sets(
        CHUNKS, embed_like(CHUNKS), hard_negatives=1, same_document_negatives=1, seed=3, segment=sentences
    )[0]
    retry = [p for p in pairs if p.question == "Retrying on exceptions" and p.label == 0]
    assert [p.passage for p in retry if p.title == "tenacity.md"] == [WAIT]  # the other tenacity chunk
    overlapping = [
        chunk(RETRY, "tenacity.md", [1.0, 0.0, 0.0]),
        chunk(f"Retrying on exceptions is what it does. {FILLER}.", "tenacity.md", [0.9, 0.1, 0.0]),
        *CHUNKS[2:],
    ]  # the neighbour repeats the heading's text, as overlapping chunks do
    pairs = self_supervised_sets(
        overlapping, embed_like(overlapping), same_document_negatives=1, seed=3, segment=sentences
    )[0]
    assert not [
        p for p in pairs if p.question == "Retrying on exceptions" and p.label == 0 and p.title == "tenacity.md"
    ]


def test_retrieved_sets_grade_each_query_among_its_nearest_chunks():
    pairs, sets = self_supervised_sets(CHUNKS, embed_like(CHUNKS), depth=3, seed=3, segment=sentences)
    assert pairs == self_supervised_sets(CHUNKS, embed_like(CHUNKS), seed=3, segment=sentences)[0]  # same queries
    by_query = {}
    for p in sets:
        by_query.setdefault((p.question, p.group), []).append(p)
    assert set(by_query) == {(p.question, p.group) for p in pairs if p.label}
    for (question, _), members in by_query.items():
        assert [p.label for p in members] == [1] + [0] * (len(members) - 1) and len(members) == 3
        assert all(question not in p.passage for p in members)  # the query's own text is never graded
    # the tenacity heading's set: its section without the heading, then the nearest chunks, its
    # sibling first (same document, nearer than any other)
    retry = by_query[("Retrying on exceptions", "tenacity.md")]
    assert [p.title for p in retry] == ["tenacity.md", "tenacity.md", "cache.md"]
    assert retry[1].passage == WAIT


def test_chunks_are_ranked_by_cosine_whatever_the_vectors_length():
    chunks = [chunk("a", "a.md", [2.0, 0.0]), chunk("b", "b.md", [0.0, 0.5]), chunk("c", "c.md", [3.0, 3.0])]
    order = nearest_chunks(chunks, [[0.0, 9.0], [1.0, 0.1]])
    assert order.tolist() == [[1, 2, 0], [0, 2, 1]]


def test_one_document_cannot_be_adapted_to():
    with pytest.raises(ValueError, match="at least two documents"):
        self_supervised_sets(CHUNKS[:2], embed_like(CHUNKS), segment=sentences)[0]


def test_documents_are_held_apart_stably_half_to_check_half_to_calibrate():
    sources = [f"doc-{i}.md" for i in range(2000)]
    where = held_apart_split(sources, 0.2)
    assert Counter(where.values()) == {"check": 200, "calibrate": 200, "train": 1600}
    assert where == held_apart_split(reversed(sources), 0.2)  # by hash, not by order
    assert set(held_apart_split(sources, 0.0).values()) == {"train"}
    few = held_apart_split([f"doc-{i}.md" for i in range(10)], 0.1)
    assert Counter(few.values()) == {"check": 1, "calibrate": 1, "train": 8}


def test_a_query_sample_keeps_every_chunk_as_a_negative():
    chunks = [
        chunk(f"Sentence number {i} talks about topic {i} at length here. " + FILLER, f"d{i % 4}.md", [1.0, float(i)])
        for i in range(12)
    ]
    pairs = self_supervised_sets(chunks, embed_like(chunks), segment=sentences, max_queries=3, seed=1)[0]
    positives = [p for p in pairs if p.label]
    assert len(positives) == 3
    again = self_supervised_sets(chunks, embed_like(chunks), segment=sentences, max_queries=3, seed=1)[0]
    assert pairs == again


def test_chunks_and_their_embeddings_come_from_a_real_store(tmp_path):
    from crag.indexing.pipeline import ingest
    from crag.search.store import open_store

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tenacity.md").write_text(RETRY)
    (docs / "filelock.md").write_text(LOCK)
    store = open_store(persist_dir=tmp_path / "db", collection="own")
    ingest([docs], store, progress=False)
    chunks = collection_chunks(store)
    assert sorted(c.title for c in chunks) == [
        "Acquiring a file lock",
        "tenacity",
    ]  # a "# " heading, else the file name
    assert all(len(c.vector) == 384 and c.source.endswith(".md") for c in chunks)
    from crag.models.embeddings import LocalEmbeddings

    pairs = self_supervised_sets(chunks, LocalEmbeddings().embed_documents, hard_negatives=1)[0]
    assert {p.label for p in pairs} == {0, 1} and all(p.group.endswith(".md") for p in pairs)


def test_generated_questions_join_when_their_chunk_comes_back_for_them():
    """A generated question asks for its whole chunk and is kept only when the collection's embeddings
    rank that chunk among the first `round_trip` for it."""
    vectors = {"How do I set a lock timeout?": [0.0, 1.0, 0.0], "What expires after an hour?": [0.0, 1.0, 0.0]}

    def embed(queries):
        return [vectors.get(q) or next(c.vector for c in CHUNKS if q.rstrip(".") in c.text) for q in queries]

    generated = [(2, "How do I set a lock timeout?"), (3, "What expires after an hour?")]
    pairs, sets = self_supervised_sets(
        CHUNKS, embed, depth=3, seed=3, segment=sentences, generated=generated, round_trip=1
    )
    kept = [p for p in pairs if p.source == "self:generated"]
    # the lock question finds its own chunk first; the cache one finds the lock chunk, so it is dropped
    assert [(p.question, p.passage, p.label) for p in kept] == [("How do I set a lock timeout?", LOCK, 1)]
    negatives = [p for p in pairs if p.source == "self:generated:negative"]
    assert negatives and all(p.label == 0 and p.passage != LOCK for p in negatives)
    graded = [p for p in sets if p.question == "How do I set a lock timeout?"]
    assert [p.label for p in graded] == [1, 0, 0]
    only_generated, _ = self_supervised_sets(
        CHUNKS, embed, seed=3, segment=lambda text: [], generated=generated[:1], round_trip=1, max_queries=0
    )
    assert {p.source for p in only_generated if p.label} == {"self:generated"}
