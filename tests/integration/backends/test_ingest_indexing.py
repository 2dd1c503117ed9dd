"""`crag.ingest` through LangChain's Indexing API into real stores on disk: Chroma (the default, and the
collections the code before the record manager filled) and Qdrant in local mode; the CLI; the `index` graph.
Word-hash embeddings (tests/fakes.py) except for the CLI, which names the shipped MiniLM."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.documents import Document
from typer.testing import CliRunner

import crag
from crag.cli.main import app
from crag.graphs.indexing import index_graph
from crag.indexing.pipeline import split_documents
from crag.indexing.records import RECORDS_FILE
from crag.search import store as store_module
from crag.search.store import chunk_count, open_store, retrieve
from crag.settings import Context
from tests.fakes import WordEmbeddings, fake_chat, fake_context

PARIS = "Paris is the capital and largest city of France. The Eiffel Tower stands on the Champ de Mars."
METRO = "Paris is the capital of France. Its metro opened in 1900."
LONG = "\n\n".join(f"Paragraph {i} about harbours, ships and the tides of the North Sea." for i in range(30))


def docs(paris: str = PARIS) -> list[Document]:
    return [
        Document(paris, metadata={"source": "kb/paris.txt", "title": "Paris"}),
        Document(LONG, metadata={"source": "kb/sea.txt", "title": "The sea"}),
    ]


def ingest(source, **kw):
    return crag.ingest(source, chunk_size=300, chunk_overlap=30, batch_size=4, **kw)


def chroma(folder: Path, collection: str = "docs"):
    return open_store(persist_dir=folder, collection=collection, embedder=WordEmbeddings())


def test_chroma_on_disk_ingest_again_edit_and_remove(tmp_path):
    store = chroma(tmp_path / "db")
    first = ingest(docs(), vector_store=store)
    total = first.chunks
    assert total > 4 and (first.added, first.skipped_existing) == (total, 0)
    assert (tmp_path / "db" / RECORDS_FILE).is_file()  # the record manager beside the collection

    store_module._STORES.clear()  # a new process: the store and its record from disk
    store = chroma(tmp_path / "db")
    again = ingest(docs(), vector_store=store)
    assert (again.added, again.skipped_existing, again.removed, chunk_count(store)) == (0, total, 0, total)

    edited = ingest(docs(METRO), vector_store=store)
    assert (edited.added, edited.removed, chunk_count(store)) == (1, 1, total)
    assert retrieve(store, "Paris metro opened 1900", k=1, search="dense")[0].page_content == METRO

    gone = ingest(docs(METRO)[1:], vector_store=store, cleanup="full")  # kb/paris.txt no longer given
    assert (gone.added, gone.removed, chunk_count(store)) == (0, 1, total - 1)
    assert not store.get(where={"source": "kb/paris.txt"})["ids"]


def test_a_collection_filled_before_the_record_manager_is_neither_embedded_again_nor_doubled(tmp_path):
    """What the code before the Indexing API left: chunks under their (source, text) ids, no record."""
    store = chroma(tmp_path / "db", "legacy")
    chunks = split_documents(docs(), chunk_size=300, chunk_overlap=30)
    store.add_documents(chunks, ids=[c.id for c in chunks])  # as the old `ingest` added them
    embedded: list[str] = []
    spy = store.embeddings.embed_documents
    store.embeddings.embed_documents = lambda texts: embedded.extend(texts) or spy(texts)  # type: ignore[method-assign]
    try:
        report = ingest(docs(METRO), vector_store=store)
    finally:
        store.embeddings.embed_documents = spy  # type: ignore[method-assign]
    assert (report.added, report.skipped_existing, report.removed) == (1, len(chunks) - 1, 1)
    assert embedded == [METRO] and chunk_count(store) == len(chunks)  # the edit alone embedded; nothing doubled
    assert sorted(store.get()["ids"]) == sorted([c.id for c in chunks[1:]] + [report_id(store, METRO)])

    (tmp_path / "db" / RECORDS_FILE).unlink()  # a lost record is rebuilt from the collection
    store_module._STORES.clear()
    again = ingest(docs(METRO), vector_store=chroma(tmp_path / "db", "legacy"))
    assert (again.added, again.skipped_existing, again.removed) == (0, len(chunks), 0)


def report_id(store, text: str) -> str:
    [found] = store.get(where_document={"$contains": text})["ids"]
    return found


def qdrant_store(folder: Path, client=None):
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient
    from qdrant_client.models import Distance, VectorParams

    client = client or QdrantClient(path=str(folder))
    if not client.collection_exists("docs"):
        client.create_collection("docs", vectors_config=VectorParams(size=64, distance=Distance.COSINE))
    return QdrantVectorStore(client=client, collection_name="docs", embedding=WordEmbeddings())


def test_qdrant_local_ingest_again_edit_remove_and_answer(tmp_path):
    records = tmp_path / "qdrant-records.sqlite"
    store = qdrant_store(tmp_path / "qdrant")
    first = ingest(docs(), vector_store=store, record_manager=records)
    total = first.chunks
    assert first.added == total and store.client.count("docs").count == total

    store.client.close()  # reopened from disk, as a new process would
    store = qdrant_store(tmp_path / "qdrant")
    again = ingest(docs(), vector_store=store, record_manager=records)
    assert (again.added, again.skipped_existing, again.removed) == (0, total, 0)

    edited = ingest(docs(METRO), vector_store=store, record_manager=records)
    assert (edited.added, edited.removed, store.client.count("docs").count) == (1, 1, total)
    assert store.similarity_search("Paris metro opened 1900", k=1)[0].page_content == METRO

    gone = ingest(docs(METRO)[:1], vector_store=store, record_manager=records, cleanup="full")
    assert (gone.removed, store.client.count("docs").count) == (total - 1, 1)

    question = "What is the capital of France and when did its metro open?"
    context = fake_context({"metro": 0.9}, retriever=store, chat_model=fake_chat("Its metro opened in 1900."))
    result = crag.graph.invoke({"question": question}, context=context)
    store.client.close()
    assert result["action"] == "correct" and result["answer"] == "Its metro opened in 1900."
    assert [s["source"] for s in result["sources"]] == ["kb/paris.txt"]


def test_the_index_graph_writes_documents_given_as_json_into_the_settings_chroma(tmp_path):
    context = Context(chroma_dir=str(tmp_path / "db"), collection="graph", embeddings=WordEmbeddings())
    given = [{"page_content": d.page_content, "metadata": d.metadata} for d in docs()]  # what a server hands over
    report = index_graph.invoke({"docs": given}, context=context)["report"]
    assert report["added"] == report["chunks"] > 2 and report["removed"] == 0
    assert index_graph.invoke({"docs": docs(METRO)}, context=context)["report"]["removed"] == 1
    with pytest.raises(ValueError, match=r"docs\[0\]: expected a document"):
        index_graph.invoke({"docs": ["just text"]}, context=context)
    assert chunk_count(chroma(tmp_path / "db", "graph")) == report["chunks"]


def test_the_ingest_command_adds_skips_removes_and_drops_deleted_files_when_asked(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "paris.txt").write_text(PARIS)
    (folder / "moon.txt").write_text("The Moon is Earth's only natural satellite.")
    args = ["ingest", str(folder), "--chroma-dir", str(tmp_path / "db"), "--collection", "cli", "--no-progress"]
    runner = CliRunner()

    def run(*extra: str) -> str:
        result = runner.invoke(app, [*args, *extra])
        assert result.exit_code == 0, result.output
        return " ".join(result.output.split())

    assert "2 files, 2 chunks: 2 added, 0 already present -> cli" in run()
    assert "2 chunks: 0 added, 2 already present -> cli" in run()
    (folder / "paris.txt").write_text(METRO)
    assert "1 added, 1 already present, 1 no longer in their files removed" in run()
    (folder / "moon.txt").unlink()
    assert "1 chunks: 0 added, 1 already present -> cli" in run()  # a file not read keeps its chunks
    assert "0 added, 1 already present, 1 no longer in their files removed" in run("--remove-missing")
    assert (tmp_path / "db" / RECORDS_FILE).is_file()
    elsewhere = ["--collection", "cli-2", "--record-manager", str(tmp_path / "records" / "cli-2.sqlite")]
    assert "1 chunks: 1 added" in run(*elsewhere) and "1 chunks: 0 added, 1 already present" in run(*elsewhere)
    assert (tmp_path / "records" / "cli-2.sqlite").is_file()
