"""Validation slices: phrasings never used in training, labels by gold page and by evidence, question splits."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from lab.datasets import phrasings as validation
from lab.evaluator import phrasings as training
from lab.evaluator.data import Recipe, question_split


def _normal(template: str) -> str:
    return " ".join(template.lower().rstrip("?.").split())


def test_validation_phrasings_are_never_training_phrasings():
    seen_in_training = {_normal(t) for ts in training.TRAINING_TEMPLATES.values() for t in ts}
    seen_in_training |= {_normal(t) for t in training.BIO_TEMPLATES + training.GENERIC_TEMPLATES}
    for relation, templates in validation.VALIDATION_TEMPLATES.items():
        for template in templates:
            assert _normal(template) not in seen_in_training, (relation, template)
    for template in validation.BIO_TEMPLATES:
        assert _normal(template) not in seen_in_training


def test_every_popqa_relation_has_validation_and_training_phrasings():
    assert set(validation.VALIDATION_TEMPLATES) == set(training.TRAINING_TEMPLATES)
    for relation in validation.VALIDATION_TEMPLATES:
        asked = validation.validation_phrasings("Ada Lovelace", relation)
        assert len(asked) >= 3 and all("Ada Lovelace" in q for q in asked)
        assert len(set(asked)) == len(asked)
    rng = random.Random(0)
    assert len(validation.sample_phrasings("X", "bio", 2, rng)) == 2
    with pytest.raises(KeyError):
        validation.validation_phrasings("X", "no such relation")


def test_training_code_never_imports_the_validation_side():
    """The evaluator package (training included) must not read what validation is built from."""
    package = Path(__file__).resolve().parents[3] / "crag" / "evaluator"
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else ([a.name for a in node.names] if isinstance(node, ast.Import) else [])
            )
            assert not any(n == "crag.evaluation" or n.startswith("crag.evaluation.") for n in names), path


def test_question_splits_are_stable_and_disjoint_from_dev():
    recipe = Recipe()
    qids = [f"bio-{i}" for i in range(100, 500)]
    val = [q for q in qids if question_split(q, recipe.bio_validation_fraction) == "validation"]
    assert 150 < len(val) < 250  # about half
    assert val == [q for q in qids if question_split(q, recipe.bio_validation_fraction) == "validation"]


def test_docs_labels_need_the_page_and_the_evidence(tmp_path, monkeypatch):
    from langchain_core.documents import Document

    from lab.datasets import relevance

    inputs = tmp_path / "docs-inputs"
    (inputs / "docs").mkdir(parents=True)
    (inputs / "docs" / "json.txt").write_text("json docs")
    (inputs / "questions.jsonl").write_text(
        '{"id": "d1", "question": "sort keys in json output?", "answers": ["sort_keys"], "doc": "json", '
        '"evidence": ["If  sort_keys is true"], "style": "how-to"}\n'
    )
    returned = [
        Document(
            page_content="If sort_keys is true, the output of dictionaries is sorted.",
            metadata={"title": "json", "source": str(inputs / "docs" / "json.txt")},
        ),
        Document(
            page_content="If sort_keys is true (in another page)",
            metadata={"title": "csv", "source": str(inputs / "docs" / "csv.txt")},
        ),
        Document(
            page_content="json.dumps serialises an object.",
            metadata={"title": "json", "source": str(inputs / "docs" / "json.txt")},
        ),
    ]
    titleless = [
        Document(d.page_content, metadata={**d.metadata, "title": "", relevance.GOLD_TITLE: d.metadata["title"]})
        for d in returned
    ]
    stores = {"titled": returned, "untitled": titleless}
    monkeypatch.setattr(relevance, "open_store", lambda **kw: "titled")
    monkeypatch.setattr(relevance, "untitled_copy", lambda store, chroma_dir: "untitled")
    monkeypatch.setattr(relevance, "retrieve", lambda store, question, k: stores[store][:k])
    monkeypatch.setattr(relevance, "ingest", lambda paths, store, progress: None)
    pairs, untitled = relevance.docs_slice(inputs, tmp_path / "chroma", progress=False)
    assert [p.label for p in pairs] == [1, 0, 0] == [p.label for p in untitled]
    assert [p.title for p in pairs] == ["json", "csv", "json"] and {p.group for p in pairs} == {"d1"}
    assert [p.title for p in untitled] == ["", "", ""]


def test_a_titleless_copy_keeps_texts_embeddings_and_the_gold_title(tmp_path):
    """The untitled slices are retrieved from a copy of the collection without titles: same chunks,
    same vectors (they are of the text alone), the page's title kept for the label only."""
    from langchain_core.documents import Document

    from crag.search.store import open_store
    from lab.datasets import relevance
    from tests.fakes import WordEmbeddings

    embedder = WordEmbeddings()
    store = open_store(persist_dir=tmp_path / "db", collection="pages", embedder=embedder)
    store.add_documents(
        [Document(f"text number {i}", metadata={"title": f"Page {i}", "source": f"p{i}"}) for i in range(3)],
        ids=["a", "b", "c"],
    )
    copy = relevance.untitled_copy(store, tmp_path / "db", embedder)
    store.add_documents([Document("text number 3", metadata={"title": "Page 3", "source": "p3"})], ids=["d"])
    again = relevance.untitled_copy(store, tmp_path / "db", embedder)  # one chunk more: copied again
    got = copy._collection.get(ids=["b"], include=["documents", "metadatas", "embeddings"])
    original = store._collection.get(ids=["b"], include=["embeddings"])
    assert copy._collection.name == "pages-untitled" and again._collection.count() == 4
    assert got["documents"] == ["text number 1"] and got["metadatas"][0]["title"] == ""
    assert got["metadatas"][0][relevance.GOLD_TITLE] == "Page 1" and got["metadatas"][0]["source"] == "p1"
    assert list(got["embeddings"][0]) == list(original["embeddings"][0])


def test_training_retrieval_chunks_like_the_harness_knowledge_base():
    from crag.evaluation.kb import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
    from lab.evaluator.mining import CHUNK_OVERLAP, CHUNK_SIZE

    assert (CHUNK_SIZE, CHUNK_OVERLAP) == (DEFAULT_CHUNK_SIZE, DEFAULT_CHUNK_OVERLAP)


def test_bio_slice_is_the_validation_half_as_asked_and_rephrased(tmp_path):
    import json

    from lab.datasets.relevance import bio_slices

    (tmp_path / "relevance").mkdir()
    rows = [
        {
            "source": "bio",
            "qid": f"bio-{i}",
            "question": f"Who is Person {i}?",
            "topic": f"Person {i}",
            "rank": r,
            "title": f"Person {i}" if r == 0 else "Other",
            "text": f"text {r}",
            "label": int(r == 0),
        }
        for i in range(100, 140)
        for r in range(3)
    ]
    (tmp_path / "relevance" / "bio_contriever_top10.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    slices = bio_slices(tmp_path)
    asked, rephrased = slices["bio"], slices["bio-phrased"]
    recipe = Recipe()
    assert asked and all(question_split(p.group, recipe.bio_validation_fraction) == "validation" for p in asked)
    assert [(p.passage, p.label, p.title) for p in asked] == [(p.passage, p.label, p.title) for p in rephrased]
    assert all(p.question.startswith("Who is") for p in asked)
    assert not any(p.question.startswith("Who is") for p in rephrased)
