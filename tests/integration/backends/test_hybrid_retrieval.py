"""Hybrid retrieval: the embedding's nearest chunks and BM25's best, fused by reciprocal rank.

Real Chroma stores in temp folders and the shipped MiniLM embeddings: what the embedding ranks low
and the words find is a property of that model, so a fake would not show it.
"""

from __future__ import annotations

import logging

import pytest
from langchain_core.documents import Document

from crag.search import keywords
from crag.search.store import open_store, retrieve

FLAGS = [
    "The verbose flag prints more details about what the command does.",
    "The quiet flag suppresses all output of the command.",
    "The force flag overwrites existing files without asking first.",
    "The dry-run flag shows what the command would do without doing it.",
    "The recursive flag makes the command descend into every folder.",
]
RARE = "Use zq7 to compress the archive with the slower, smaller algorithm."
QUESTION = "What does the zq7 flag do?"


def add(store, texts: dict[str, str]) -> None:
    store.add_documents(
        [Document(text, metadata={"title": "", "source": f"{key}.txt"}) for key, text in texts.items()],
        ids=list(texts),
    )


@pytest.fixture
def store(tmp_path):
    keywords._INDEXES.clear()
    found = open_store(persist_dir=tmp_path / "db", collection="flags")
    add(found, {f"flag{i}": text for i, text in enumerate(FLAGS)} | {"rare": RARE})
    yield found
    keywords._INDEXES.clear()


def ids(documents: list[Document]) -> list[str]:
    return [d.id for d in documents]


def test_a_rare_word_the_embedding_ranks_low_is_found_by_its_keyword(store):
    """MiniLM puts every "flag" sentence above the one that holds the question's rare name; BM25 ranks it
    first, and the fused list keeps it in the top two."""
    assert "rare" not in ids(retrieve(store, QUESTION, k=2, search="dense"))
    fused = retrieve(store, QUESTION, k=2)  # hybrid is the default
    assert "rare" in ids(fused) and [d.metadata["rank"] for d in fused] == [0, 1]
    assert all(d.metadata["id"] == d.id for d in fused)
    assert sorted(ids(retrieve(store, QUESTION, k=6))) == sorted(ids(retrieve(store, QUESTION, k=6, search="dense")))


def test_a_question_of_stopwords_is_searched_by_embedding_alone(store):
    question = "What is it?"
    assert ids(retrieve(store, question, k=3)) == ids(retrieve(store, question, k=3, search="dense"))


def test_the_keyword_index_follows_the_collection(store):
    """Chunks added after the index was built are found by their words; a chunk deleted (the count
    unchanged, so the index is stale) is never returned, and a replaced one comes back as stored now."""
    retrieve(store, QUESTION, k=2)  # builds the index
    add(store, {"new": "The qx9 switch turns on colour in the listing."})
    assert ids(retrieve(store, "Which switch is qx9?", k=1)) == ["new"]
    assert "new" in keywords.index_of(store).ids  # rebuilt: the count had changed

    store.delete(ids=["rare"])
    add(store, {"other": "Plain words about nothing in particular."})  # same count: the index is not rebuilt
    found = retrieve(store, QUESTION, k=7)
    assert "rare" not in ids(found) and len(found) == 7

    store.delete(ids=["flag0"])
    add(store, {"flag0": "The verbose switch has been renamed; zq7 no longer exists."})
    replaced = next(d for d in retrieve(store, QUESTION, k=7) if d.id == "flag0")
    assert replaced.page_content.startswith("The verbose switch has been renamed")


def test_a_collection_too_large_to_index_is_searched_by_embedding_alone(store, monkeypatch, caplog):
    monkeypatch.setattr(keywords, "MAX_CHUNKS", 3)
    with caplog.at_level(logging.WARNING, logger="crag.search.keywords"):
        assert ids(retrieve(store, QUESTION, k=2)) == ids(retrieve(store, QUESTION, k=2, search="dense"))
    assert "holds 6 chunks, more than the 3" in caplog.text and "embedding alone" in caplog.text


def test_a_bad_search_is_refused(store):
    with pytest.raises(ValueError, match="search must be one of hybrid, dense"):
        retrieve(store, QUESTION, search="sparse")  # type: ignore[arg-type]
