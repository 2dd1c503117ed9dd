"""Training pairs from generated questions: the round-trip filter and the retriever's hard negatives.

A question the model wrote for a chunk is kept only when a retriever built like the project's
(MiniLM embeddings and BM25 over the same 1,000-character chunks, fused by reciprocal rank) finds
that chunk again among its first `ROUND_TRIP` results for it (Promptagator's round-trip
consistency): a question its passage does not answer, or one so vague that anything answers it,
seldom passes. Each kept question then meets the retriever's other results as the graph would grade
them: the chunk it was written for is relevant, the others are not. The pool holds every chunk of
each page asked about (re-rendered here), so the negatives include the page's other sections, the
case a user's question usually meets (it finds the right manual; which part of it answers?). A
chunk next to the positive shares up to 100 characters with it and may hold the answer's end, so it
is left out rather than labelled; any other chunk of the page that also answers is labelled wrongly,
which the teacher's soft label (`teacher_probabilities`) softens in training.

Pages are split by source, never by question: a tenth of the pages are dev (with and without titles,
as `build_data`'s dev pairs are), so dev asks about text training never saw.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from crag.evaluator.pairs import Pair, clean
from crag.fusion import best, fuse
from crag.jsonl import appended_objects
from crag.text import folded, terms
from lab.datasets.manuals import Source, SourceMissing, render
from lab.evaluator.generated import CHUNK_OVERLAP, CHUNK_SIZE, read_doc
from lab.evaluator.mining import Chunk, DenseIndex

TOP_K = 10  # what the graph grades
ROUND_TRIP = 3  # the chunk must be among the retriever's first three for its question
DEV_FRACTION = 0.1


@dataclass(frozen=True)
class PoolChunk:
    source: str
    position: int  # its place in the page, to tell a neighbour of the positive (they overlap)
    title: str
    text: str


def read_records(path: str | Path) -> list[dict]:
    """The generator's JSONL (a torn last line from a killed run is ignored)."""
    return [record for record in appended_objects(Path(path)) if record.get("questions")]


def page_text(source: str, wiki: dict[str, str]) -> str | None:
    """A record's whole page as the generator read it, or None when this machine cannot render it."""
    kind, _, rest = source.partition(":")
    try:
        if kind == "man":
            name, _, section = rest.rpartition(".")
            return render(Source("man", name, section))
        if kind == "pydoc":
            return render(Source("pydoc", rest))
        if kind == "doc":
            return read_doc(Path(rest))
    except (SourceMissing, RuntimeError, OSError, EOFError):
        return None
    return wiki.get(rest) if kind == "wiki" else None


def pool_chunks(records: Sequence[dict], pages: dict[str, str | None]) -> list[PoolChunk]:
    """Every chunk of every page asked about, cut as the generator cut it; a record whose page did not
    render keeps its own chunk alone."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP)
    titles = {r["source"]: r["title"] for r in records}
    chunks: list[PoolChunk] = []
    seen: set[str] = set()
    for source, title in titles.items():
        text = pages.get(source)
        for position, piece in enumerate(splitter.split_text(text) if text else []):
            if piece not in seen:
                seen.add(piece)
                chunks.append(PoolChunk(source, position, title, piece))
    for record in records:
        if record["text"] not in seen:
            seen.add(record["text"])
            chunks.append(PoolChunk(record["source"], -1, record["title"], record["text"]))
    return chunks


class HybridIndex:
    """The project's hybrid search over a list of chunks: MiniLM's exact nearest (text only, as the
    store embeds it) and BM25 over title and text (as `crag.search.keywords` indexes a collection),
    fused by reciprocal rank."""

    def __init__(self, chunks: Sequence[PoolChunk], *, cache: Path | None = None, progress: bool = True):
        import bm25s

        self.chunks = list(chunks)
        self.dense = DenseIndex([Chunk(c.title, c.text) for c in self.chunks], cache=cache, progress=progress)
        self.bm25 = bm25s.BM25()
        self.bm25.index([terms(f"{c.title} {c.text}") for c in self.chunks], show_progress=False)

    def search(self, queries: Sequence[str], k: int) -> list[list[int]]:
        """Positions in `chunks` of the `k` best for each query, best first."""
        depth = 2 * k
        vectors = self.dense.model.encode(list(queries), batch_size=64, normalize_embeddings=True)
        results = []
        for query, vector in zip(queries, vectors):
            sims = self.dense.vectors @ vector
            dense = [str(i) for i in np.argsort(-sims, kind="stable")[:depth]]
            tokens = terms(query)
            lexical = [str(i) for i in best(self.bm25.get_scores(tokens), depth)] if tokens else []
            results.append([int(i) for i in fuse(dense, lexical)[:k]])
        return results


def is_dev_page(source: str, fraction: float = DEV_FRACTION) -> bool:
    return zlib.crc32(f"generated-dev:{source}".encode()) % 1000 < fraction * 1000


def generated_pairs(
    records: Sequence[dict], index: HybridIndex, *, progress: bool = True
) -> tuple[dict[str, list[Pair]], dict]:
    """{"train": pairs, "dev": pairs} from the records' questions, and the round trip's counts."""
    position = {c.text: i for i, c in enumerate(index.chunks)}
    # a question written for two chunks of one page ("How do I change my login shell?") is answered by both,
    # and each would be the other's negative: such questions are left out
    per_page: dict[tuple[str, str], int] = {}
    for record in records:
        for question in set(record["questions"].values()):
            key = (record["source"], folded(question))
            per_page[key] = per_page.get(key, 0) + 1
    asked = [
        (record, style, question)
        for record in records
        for style, question in record["questions"].items()
        if per_page[(record["source"], folded(question))] == 1
    ]
    splits: dict[str, list[Pair]] = {"train": [], "dev": []}
    kept_by_style: dict[str, list[int]] = {}
    batch = 256
    bar = tqdm(total=len(asked), desc="round trip", unit="question", disable=not progress)
    for start in range(0, len(asked), batch):
        part = asked[start : start + batch]
        for (record, style, question), found in zip(part, index.search([q for _, _, q in part], TOP_K)):
            own = position[record["text"]]
            kept = own in found[:ROUND_TRIP]
            kept_by_style.setdefault(style, [0, 0])[0] += int(kept)
            kept_by_style[style][1] += 1
            if not kept:
                continue
            mine = index.chunks[own]
            group = f"generated:{record['id']}:{style}"
            pairs = [Pair(clean(question), clean(mine.text), 1, mine.title, group, f"generated-{record['kind']}")]
            for i in found:
                other = index.chunks[i]
                if i == own:
                    continue
                if other.source == mine.source and (mine.position < 0 or abs(other.position - mine.position) <= 1):
                    continue  # a neighbour shares text with the positive: neither label is safe
                pairs.append(
                    Pair(clean(question), clean(other.text), 0, other.title, group, f"generated-{record['kind']}")
                )
            splits["dev" if is_dev_page(record["source"]) else "train"].extend(pairs)
        bar.update(len(part))
    bar.close()
    stats = {
        "records": len(records),
        "questions": len(asked),
        "asked_on_two_chunks": sum(n for n in per_page.values() if n > 1),
        "kept": sum(k for k, _ in kept_by_style.values()),
        "kept_by_style": {s: round(k / n, 3) for s, (k, n) in sorted(kept_by_style.items())},
        "pool_chunks": len(index.chunks),
        "pairs": {name: len(pairs) for name, pairs in splits.items()},
    }
    return splits, stats


def build_generated(path: str | Path, wiki_file: Path | None, *, cache: Path | None = None, progress: bool = True):
    """Read the generator's records, render their pages, index the pool and make the pairs."""
    records = read_records(path)
    wiki: dict[str, str] = {}
    if wiki_file is not None and wiki_file.is_file():
        with wiki_file.open(encoding="utf-8") as lines:
            for line in lines:
                entry = json.loads(line)
                wiki[entry["id"]] = entry["text"]
    sources = sorted({r["source"] for r in records})
    pages = {s: page_text(s, wiki) for s in tqdm(sources, desc="render pages", unit="page", disable=not progress)}
    index = HybridIndex(pool_chunks(records, pages), cache=cache, progress=progress)
    splits, stats = generated_pairs(records, index, progress=progress)
    stats["pages_rendered"] = sum(text is not None for text in pages.values())
    stats["pages"] = len(pages)
    return splits, stats
