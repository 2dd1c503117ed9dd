"""`crag ingest`: load files and web pages, cut them into chunks and add the new chunks to the Chroma store.
Chunk ids hash (source, text), so only new chunks are embedded and an edited file's old ones are removed.
The report names everything skipped and why."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from filelock import FileLock
from langchain_core.documents import Document
from tqdm.auto import tqdm

from crag.ingest.files import (
    UnreadableFile,
    find_files,
    kind,
    plain_text,
    read_bytes,
    read_text,
    split_binary,
    stem,
    unsupported_message,
    untyped,
)
from crag.ingest.info import is_info
from crag.ingest.info import nodes as info_nodes
from crag.ingest.readers import (
    MARKDOWN_SUFFIXES,
    UnreadablePdf,
    html_text,
    markdown_text,
    read_pdf,
    repeated_only,
    terminal_text,
    unindexed_reason,
)
from crag.ingest.rst import RST_SUFFIXES, rst_text, rst_title
from crag.ingest.urls import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT, load_urls
from crag.jsonl import parse_objects
from crag.passages import record_fields, source_of

if TYPE_CHECKING:
    from chromadb.api.types import Where
    from langchain_chroma import Chroma

DEFAULT_CHUNK_SIZE = 1000
DEFAULT_CHUNK_OVERLAP = 100


@dataclass(frozen=True)
class IngestReport:
    files: int
    chunks: int
    added: int
    skipped_existing: int  # already in the store
    duplicates: int = 0  # chunks repeated within this input (same source and text): stored once
    unsupported_files: tuple[str, ...] = ()
    binary_files: tuple[str, ...] = ()  # files with a text suffix whose bytes are not text: skipped
    empty_records: int = 0  # documents without text (JSONL records, pages of only markup): nothing to find in them
    unreadable_files: tuple[str, ...] = ()
    empty_pages: tuple[str, ...] = ()  # sources of PDF pages without text (blank or scanned)
    urls: int = 0  # web pages read
    failed_urls: tuple[str, ...] = ()  # "URL: why": not downloaded, or no text in it
    removed: int = 0  # chunks of the sources read that they no longer hold: an edited file's old text
    unindexed_files: tuple[str, ...] = ()  # HTML pages in folders that ask not to be indexed or only redirect
    repeated_pages: tuple[str, ...] = ()  # sources of pages with a heading and only lines other pages repeat


def _document(text: str, metadata: dict[str, Any]) -> Document:
    return Document(page_content=text, metadata=metadata)


def _read_jsonl(path: Path) -> list[Document]:
    """One Document per record (one with empty text is counted, then dropped)."""
    documents = []
    # universal newlines, not splitlines(), which also cuts at the U+2028 a JSON string may hold
    for number, record in parse_objects(io.StringIO(read_text(path), newline=None), path):
        text = record.get("text")
        if not isinstance(text, str):
            raise ValueError(f'{path}, line {number}: no "text" string in the record')
        url = record.get("url")
        metadata = {
            # no title: none, rather than the file's name, which the evaluator would read as the page's title
            "title": str(record.get("title") or ""),
            "source": url if isinstance(url, str) and url else str(path),
            **record_fields(record),
        }
        documents.append(_document(terminal_text(text), metadata))
    return documents


class UnindexedPage(ValueError):
    """An HTML page that by its own markup stays out of an index; the message says why."""


def load_file(path: str | Path, *, skip_unindexed: bool = False) -> tuple[list[Document], list[str]]:
    """(documents, sources of PDF pages without text): one Document per file, JSONL record, PDF page or Info
    node. Raises `UnreadablePdf`, `UnreadableFile` and, with `skip_unindexed`, `UnindexedPage`."""
    path = Path(path).expanduser().resolve()
    suffix, name = kind(path), stem(path)
    if suffix == ".jsonl":
        return _read_jsonl(path), []
    if suffix == ".pdf":
        pages = read_pdf(read_bytes(path), str(path), name)
        return pages.documents, pages.empty
    if is_info(suffix):  # a GNU Info manual (or a part of one): a document per node
        return [
            _document(node.text, {"title": node.title, "source": f"{path}#{node.name}"})
            for node in info_nodes(read_text(path))
        ], []
    fields: dict[str, Any] = {}
    if suffix in (".html", ".htm"):
        raw = read_text(path)
        reason = unindexed_reason(raw) if skip_unindexed else None
        if reason:
            raise UnindexedPage(reason)
        text, title = html_text(raw)
        title = title or name
    elif suffix in MARKDOWN_SUFFIXES:
        page = markdown_text(read_text(path))
        text, title, fields = page.text, page.title or name, page.fields
    elif suffix in RST_SUFFIXES:  # Sphinx sources: read as their built pages show them, named by their first title
        raw = read_text(path)
        text, title = rst_text(raw, path.parent), rst_title(raw) or name
    elif suffix == ".txt" or (untyped(path) and plain_text(path)):  # "LICENSE", "FAQ": plain text by name
        text, title = terminal_text(read_text(path)), name
    else:
        raise ValueError(unsupported_message(path))
    return [_document(text, {"title": title, "source": str(path), **record_fields(fields)})], []


@dataclass(frozen=True)
class Loaded:
    """What `load_documents` read, and what it passed over."""

    documents: list[Document]
    files: list[Path]  # the files read
    unsupported: list[Path]  # inside folders, with a suffix we do not read
    binary: list[Path]  # with a text suffix, but their bytes are not text
    unreadable: list[str]  # "path: why": PDFs and gzip files that cannot be read
    empty_pages: list[str]  # sources of PDF pages without text
    unindexed: dict[Path, str] = field(default_factory=dict)  # pages in folders kept out by their markup: why
    repeated: list[str] = field(default_factory=list)  # sources of pages with nothing of their own (`repeated_only`)


def load_documents(paths: Iterable[str | Path], *, progress: bool = False) -> Loaded:
    """Every readable document in `paths`, but pages with nothing of their own and, inside folders, HTML
    pages that ask not to be indexed or only redirect."""
    paths = list(paths)
    named = {Path(p).expanduser().resolve() for p in paths if Path(p).expanduser().is_file()}
    files, unsupported = find_files(paths)
    candidates, binary = split_binary(files)
    documents: list[Document] = []
    read: list[Path] = []
    unreadable: list[str] = []
    empty_pages: list[str] = []
    unindexed: dict[Path, str] = {}
    for file in tqdm(candidates, desc="read", unit="file", disable=not progress or not candidates):
        try:
            found, empty = load_file(file, skip_unindexed=file not in named)
        except (UnreadablePdf, UnreadableFile) as exc:  # one bad file is reported, and the others are read
            unreadable.append(f"{file}: {exc}")
            continue
        except UnindexedPage as exc:
            unindexed[file] = str(exc)
            continue
        documents += found
        empty_pages += empty
        read.append(file)
    hollow = repeated_only([d.page_content for d in documents])
    repeated = [source_of(d) for d, drop in zip(documents, hollow) if drop]
    documents = [d for d, drop in zip(documents, hollow) if not drop]
    return Loaded(documents, read, unsupported, binary, unreadable, empty_pages, unindexed, repeated)


def chunk_id(source: str, text: str) -> str:
    """The chunk's store id: sha256 of its source and text."""
    return hashlib.sha256(f"{source}\0{text}".encode()).hexdigest()


def check_chunking(chunk_size: int, chunk_overlap: int) -> None:
    if chunk_size < 1:
        raise ValueError("chunk size must be at least 1")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValueError(f"chunk overlap must be at least 0 and below the chunk size {chunk_size}, got {chunk_overlap}")


def split_documents(
    documents: Iterable[Document], *, chunk_size: int = DEFAULT_CHUNK_SIZE, chunk_overlap: int = DEFAULT_CHUNK_OVERLAP
) -> list[Document]:
    """Cut documents into chunks of at most `chunk_size` characters; metadata gains `chunk` and `id`."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    check_chunking(chunk_size, chunk_overlap)
    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    chunks = []
    for document in documents:
        for index, text in enumerate(splitter.split_text(document.page_content)):
            ident = chunk_id(source_of(document), text)
            metadata = {**document.metadata, "chunk": index, "id": ident}
            chunks.append(Document(page_content=text, metadata=metadata, id=ident))
    return chunks


def ingest(
    paths: Iterable[str | Path],
    store: Chroma,
    *,
    urls: Iterable[str] = (),
    allow_private_fetch: bool = False,
    fetch_timeout: float = DEFAULT_TIMEOUT,
    max_page_bytes: int = DEFAULT_MAX_BYTES,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    batch_size: int = 64,
    progress: bool = True,
) -> IngestReport:
    """Load `paths` and `urls`, chunk, and add to `store` the chunks it does not hold yet; then remove the
    old chunks of every source read (one that could not be read keeps what it had)."""
    if batch_size < 1:
        raise ValueError("batch size must be at least 1")
    loaded = load_documents(paths, progress=progress)
    downloaded = load_urls(
        urls, timeout=fetch_timeout, max_bytes=max_page_bytes, allow_private=allow_private_fetch, progress=progress
    )
    documents = loaded.documents + downloaded.documents
    empty = [document for document in documents if not document.page_content.strip()]
    chunks = split_documents(documents, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    seen: set[str] = set()
    unique = []  # the first chunk of each id: a text repeated within one source is stored once
    for chunk in chunks:
        if chunk.id not in seen:
            seen.add(str(chunk.id))  # str(): each chunk has its id (split_documents), which Document types as optional
            unique.append(chunk)
    added = 0
    with tqdm(total=len(chunks), desc="ingest", unit="chunk", disable=not progress) as bar:
        bar.update(len(chunks) - len(unique))
        for start in range(0, len(unique), batch_size):
            batch = unique[start : start + batch_size]
            present = set(store.get(ids=[str(chunk.id) for chunk in batch], include=[])["ids"])
            new = [chunk for chunk in batch if chunk.id not in present]
            if new:
                store.add_documents(new, ids=[str(chunk.id) for chunk in new])
                added += len(new)
            bar.update(len(batch))
    # also files none of whose chunks names them (JSONL records with URLs), and pages now kept out
    read = {source_of(chunk) for chunk in unique} | {str(f) for f in (*loaded.files, *loaded.unindexed)}
    removed = _remove_stale(store, sorted(read), seen)
    return IngestReport(
        files=len(loaded.files),
        chunks=len(chunks),
        added=added,
        skipped_existing=len(unique) - added,
        duplicates=len(chunks) - len(unique),
        unsupported_files=tuple(map(str, loaded.unsupported)),
        binary_files=tuple(map(str, loaded.binary)),
        empty_records=len(empty),
        unreadable_files=tuple(loaded.unreadable),
        empty_pages=tuple(loaded.empty_pages + downloaded.empty_pages),
        urls=len(downloaded.urls),
        failed_urls=tuple(downloaded.failed),
        removed=removed,
        unindexed_files=tuple(map(str, loaded.unindexed)),
        repeated_pages=tuple(loaded.repeated),
    )


SOURCES_PER_QUERY = 100


def _remove_stale(store: Chroma, sources: list[str], current: set[str]) -> int:
    """Delete the chunks of `sources` whose ids are not in `current`; returns how many."""
    stale: list[str] = []
    for start in range(0, len(sources), SOURCES_PER_QUERY):
        # chromadb types "$in" as a list of its values (str, int, float, bool), which a list of str is not to mypy
        where = cast("Where", {"source": {"$in": sources[start : start + SOURCES_PER_QUERY]}})
        stale += [i for i in store.get(where=where, include=[])["ids"] if i not in current]
    if stale:
        store.delete(ids=stale)
    return len(stale)


@contextmanager
def store_lock(folder: Path) -> Iterator[None]:
    """One ingest at a time into an embedded store: two at once would both add every missing chunk."""
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(folder / "crag-ingest.lock"):
        yield


__all__ = ["ingest", "load_documents"]  # what callers outside the package use
