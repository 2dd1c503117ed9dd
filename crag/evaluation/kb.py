"""The run's knowledge base as a Chroma collection named after a hash of its chunks, cut as `crag ingest`
cuts them (but untitled records stay untitled), so a re-run finds it filled."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tqdm.auto import tqdm

from crag.evaluation.inputs import Passage
from crag.indexing.pipeline import split_documents
from crag.passages import passage, title_of
from crag.search.store import chunk_count, copy_embedded, open_store

DEFAULT_CHROMA_DIR = ".crag/eval/chroma"
# about 100 words, as the paper retriever's Wikipedia passages
DEFAULT_CHUNK_SIZE = 600
DEFAULT_CHUNK_OVERLAP = 100
PREFIX = "eval-"  # the harness's knowledge-base collections: one per content


def chunk_passages(passages: list[Passage], *, chunk_size: int, chunk_overlap: int) -> list:
    """The passages' chunks as Documents with `title`, `source`, `chunk` and `id` metadata."""
    documents = [passage(p.text, title=p.title, source=p.key) for p in passages]
    chunks, seen = [], set()
    for chunk in split_documents(documents, chunk_size=chunk_size, chunk_overlap=chunk_overlap):
        if chunk.id not in seen:  # a text repeated within one record is stored once, as ingest does
            seen.add(chunk.id)
            chunks.append(chunk)
    return chunks


def collection_name(chunks: list) -> str:
    """`PREFIX` + a hash of every chunk's id and title: same content, same collection."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(f"{chunk.id}\0{title_of(chunk)}\n".encode())
    return f"{PREFIX}{digest.hexdigest()[:20]}"


def ensure_collection(
    passages: list[Passage],
    chroma_dir: str | Path = DEFAULT_CHROMA_DIR,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    batch_size: int = 128,
    progress: bool = True,
) -> tuple[str, int, int]:
    """(collection, chunks, newly added): the collection holding exactly these passages' chunks."""
    chunks = chunk_passages(passages, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    name = collection_name(chunks)
    store = open_store(persist_dir=chroma_dir, collection=name)
    if chunk_count(store) == len(chunks):  # filled by an earlier run
        return name, len(chunks), 0
    added = 0
    with tqdm(total=len(chunks), desc=f"knowledge base {name}", unit="chunk", disable=not progress) as bar:
        for start in range(0, len(chunks), batch_size):
            batch = chunks[start : start + batch_size]
            present = set(store.get(ids=[c.id for c in batch], include=[])["ids"])
            new = [c for c in batch if c.id not in present]
            copied = copy_embedded(chroma_dir, name, [c.id for c in new], prefix=PREFIX) if new else set()
            new = [c for c in new if c.id not in copied]
            if new:
                store.add_documents(new, ids=[c.id for c in new])
            added += len(new) + len(copied)
            bar.update(len(batch))
    return name, len(chunks), added


__all__ = [
    "DEFAULT_CHROMA_DIR",
    "DEFAULT_CHUNK_OVERLAP",
    "DEFAULT_CHUNK_SIZE",
    "ensure_collection",
]  # what callers outside the package use
