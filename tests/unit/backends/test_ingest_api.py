"""`crag.ingest` on fakes: LangChain's in-memory vector store and record manager, word-hash embeddings.
What is given (Documents, a loader, paths), re-ingesting, edits, removal, errors, the `index` graph."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document
from langchain_core.indexing import InMemoryRecordManager
from langchain_core.vectorstores import InMemoryVectorStore

import crag
from crag.graphs.indexing import index_graph
from crag.indexing.api import sort_inputs
from crag.indexing.pipeline import chunk_id
from crag.indexing.records import record_manager_for, store_id
from crag.settings import Context
from tests.fakes import ANSWER, WordEmbeddings, fake_context

LONG = " ".join(f"Sentence {i} of the long page about harbours and ships." for i in range(40))


def docs(paris: str = "Paris is the capital of France.") -> list[Document]:
    return [
        Document(paris, metadata={"source": "notes/paris.txt", "title": "Paris"}),
        Document(LONG, metadata={"source": "notes/long.txt"}),
    ]


def fresh() -> tuple[InMemoryVectorStore, InMemoryRecordManager]:
    manager = InMemoryRecordManager("test")
    manager.create_schema()
    return InMemoryVectorStore(WordEmbeddings()), manager


class Loader(BaseLoader):
    def lazy_load(self):
        yield from docs()


def ingest(store, manager, source, **kw):
    return crag.ingest(source, vector_store=store, record_manager=manager, chunk_size=200, chunk_overlap=20, **kw)


def test_ingest_is_the_function_however_the_indexing_package_was_imported():
    import crag.indexing.pipeline  # the package imported first, as `crag ingest` does
    from crag import ingest as imported
    from crag.indexing.api import ingest as defined

    assert imported is crag.ingest is defined and callable(crag.ingest)


def test_documents_are_chunked_stored_under_uuids_and_found_again_without_embedding():
    store, manager = fresh()
    first = ingest(store, manager, docs(), batch_size=3)  # the long page spans several batches
    chunks = first.chunks
    assert chunks > 5 and (first.added, first.skipped_existing, first.removed, first.files) == (chunks, 0, 0, 0)
    stored = store.get_by_ids(manager.list_keys())
    assert len(stored) == chunks
    for document in stored:  # the (source, text) hash, as a UUID: what most stores but Chroma require
        assert (
            document.id
            == document.metadata["id"]
            == str(uuid.UUID(hex=chunk_id(document.metadata["source"], document.page_content)[:32]))
        )

    again = ingest(store, manager, docs(), batch_size=3)
    assert (again.added, again.skipped_existing, again.removed) == (0, chunks, 0)
    assert len(store.store) == chunks


def test_an_edited_source_loses_its_old_chunks_and_an_emptied_one_all_of_them():
    store, manager = fresh()
    ingest(store, manager, docs())
    edited = ingest(store, manager, docs("Paris is the capital of France. Its metro opened in 1900."))
    assert (edited.added, edited.removed) == (1, 1)
    texts = [d["text"] for d in store.store.values()]
    assert "Paris is the capital of France. Its metro opened in 1900." in texts
    assert "Paris is the capital of France." not in texts

    emptied = ingest(store, manager, [Document("", metadata={"source": "notes/paris.txt"})])
    assert emptied.removed == 1 and emptied.empty_records == 1
    assert not any("Paris" in d["text"] for d in store.store.values())
    assert any("harbours" in d["text"] for d in store.store.values())  # a source not given keeps its chunks


def test_full_cleanup_removes_the_sources_not_given():
    store, manager = fresh()
    report = ingest(store, manager, docs())
    kept = ingest(store, manager, docs()[:1], cleanup="full")
    assert (kept.added, kept.skipped_existing, kept.removed) == (0, 1, report.chunks - 1)
    assert [d["metadata"]["source"] for d in store.store.values()] == ["notes/paris.txt"]


def test_a_loader_a_path_and_a_url_are_taken(tmp_path, monkeypatch):
    store, manager = fresh()
    assert ingest(store, manager, Loader()).added == ingest(*fresh(), docs()).added
    (tmp_path / "a.txt").write_text("A file of its own.")
    assert sort_inputs(tmp_path / "a.txt") == ([], [tmp_path / "a.txt"], [])
    assert sort_inputs([str(tmp_path / "a.txt"), "https://example.org/x", docs()[0]]) == (
        [docs()[0]],
        [tmp_path / "a.txt"],
        ["https://example.org/x"],
    )
    report = ingest(store, manager, tmp_path / "a.txt")
    assert (report.files, report.added) == (1, 1)


@pytest.mark.parametrize(
    ("source", "error", "message"),
    [
        ([Document("No source.")], ValueError, 'has no "source" in its metadata'),
        ([Document("Blank source.", metadata={"source": ""})], ValueError, 'has no "source"'),
        (42, TypeError, "not int"),
        ([docs()[0], 3.5], TypeError, "not float"),
    ],
)
def test_bad_input_is_an_error_naming_it(source, error, message):
    with pytest.raises(error, match=message):
        ingest(*fresh(), source)


def test_a_store_other_than_chroma_needs_a_record_manager(tmp_path):
    store = InMemoryVectorStore(WordEmbeddings())
    with pytest.raises(ValueError, match="InMemoryVectorStore needs a record manager"):
        crag.ingest(docs(), vector_store=store)
    with pytest.raises(ValueError, match="is a folder"):
        crag.ingest(docs(), vector_store=store, record_manager=tmp_path)
    path = tmp_path / "records" / "store.sqlite"  # a path: LangChain's SQLRecordManager in that file
    assert crag.ingest(docs()[:1], vector_store=store, record_manager=path).added == 1
    assert crag.ingest(docs()[:1], vector_store=store, record_manager=path).skipped_existing == 1
    assert record_manager_for(store, path).namespace == "InMemoryVectorStore/"
    assert store_id(store, "ab" * 32) == str(uuid.UUID(hex="ab" * 16))


def test_the_index_graph_writes_into_the_contexts_vector_store_with_its_record_manager(tmp_path):
    store, manager = fresh()
    context = Context(retriever=store, embeddings=WordEmbeddings())
    with pytest.raises(ValueError, match="needs a record manager"):  # no store of its own: no default record
        index_graph.invoke({"docs": docs()}, context=context)
    for record in (manager, str(tmp_path / "records.sqlite")):  # the setting: a RecordManager, or a SQLite file
        store, _ = fresh()
        context = Context(retriever=store, embeddings=WordEmbeddings(), record_manager=record)
        given = [{"page_content": d.page_content, "metadata": d.metadata} for d in docs()]  # a server's JSON
        report = index_graph.invoke({"docs": given}, context=context)["report"]
        assert report["added"] == report["chunks"] == len(store.store) > 1
        again = index_graph.invoke({"docs": docs()}, context=context)["report"]
        assert (again["added"], again["skipped_existing"]) == (0, report["chunks"])
    with pytest.raises(ValueError, match=r"docs\[0\]: expected a document"):
        index_graph.invoke({"docs": ["just text"]}, context=context)
    with pytest.raises(ValueError, match=r"docs\[0\] is not a document"):
        index_graph.invoke({"docs": [{"metadata": {}}]}, context=context)


def test_a_store_filled_by_ingest_answers_as_the_contexts_retriever():
    store, manager = fresh()
    ingest(store, manager, [Document("Anna Berg was a Swedish painter of the sea.", metadata={"source": "kb/anna"})])
    result = crag.graph.invoke({"question": "What is Anna Berg's occupation?"}, context=fake_context(retriever=store))
    assert result["answer"] == ANSWER and result["sources"][0]["source"] == "kb/anna"


def test_a_server_run_writes_documents_only_with_the_index_permission():
    from crag.nodes.index_docs import INDEX_PERMISSION, check_permission

    check_permission({})  # Python, the CLI: no user
    check_permission(
        {"configurable": {"langgraph_auth_user_id": "anna", "langgraph_auth_permissions": [INDEX_PERMISSION]}}
    )
    with pytest.raises(PermissionError, match="'boris' may not add documents.*CRAG_INDEX_USERS"):
        check_permission({"configurable": {"langgraph_auth_user_id": "boris", "langgraph_auth_permissions": []}})
