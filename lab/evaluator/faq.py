"""Documentation-domain dev pairs from the FAQs installed on this machine (lsof, sed, zlib, xz, …).

The blend and the thresholds were fitted on held-apart Wikipedia questions only, where the model
is strong, so the head leaned on the model even on documentation, where the model ranks chunks
barely better than chance (ROC-AUC 0.62 on the `docs` slice). An FAQ is documentation with real
questions written by its authors ("How do I insert a newline into the RHS of a substitution?") and
the answer under each, so it shows, without any slice, how much a documentation question should
trust the model and how much the words.

Each FAQ is ingested as a user would, without its questions (their table of contents and headings
removed, so that the answer must be found without the question's own words beside it), cut into
`crag ingest`'s 1,000-character chunks; each question is sent to the project's dense retriever over
all the FAQs' chunks, and a retrieved chunk is relevant when it holds a good part of that question's
answer. None of these files is a page of the `docs` slice (man and pydoc pages; a test checks it).
"""

from __future__ import annotations

import gzip
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from crag.evaluator.pairs import Pair, clean
from lab.evaluator.mining import Chunk, DenseIndex

# Debian's documentation of packages on this machine kind; a missing file is skipped
FAQ_FILES = (
    "/usr/share/doc/lsof/00FAQ.gz",
    "/usr/share/doc/sed/sedfaq.txt.gz",
    "/usr/share/doc/zlib1g-dev/FAQ.gz",
    "/usr/share/doc/xz-utils/faq.txt.gz",
    "/usr/share/doc/valgrind/FAQ.txt.gz",
)
CHUNK_SIZE, CHUNK_OVERLAP = 1000, 100  # crag ingest's defaults (a test keeps them equal)
TOP_K = 10
MIN_ANSWER_WORDS = 15
# "4.1. How do I …?", "14.9.1\tWhy won't lsof …?", "Q: What do the letters XZ mean?"
QUESTION_LINE = re.compile(r"^\s{0,3}(?:Q:\s*|\d+(?:\.\d+)*\.?\s+)(\S.*)$")


@dataclass(frozen=True)
class FaqEntry:
    question: str
    answer: str
    source: str


def faq_name(path: str | Path) -> str:
    """A FAQ's title as a user's collection would carry it: "lsof FAQ" for /usr/share/doc/lsof/00FAQ.gz."""
    package = Path(path).parent.name  # Debian's package: "lsof", "zlib1g-dev", "xz-utils"
    return f"{re.match(r'[a-z]*', package).group() or package} FAQ"


def decode(path: Path, raw: bytes) -> str:
    """A FAQ file's bytes as text (Debian gzips most of /usr/share/doc)."""
    return (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8", "replace")


def parse_faq(text: str, source: str = "") -> list[FaqEntry]:
    """The question/answer entries of one plain-text FAQ.

    A question is a numbered (or "Q:") line ending in "?", possibly continued on up to two indented
    lines; its answer runs to the next numbered line. Numbered lines that are not questions
    ("15.0 Pyramid Version Problems") end the previous answer too. The table of contents repeats
    every question without an answer, so for a question asked twice the last answer wins."""
    lines = text.splitlines()
    heads: list[tuple[str | None, int, int]] = []  # (question or None, first line, last line)
    i = 0
    while i < len(lines):
        match = QUESTION_LINE.match(lines[i])
        if not match:
            i += 1
            continue
        question, last = match.group(1).strip(), i
        while (
            not question.endswith("?")
            and last - i < 2
            and last + 1 < len(lines)
            and lines[last + 1].startswith(("\t", "   "))
            and lines[last + 1].strip()
            and not QUESTION_LINE.match(lines[last + 1])
        ):
            last += 1
            question += " " + lines[last].strip()
        heads.append((question if question.endswith("?") and 3 <= len(question.split()) <= 40 else None, i, last))
        i = last + 1
    entries: dict[str, FaqEntry] = {}
    for n, (question, _, last) in enumerate(heads):
        if question is None:
            continue
        end = heads[n + 1][1] if n + 1 < len(heads) else len(lines)
        answer = "\n".join(lines[last + 1 : end]).strip()
        if answer.startswith("A:"):
            answer = answer[2:].strip()
        if len(answer.split()) >= MIN_ANSWER_WORDS:
            key = " ".join(question.split())
            entries.pop(key, None)
            entries[key] = FaqEntry(key, answer, source)
    return list(entries.values())


@dataclass(frozen=True)
class FaqCorpus:
    """The FAQs' answers as a knowledge base: each entry, where its answer lies in its FAQ's ingested
    text, and that text cut into `crag ingest`'s chunks with their spans."""

    entries: list[FaqEntry]
    spans: list[tuple[int, int]]  # entries[n]'s answer in its FAQ's ingested text
    chunks: list[Chunk]
    where: list[tuple[str, int, int]]  # chunks[n]'s (source, start, end)
    files: dict[str, str]  # the FAQs read, with their digests

    def relevant(self, entry: int, chunk: int) -> bool:
        """Whether a chunk holds at least min(200 characters, half) of the entry's answer."""
        a, b = self.spans[entry]
        source, start, end = self.where[chunk]
        if source != self.entries[entry].source:
            return False
        return max(0, min(b, end) - max(a, start)) >= min(200, (b - a) / 2)


def faq_corpus(files: Sequence[str | Path] = FAQ_FILES) -> FaqCorpus:
    """The answers alone, chunked (the questions are what is asked, not what is stored);
    FileNotFoundError when no file holds an FAQ."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP, add_start_index=True)
    corpus = FaqCorpus([], [], [], [], {})
    for file in map(Path, files):
        if not file.is_file():
            continue
        raw = file.read_bytes()
        found = parse_faq(decode(file, raw), str(file))
        if not found:
            continue
        corpus.files[str(file)] = hashlib.sha256(raw).hexdigest()[:16]
        text = ""
        for entry in found:
            corpus.entries.append(entry)
            corpus.spans.append((len(text), len(text) + len(entry.answer)))
            text += entry.answer + "\n\n"
        for piece in splitter.create_documents([text]):
            start = piece.metadata["start_index"]
            corpus.chunks.append(Chunk(faq_name(file), piece.page_content))
            corpus.where.append((str(file), start, start + len(piece.page_content)))
    if not corpus.entries:
        raise FileNotFoundError(f"no FAQ with questions found among {', '.join(map(str, files))}")
    return corpus


def build_faq_pairs(files: Sequence[str | Path] = FAQ_FILES, *, cache: Path | None = None, progress: bool = True):
    """(pairs, manifest): every FAQ question with the retriever's top 10 chunks of all the FAQs'
    answers, labelled by whether a chunk holds at least min(200 characters, half) of its answer."""
    corpus = faq_corpus(files)
    entries, chunks = corpus.entries, corpus.chunks
    position = {id(chunk): n for n, chunk in enumerate(chunks)}
    index = DenseIndex(chunks, cache=cache, progress=progress)
    pairs: list[Pair] = []
    for n, (entry, retrieved) in enumerate(zip(entries, index.search([e.question for e in entries], TOP_K))):
        for chunk in retrieved:
            c = position[id(chunk)]
            label = int(corpus.relevant(n, c))
            pairs.append(
                Pair(clean(entry.question), clean(chunk.text), label, chunk.title, f"faq-{n}", corpus.where[c][0])
            )
    manifest = {
        "files": corpus.files,
        "questions": len(entries),
        "chunks": len(chunks),
        "pairs": len(pairs),
        "positives": sum(p.label for p in pairs),
        "questions_with_a_relevant_chunk": len({p.group for p in pairs if p.label}),
    }
    return pairs, manifest
