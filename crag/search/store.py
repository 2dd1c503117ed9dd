"""The internal retriever: a Chroma collection of ingested chunks (on disk, or a server at `chroma_url`).
Every store gets its embeddings explicitly (Chroma's default embedder downloads a model), and a collection
records their name (`EMBEDDINGS_KEY`), so asking with others is an error naming the right ones."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args
from urllib.parse import urlsplit

import httpx

from crag.fusion import fuse
from crag.models.embeddings import DEFAULT_EMBEDDINGS, embeddings, embeddings_name
from crag.passages import distinct
from crag.runtime.cache import ResourceCache
from crag.runtime.errors import Unavailable
from crag.search import keywords
from crag.search.filters import Filter, chroma_where

if TYPE_CHECKING:
    from langchain_chroma import Chroma
    from langchain_core.documents import Document

DEFAULT_CHROMA_DIR = ".crag/chroma"
DEFAULT_COLLECTION = "crag"
DEFAULT_CHROMA_PORT = 8000
OVERFETCH = 2  # chunks fetched per chunk returned, so that duplicate texts dropped leave k (`distinct`)
EMBEDDINGS_KEY = "crag_embeddings"  # collection metadata: the embeddings' name (`embeddings_name`)
DEFAULT_CHROMA_TIMEOUT = 30.0  # seconds per request to a Chroma server
Search = Literal["hybrid", "dense"]

_STORES: ResourceCache[tuple[str | None, str, str | None, str], Chroma] = ResourceCache("store")


class StoreError(RuntimeError):
    """A vector store that cannot be opened (unreachable server, unusable folder); the message says why."""


class StoreUnavailable(StoreError, Unavailable):
    """A Chroma server that went down or did not answer in time during a search: worth retrying later."""


@contextmanager
def _answering(where: str) -> Iterator[None]:
    """Turn a Chroma server's transport failure into `StoreUnavailable` naming the server."""
    try:
        yield
    except httpx.TransportError as exc:
        raise StoreUnavailable(
            f"the Chroma server at {where} did not answer ({type(exc).__name__}: {exc or 'no detail'}); "
            "try again when it is back"
        ) from exc


def parse_chroma_url(url: str) -> tuple[str, int, bool]:
    """Split `http(s)://host[:port]` into (host, port, ssl); the port defaults to Chroma's 8000."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"bad Chroma URL {url!r}: expected http://HOST[:PORT] or https://HOST[:PORT]")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"bad Chroma URL {url!r}: Chroma clients take no path, query or fragment")
    try:
        port = parts.port
    except ValueError as exc:  # a port that is not a number in 0..65535
        raise ValueError(f"bad Chroma URL {url!r}: {exc}") from exc
    return parts.hostname, port or DEFAULT_CHROMA_PORT, parts.scheme == "https"


def check_folder(persist_dir: Path) -> None:
    """StoreError when the embedded store's folder is a file (Chroma's own error would be a traceback)."""
    if persist_dir.exists() and not persist_dir.is_dir():
        raise StoreError(f"Chroma folder {persist_dir} is a file")


def _client(persist_dir: Path | None, url: str | None, timeout: float = DEFAULT_CHROMA_TIMEOUT):
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if url is not None:
        host, port, ssl = parse_chroma_url(url)
        with _answering(url):  # bounded: the client's own first requests have no timeout (below)
            httpx.get(f"{'https' if ssl else 'http'}://{host}:{port}/api/v2/heartbeat", timeout=timeout)
        try:
            client = chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=settings)
        except Exception as exc:  # chromadb reports an unreachable server as ValueError, others vary
            raise StoreError(f"cannot reach the Chroma server at {url}: {exc}") from exc
        # chromadb's HTTP client is made with timeout=None and takes no setting for it: a server that
        # accepts the connection and stops answering would hold a request (and a worker) forever
        client._server._session.timeout = httpx.Timeout(timeout)  # type: ignore[attr-defined]  # private to chromadb
        return client
    assert persist_dir is not None, "a Chroma folder or server"  # _where gives one of the two
    check_folder(persist_dir)
    try:
        return chromadb.PersistentClient(path=str(persist_dir), settings=settings)
    except Exception as exc:
        raise StoreError(f"cannot open the Chroma folder {persist_dir}: {exc}") from exc


def _where(persist_dir: str | Path, chroma_url: str | None) -> tuple[Path | None, str | None]:
    url = chroma_url.strip() if chroma_url else None
    return (None if url else Path(persist_dir).expanduser().resolve()), url


def _store_key(
    folder: Path | None, collection: str, url: str | None, embedder: Any
) -> tuple[str | None, str, str | None, str]:
    # an Embeddings object is kept alive by the cached store, so its id is not reused while cached
    name = embeddings_name(embedder) or f"object:{id(embedder)}"
    return (str(folder) if folder else None, collection, url, name)


def check_embeddings(recorded: Any, wanted: Any, collection: str) -> None:
    """StoreError when a collection filled with one named embeddings is opened with another name."""
    name = embeddings_name(wanted)
    if isinstance(recorded, str) and name is not None and recorded != name:
        raise StoreError(
            f"the collection {collection!r} was embedded with {recorded!r}, not {name!r}: ask with "
            f"--embeddings {recorded} (CRAG_EMBEDDINGS), or ingest into another collection"
        )


def _collection_names(client) -> list[str]:
    return [collection.name for collection in client.list_collections()]


def open_store(
    *,
    persist_dir: str | Path,
    collection: str = DEFAULT_COLLECTION,
    chroma_url: str | None = None,
    embedder: Any = DEFAULT_EMBEDDINGS,
    timeout: float = DEFAULT_CHROMA_TIMEOUT,
) -> Chroma:
    """The (cached) LangChain Chroma store for a collection, created empty (cosine distance) if missing.
    `persist_dir` is ignored when `chroma_url` is given; `timeout` (seconds per request) is a server's."""
    from chromadb.errors import ChromaError
    from langchain_chroma import Chroma

    if not collection:
        raise ValueError("the collection name must not be empty")
    folder, url = _where(persist_dir, chroma_url)

    def load() -> Chroma:
        function = embeddings(embedder)  # a bad name fails before anything is created
        client = _client(folder, url, timeout)
        name = embeddings_name(embedder)
        try:
            store = Chroma(
                collection_name=collection,
                embedding_function=function,
                client=client,
                collection_configuration={"hnsw": {"space": "cosine"}},
                collection_metadata={EMBEDDINGS_KEY: name} if name else None,  # kept only by a new collection
            )
            recorded = (client.get_collection(collection).metadata or {}).get(EMBEDDINGS_KEY)
        except (ValueError, ChromaError) as exc:  # e.g. names need 3-512 characters from [a-zA-Z0-9._-]
            raise ValueError(f"cannot open collection {collection!r}: {exc}") from exc
        check_embeddings(recorded, embedder, collection)
        return store

    return _STORES.get(_store_key(folder, collection, url, embedder), load)


def open_existing(
    *,
    persist_dir: str | Path,
    collection: str = DEFAULT_COLLECTION,
    chroma_url: str | None = None,
    embedder: Any = DEFAULT_EMBEDDINGS,
    timeout: float = DEFAULT_CHROMA_TIMEOUT,
) -> Chroma:
    """The store to answer from, never created: `StoreError` unless it exists and holds chunks (a misspelt
    `--collection` would otherwise answer from the model's memory)."""
    folder, url = _where(persist_dir, chroma_url)
    where = url or str(folder)
    fill = f"fill it with `crag ingest PATH --collection {collection}` (with the same --chroma-dir or --chroma-url)"
    if _store_key(folder, collection, url, embedder) not in _STORES:
        if folder is not None:
            check_folder(folder)
            if not (folder / "chroma.sqlite3").is_file():  # what PersistentClient writes first
                raise StoreError(
                    f"there is no knowledge base at {folder}: nothing was ingested there; "
                    f"{fill}, or point --chroma-dir at the folder `crag ingest` used"
                )
        try:
            with _answering(where):
                names = sorted(_collection_names(_client(folder, url, timeout)))
        except StoreError:
            raise
        except Exception as exc:  # a corrupt database, a server error
            raise StoreError(f"cannot list the collections at {where}: {type(exc).__name__}: {exc}") from exc
        if collection not in names:
            raise StoreError(
                f"there is no collection {collection!r} at {where}; "
                f"it holds {', '.join(repr(n) for n in names) if names else 'none'}"
            )
    store = open_store(
        persist_dir=persist_dir, collection=collection, chroma_url=chroma_url, embedder=embedder, timeout=timeout
    )
    with _answering(where):
        empty = not store.get(limit=1, include=[])["ids"]
    if empty:
        raise StoreError(f"the collection {collection!r} at {where} is empty: {fill}")
    return store


def chunk_count(store: Chroma) -> int:
    """How many chunks the store holds (LangChain's Chroma has no public count)."""
    return store._collection.count()


def copy_embedded(persist_dir: str | Path, target: str, ids: list[str], *, prefix: str) -> set[str]:
    """Copy into `target` the chunks with these `ids` that another `prefix` collection of the folder holds,
    embeddings included; returns the ids copied. Chroma's own client: LangChain's cannot add embeddings."""
    client = _client(_where(persist_dir, None)[0], None)
    destination = client.get_collection(target)
    wanted, copied = list(ids), set()
    for name in _collection_names(client):
        if name == target or not name.startswith(prefix) or not wanted:
            continue
        found = client.get_collection(name).get(ids=wanted, include=["embeddings", "documents", "metadatas"])
        if found["ids"]:
            destination.add(
                ids=found["ids"],
                embeddings=found["embeddings"],
                documents=found["documents"],
                metadatas=found["metadatas"],
            )
            copied.update(found["ids"])
            wanted = [i for i in wanted if i not in copied]
    return copied


def _server_url(store: Chroma) -> str:
    return getattr(getattr(store._client, "_server", None), "_api_url", "").removesuffix("/api/v2")


def _dense(store: Chroma, question: str, n: int, where: dict | None = None) -> list[Document]:
    try:
        return store.similarity_search(question, k=n, filter=where)
    except Exception as exc:
        # filled with vectors of another size, before crag recorded its embeddings: this names the fix
        if "dimension" not in str(exc):
            raise
        raise StoreError(
            f"the question's embedding does not fit the collection ({exc}): it was filled with other "
            "embeddings; ask with the --embeddings it was ingested with"
        ) from exc


def _hybrid(store: Chroma, question: str, n: int, where: dict | None = None) -> list[Document]:
    """The embedding's `n` nearest and BM25's `n` best, fused; chunks only BM25 found are read by id. With a
    `where`, BM25 ranks only the chunks Chroma says match it (the index is the whole collection's)."""
    dense = _dense(store, question, n, where)
    index = keywords.index_of(store)
    if index is None:
        return dense
    found = {d.id: d for d in dense}
    allowed = None if where is None else set(store.get(where=where, include=[])["ids"])
    lexical = index.search(question, n, allowed)
    missing = [i for i in lexical if i not in found]
    if missing:
        found.update((d.id, d) for d in store.get_by_ids(missing))
    return [found[i] for i in fuse([str(d.id) for d in dense], lexical) if i in found]  # Chroma's have ids


def retrieve(
    store: Chroma, question: str, k: int = 10, search: Search = "hybrid", wanted: Filter | None = None
) -> list[Document]:
    """The `k` best chunks for `question` with distinct texts, best first, each with its `rank` (0 = best).
    `search` "hybrid" fuses the embedding's and BM25's rankings; "dense" is the embedding alone. `wanted`: only
    chunks whose metadata match it (`crag.search.filters`), in both halves."""
    if not isinstance(question, str):
        raise TypeError(f"question must be str, got {type(question).__name__}")
    if k < 1:
        raise ValueError("k must be at least 1")
    if search not in get_args(Search):
        raise ValueError(f"search must be one of {', '.join(get_args(Search))}, got {search!r}")
    with _answering(_server_url(store)):
        if not store.get(limit=1, include=[])["ids"]:  # empty: nothing can match, skip embedding the question
            return []
        fetch = _hybrid if search == "hybrid" else _dense
        documents = distinct(fetch(store, question, OVERFETCH * k, chroma_where(wanted)))[:k]
    for rank, document in enumerate(documents):
        document.metadata = {**document.metadata, "id": document.id, "rank": rank}
    return documents


__all__ = ["open_store", "retrieve"]  # what callers outside the package use
