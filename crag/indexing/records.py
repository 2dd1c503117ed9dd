"""Writing chunks through LangChain's Indexing API (`langchain_core.indexing.index`) into any vector store.

A record manager remembers which chunk ids each source put into the store, so that a source read again
adds only its new chunks and loses those it no longer holds. Chunk ids hash (source, text) (`chunk_id`):
Chroma keeps them as they are, so collections filled before the record manager existed keep their ids;
other stores get the same hash as a UUID, the id form most of them (Qdrant, Weaviate, Milvus) require.

The record manager by default: for a Chroma folder, a SQLite file in that folder; for a Chroma server, one
in memory filled from the collection each run (no local folder belongs to a server, and the collection
holds every id and source). For Chroma the record is checked against the collection first and rebuilt
from it when they disagree (a collection filled by older crag, or changed by other tools), so that a chunk
the store lost is never skipped. Any other store needs a record manager or a SQLite file path."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.indexing import InMemoryRecordManager, RecordManager, index
from langchain_core.vectorstores import VectorStore
from tqdm.auto import tqdm

RECORDS_FILE = "crag-records.sqlite"  # in an embedded Chroma folder: the default record manager
Cleanup = Literal["scoped_full", "full"]  # LangChain's names: the sources given, or everything the store holds
PAGE = 5_000  # ids read from a Chroma collection per request when rebuilding its record


@dataclass(frozen=True)
class Written:
    """What `write` did: chunks embedded and added, found already stored, and removed as stale."""

    added: int
    skipped: int
    removed: int


def _chroma(store: VectorStore) -> Any:
    """The store as LangChain's Chroma, or None (a store of another kind)."""
    from langchain_chroma import Chroma

    return store if isinstance(store, Chroma) else None


def _chroma_folder(store: Any) -> Path | None:
    """An embedded Chroma store's folder; None for a server's or an in-memory one."""
    settings = store._client.get_settings()
    return Path(settings.persist_directory) if settings.is_persistent and settings.persist_directory else None


def namespace(store: VectorStore) -> str:
    """The record manager's namespace for a store: its kind and collection (one SQLite file may hold several)."""
    chroma = _chroma(store)
    name = chroma._collection.name if chroma is not None else getattr(store, "collection_name", "")
    return f"{type(store).__name__}/{name}"


def sql_record_manager(path: str | Path, store: VectorStore) -> RecordManager:
    """LangChain's SQLRecordManager on a SQLite file (created with its folder when missing)."""
    # here: importing langchain_classic.indexes takes a second (it loads LangChain's chains too)
    from langchain_classic.indexes import SQLRecordManager  # noqa: PLC0415

    path = Path(path).expanduser()
    if path.is_dir():
        raise ValueError(f"the record manager's file {path} is a folder: give a file path, e.g. {path / RECORDS_FILE}")
    path.parent.mkdir(parents=True, exist_ok=True)
    manager = SQLRecordManager(namespace(store), db_url=f"sqlite:///{path.resolve()}")
    manager.create_schema()
    return manager


def record_manager_for(store: VectorStore, record_manager: RecordManager | str | Path | None) -> RecordManager:
    """The record manager given, one on the SQLite file given, or the store's default (module docstring)."""
    if isinstance(record_manager, RecordManager):
        return record_manager
    if record_manager is not None:
        return sql_record_manager(record_manager, store)
    chroma = _chroma(store)
    if chroma is None:
        raise ValueError(
            f"a {type(store).__name__} needs a record manager to know what it holds: pass record_manager= a "
            "LangChain RecordManager or the path of a SQLite file to keep one in (e.g. beside the store)"
        )
    folder = _chroma_folder(chroma)
    if folder is None:
        manager = InMemoryRecordManager(namespace(store))
        manager.create_schema()
        return manager
    return sql_record_manager(folder / RECORDS_FILE, store)


@contextmanager
def opened(store: VectorStore, record_manager: RecordManager | str | Path | None) -> Iterator[RecordManager]:
    """`record_manager_for`; a SQLite one made here is closed after (a server ingesting again and again would
    otherwise keep a connection pool per ingest)."""
    manager = record_manager_for(store, record_manager)
    try:
        yield manager
    finally:
        if manager is not record_manager and hasattr(manager, "engine"):
            manager.engine.dispose()


def _chroma_records(chroma: Any) -> Iterable[tuple[list[str], list[str | None]]]:
    """(ids, sources) of every chunk in a Chroma collection, a page at a time."""
    offset = 0
    while True:
        page = chroma.get(include=["metadatas"], limit=PAGE, offset=offset)
        if not page["ids"]:
            return
        sources = [(m or {}).get("source") for m in page["metadatas"]]
        yield page["ids"], [s if isinstance(s, str) else None for s in sources]
        offset += len(page["ids"])


def sync_with_chroma(chroma: Any, manager: RecordManager) -> bool:
    """Rebuild the record from the collection when their counts differ; True when it was rebuilt."""
    held = manager.list_keys()
    if len(held) == chroma._collection.count():
        return False
    for start in range(0, len(held), PAGE):
        manager.delete_keys(held[start : start + PAGE])
    seeded = 0.0
    for ids, sources in _chroma_records(chroma):
        manager.update(ids, group_ids=sources)
        seeded = manager.get_time()
    # the run's cleanup removes what was recorded strictly before it starts: let the record's clock pass the seed
    while seeded and manager.get_time() <= seeded:
        time.sleep(0.002)
    return True


def store_id(store: VectorStore, chunk_id: str) -> str:
    """The id a chunk has in `store`: Chroma's is the hash itself, any other store's the hash as a UUID."""
    return chunk_id if _chroma(store) is not None else str(uuid.UUID(hex=chunk_id[:32]))


def _keyed(store: VectorStore, chunk: Document) -> Document:
    key = store_id(store, chunk.id or "")
    return Document(id=key, page_content=chunk.page_content, metadata={**chunk.metadata, "id": key})


def write(
    chunks: Sequence[Document],
    store: VectorStore,
    manager: RecordManager,
    *,
    emptied: Sequence[str] = (),
    cleanup: Cleanup = "scoped_full",
    batch_size: int = 64,
    progress: bool = False,
) -> Written:
    """Index `chunks` (distinct ids, each with a "source") into `store`; remove the chunks of their sources
    that they no longer hold, and every chunk of the `emptied` sources (read, but without chunks now).
    `cleanup` "full" also removes every chunk of the sources not among `chunks` (files deleted since)."""
    chroma = _chroma(store)
    if chroma is not None:
        sync_with_chroma(chroma, manager)
    keyed = [_keyed(store, chunk) for chunk in chunks]
    with tqdm(total=len(keyed), desc="ingest", unit="chunk", disable=not progress) as bar:

        def counted() -> Iterable[Document]:
            for chunk in keyed:
                yield chunk
                bar.update()

        # "scoped_full", not "incremental": incremental cleans up after each batch, so the not yet refreshed
        # chunks of a source that spans batches would be deleted and embedded again; scoped_full removes the
        # stale chunks of the sources seen once every batch is in
        result = index(
            counted(),
            manager,
            store,
            batch_size=batch_size,
            cleanup=cleanup,
            source_id_key="source",
            key_encoder=lambda chunk: chunk.id or "",
        )
    removed = result["num_deleted"]
    if emptied and (stale := manager.list_keys(group_ids=list(emptied))):
        store.delete(stale)
        manager.delete_keys(stale)
        removed += len(stale)
    return Written(added=result["num_added"] + result["num_updated"], skipped=result["num_skipped"], removed=removed)


__all__ = ["RECORDS_FILE", "opened", "record_manager_for", "store_id", "write"]
