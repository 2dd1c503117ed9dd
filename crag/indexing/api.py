"""`crag.ingest(...)`: the Python entry to ingestion, the one `crag ingest` and the `index` graph use.

    import crag
    from langchain_core.documents import Document

    crag.ingest([Document("Paris is the capital of France.", metadata={"source": "notes/paris.txt"})])
    crag.ingest(["docs/", "https://example.org/page"])             # files, folders and web pages
    crag.ingest(loader, vector_store=qdrant, record_manager=".crag/records.sqlite")

Documents, a LangChain `BaseLoader`, or paths and URLs are chunked as `crag ingest` chunks them and written
through LangChain's Indexing API into the vector store: by default the Chroma collection of the settings
(`Context`: chroma_dir or chroma_url, collection, embeddings), else any LangChain `VectorStore`."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

from crag.indexing import pipeline
from crag.indexing.pipeline import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, IngestReport
from crag.indexing.records import Cleanup
from crag.indexing.urls import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT, is_url
from crag.search.store import check_folder, open_store
from crag.settings import Context

if TYPE_CHECKING:
    from langchain_core.indexing import RecordManager

Source = Document | BaseLoader | str | os.PathLike | Iterable[Document | str | os.PathLike]


def sort_inputs(source: Source) -> tuple[list[Document], list[Path], list[str]]:
    """(documents, paths, urls) of what `ingest` was given; TypeError naming anything else."""
    if isinstance(source, BaseLoader):
        return list(source.lazy_load()), [], []
    if isinstance(source, (Document, str, os.PathLike)):
        source = [source]
    if not isinstance(source, Iterable):
        raise TypeError(
            f"ingest takes Documents, a LangChain BaseLoader, or paths and URLs, not {type(source).__name__}"
        )
    documents: list[Document] = []
    paths: list[Path] = []
    urls: list[str] = []
    for item in source:
        if isinstance(item, Document):
            documents.append(item)
        elif isinstance(item, str) and is_url(item):
            urls.append(item)
        elif isinstance(item, (str, os.PathLike)):
            paths.append(Path(item))
        else:
            raise TypeError(f"ingest takes Documents, paths and URLs, not {type(item).__name__}: {item!r:.80}")
    return documents, paths, urls


@contextlib.contextmanager
def settings_store(context: Context) -> Iterator[VectorStore]:
    """The context's vector store: its `retriever` when that is a VectorStore, else its Chroma collection
    (created when missing), held under the folder's ingest lock so that two ingests do not both add a chunk."""
    if isinstance(context.retriever, VectorStore):
        yield context.retriever
        return
    folder = Path(context.chroma_dir).expanduser()
    if not context.chroma_url:
        check_folder(folder)  # before the lock creates it as a folder
    with contextlib.nullcontext() if context.chroma_url else pipeline.store_lock(folder):
        yield open_store(
            persist_dir=folder,
            collection=context.collection,
            chroma_url=context.chroma_url,
            embedder=context.embeddings,
            timeout=context.chroma_timeout,
        )


def ingest(
    source: Source,
    vector_store: VectorStore | None = None,
    record_manager: RecordManager | str | Path | None = None,
    *,
    context: Context | None = None,
    cleanup: Cleanup = "scoped_full",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    batch_size: int = 64,
    allow_private_fetch: bool = False,
    fetch_timeout: float = DEFAULT_TIMEOUT,
    max_page_bytes: int = DEFAULT_MAX_BYTES,
    progress: bool = False,
) -> IngestReport:
    """Chunk `source` (LangChain Documents, each with a "source" in its metadata; a `BaseLoader`; or paths of
    files and folders and http(s) URLs) and write the chunks into `vector_store` with LangChain's `index()`:
    a chunk already there is skipped, and a source's chunks it no longer holds are removed.

    `vector_store`: any LangChain VectorStore that can delete by id; None for the store of `context`
    (default: `Context()`, the settings' Chroma collection, or its retriever when that is a vector store).
    `record_manager`: a LangChain RecordManager, or the path of a SQLite file to keep one in; None for the
    context's `record_manager` setting, else Chroma's own (a file in its folder); other stores need one. `cleanup` "full" also removes every chunk of the sources not given this time (files deleted
    since: the store then holds exactly what was given); the default, "scoped_full", only the stale chunks of
    the sources given. Returns the `IngestReport` (added, skipped_existing, removed, what was passed over and why)."""
    documents, paths, urls = sort_inputs(source)
    options: dict[str, Any] = {
        "urls": urls,
        "documents": documents,
        "record_manager": record_manager,
        "cleanup": cleanup,
        "chunk_size": chunk_size,
        "chunk_overlap": chunk_overlap,
        "batch_size": batch_size,
        "allow_private_fetch": allow_private_fetch,
        "fetch_timeout": fetch_timeout,
        "max_page_bytes": max_page_bytes,
        "progress": progress,
    }
    if vector_store is not None:
        return pipeline.ingest(paths, vector_store, **options)
    context = Context() if context is None else context
    options["record_manager"] = context.record_manager if record_manager is None else record_manager
    pipeline.check_chunking(chunk_size, chunk_overlap)  # bad input fails before a store is created
    with settings_store(context) as store:
        return pipeline.ingest(paths, store, **options)


__all__ = ["ingest", "sort_inputs"]
