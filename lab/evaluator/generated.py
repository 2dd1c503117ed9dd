"""Questions written by a chat model for passages nobody here wrote: training data for the evaluator.

The evaluator leads on Wikipedia and trails cosine on documentation because nothing it trained on
looks like a user asking about a manual: PopQA's templates, Bio's "Who is X?", and for `adapt`
headings and cut-out sentences. The standard answer when a domain has no labelled questions is to
generate them (InPars, Promptagator, GPL): a language model writes the questions a passage answers,
a round-trip filter keeps those whose passage the retriever finds again, and the retriever's other
results for each become its hard negatives (`generated_pairs`).

Passages come from text already on this machine, of several kinds (`Passage.kind`): man pages,
Python's pydoc, Debian's `/usr/share/doc` and the shared Wikipedia passages. The documentation
validation set's pages, the FAQs kept as documentation dev pairs and anything describing a Python
package (kept for the held-out check) are never read: the caller names them in `exclude`.

The model is asked once per passage for one question in each of three styles (`STYLES`): a "How do
I" task, a specific detail, a casual chat question; the ones users type, which no template makes.
Three more are made from them without the model (`with_derived`), because the 1.5B model asked
for keywords, lower case or a typo wrote another full question instead: `keywords` (the detail
question's content words), `lower` (the task question lower-cased, "how to …", no question mark)
and `typo` (one adjacent-letter swap in the detail question's longest word). A follow-up reaches the
evaluator already condensed into a question that stands alone (`crag.questions.followup`), which these
styles cover. Generation is greedy, so a run is repeatable; it appends one JSON line per passage and
flushes, so a stopped run resumes where it stopped (`generate_questions`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from tqdm.auto import tqdm

from crag.evaluator.training.questions import MIN_WORDS, QUESTION_PROMPT, parse_questions, with_derived
from crag.jsonl import appended_objects, drop_torn_line
from lab.datasets.manuals import Source, SourceMissing, render
from lab.evaluator.faq import decode

CHUNK_SIZE, CHUNK_OVERLAP = 1000, 100  # crag ingest's defaults: the chunks a user's documents become
FAMILY_CAP = 3  # pages of one family (git-*, gcloud_*, one package's documentation folder)
PER_SOURCE = 2  # chunks asked about per page: many pages teach more than many chunks of one
MAX_PAGE_BYTES = 400_000  # a bigger page is a reference dump (perlfunc), rendered slowly for two chunks
KINDS = ("man", "pydoc", "doc", "wiki")
# how often each kind comes in the interleaved order: documentation first, Wikipedia for breadth
WEIGHTS = {"man": 4, "pydoc": 3, "doc": 2, "wiki": 1}
# a man page's closing sections and licence text: no user asks about them
_BOILERPLATE = re.compile(
    r"^(AUTHORS?|COPYRIGHT|REPORTING BUGS|COLOPHON)$|copyright|permission is hereby granted",
    re.IGNORECASE | re.MULTILINE,
)
DOC_NAMES = re.compile(r"(^|/)(readme|faq|.*\.txt|.*\.md)(\.gz)?$", re.IGNORECASE)


@dataclass(frozen=True)
class Passage:
    """One chunk to write questions for; `id` is a hash of its source and text."""

    id: str
    kind: str
    source: str
    title: str
    text: str


def passage_id(source: str, text: str) -> str:
    return hashlib.sha256(f"{source}\n{text}".encode()).hexdigest()[:16]


def _order_key(name: str, seed: int) -> str:
    """A fixed pseudo-random order of names that does not depend on the filesystem's listing order."""
    return hashlib.sha256(f"{seed}:{name}".encode()).hexdigest()


def spread(
    items: Sequence, family: Callable[[object], str], name: Callable[[object], str], seed: int, cap: int
) -> list:
    """Items in a fixed pseudo-random order, one of each family before the second of any, at most `cap`
    of a family: 16,631 of this machine's 19,183 man pages are gcloud's and 502 of its documentation
    files git's release notes, which would otherwise be most of what the model reads."""
    groups: dict[str, list] = {}
    for item in sorted(items, key=lambda item: _order_key(name(item), seed)):
        groups.setdefault(family(item), []).append(item)
    ranked = [
        (rank, _order_key(key, seed), item)
        for key, members in groups.items()
        for rank, item in enumerate(members[:cap])
    ]
    return [item for _, _, item in sorted(ranked, key=lambda entry: entry[:2])]


def man_sources(root: str | Path = "/usr/share/man", sections: Sequence[str] = ("1", "5", "7", "8")) -> list[Source]:
    """Every man page installed in these sections (English only: the top-level man folders)."""
    found = []
    for section in sections:
        folder = Path(root) / f"man{section}"
        for path in sorted(folder.glob("*")) if folder.is_dir() else []:
            stem = path.name[:-3] if path.name.endswith(".gz") else path.name
            name, _, sect = stem.rpartition(".")
            if name and sect.startswith(section):
                found.append(Source("man", name, sect))
    return found


def pydoc_sources() -> list[Source]:
    """The standard library's public top-level modules (pydoc renders each; those that do not import are skipped)."""
    skip = {"antigravity", "this", "idlelib", "turtledemo", "tkinter", "turtle", "lib2to3", "ensurepip", "venv"}
    return [
        Source("pydoc", name)
        for name in sorted(sys.stdlib_module_names)
        if not name.startswith("_") and name not in skip and not name.startswith("test")
    ]


def doc_files(root: str | Path = "/usr/share/doc") -> list[Path]:
    """README, FAQ, .txt and .md files of Debian's package documentation (Python packages' own left out)."""
    base = Path(root)
    if not base.is_dir():
        return []
    return [
        path
        for path in sorted(base.rglob("*"))
        if path.is_file()
        and DOC_NAMES.search(str(path.relative_to(base)))
        and not path.relative_to(base).parts[0].startswith(("python", "pypy"))
    ]


def read_doc(path: Path) -> str:
    """A documentation file's text, gzipped or not (as the FAQ pairs read theirs)."""
    return decode(path, path.read_bytes())


def _readable(text: str) -> bool:
    """Prose or reference text, not a table of numbers, a licence or a list of file names."""
    words = text.split()
    if len(words) < MIN_WORDS:
        return False
    letters = sum(ch.isalpha() for ch in text)
    lowered = text.lower()
    return (
        letters / max(1, len(text)) >= 0.55
        and "permission is hereby granted" not in lowered
        and "copyright (c)" not in lowered
    )


def page_passages(kind: str, source: str, title: str, text: str, per_source: int = PER_SOURCE) -> list[Passage]:
    """Up to `per_source` readable chunks of one page, spread over it (its start, then further in)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    if len(text.encode()) > MAX_PAGE_BYTES:
        return []
    splitter = RecursiveCharacterTextSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP)
    chunks = [c for c in splitter.split_text(text) if _readable(c)]
    if not chunks:
        return []
    # its first chunk (what the page is, its synopsis) and others picked by a hash: a fixed choice, not always the next ones
    picked = chunks[:1] + sorted(chunks[1:], key=lambda c: _order_key(c, 0))[: per_source - 1]
    return [Passage(passage_id(source, c), kind, source, title, c) for c in picked]


def _man_pages(sources: Iterable[Source]) -> Iterator[tuple[str, str, str]]:
    for s in sources:
        try:
            yield f"man:{s.name}.{s.section}", s.stem, render(s)
        except (SourceMissing, RuntimeError, OSError, ValueError):
            continue


def _pydoc_pages(sources: Iterable[Source]) -> Iterator[tuple[str, str, str]]:
    for s in sources:
        try:
            yield f"pydoc:{s.name}", s.name, render(s)
        except (SourceMissing, RuntimeError, OSError):
            continue


def _doc_pages(paths: Iterable[Path]) -> Iterator[tuple[str, str, str]]:
    for path in paths:
        try:
            text = read_doc(path)
        except (OSError, EOFError, gzip.BadGzipFile):
            continue
        name = path.name[:-3] if path.name.endswith(".gz") else path.name
        yield f"doc:{path}", f"{path.parent.name} {name}", text


def _wiki_pages(path: Path) -> Iterator[tuple[str, str, str]]:
    if not path.is_file():
        return
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            yield f"wiki:{record['id']}", record["title"], record["text"]


@dataclass(frozen=True)
class Exclusions:
    """What generation must never read: the validation set's pages and the files kept as dev pairs."""

    man: frozenset[tuple[str, str]] = frozenset()  # (name, section)
    pydoc: frozenset[str] = frozenset()
    files: frozenset[str] = frozenset()  # absolute paths under /usr/share/doc


def candidate_passages(
    *,
    exclude: Exclusions,
    wiki_file: Path | None = None,
    seed: int = 0,
    per_source: int = PER_SOURCE,
    man_root: str | Path = "/usr/share/man",
    doc_root: str | Path = "/usr/share/doc",
) -> Iterator[Passage]:
    """Passages of every kind, interleaved by `WEIGHTS` in a fixed pseudo-random order of pages.

    Pages are rendered lazily (a man page takes about 0.1 s, and a run asks about a few thousand of
    tens of thousands), so the order, not a list, is what stays fixed between runs.
    """
    man = spread(
        [
            s
            for s in man_sources(man_root)
            if (s.name, s.section) not in exclude.man and (s.name, s.section[:1]) not in exclude.man
        ],
        family=lambda s: re.split(r"[-_.]", s.name)[0],
        name=lambda s: f"{s.name}.{s.section}",
        seed=seed,
        cap=FAMILY_CAP,
    )
    pydoc = sorted((s for s in pydoc_sources() if s.name not in exclude.pydoc), key=lambda s: _order_key(s.name, seed))
    docs = spread(
        [p for p in doc_files(doc_root) if str(p) not in exclude.files],
        family=lambda p: Path(p).relative_to(doc_root).parts[0],
        name=str,
        seed=seed,
        cap=FAMILY_CAP,
    )
    wiki_pages = sorted(_wiki_pages(wiki_file), key=lambda page: _order_key(page[0], seed)) if wiki_file else []
    streams = {
        "man": _man_pages(man),
        "pydoc": _pydoc_pages(pydoc),
        "doc": _doc_pages(docs),
        "wiki": iter(wiki_pages),
    }
    pending = dict.fromkeys(KINDS, 0)
    while streams:
        for kind in KINDS:
            if kind not in streams:
                continue
            pending[kind] += WEIGHTS[kind]
            while pending[kind] > 0 and kind in streams:
                try:
                    source, title, text = next(streams[kind])
                except StopIteration:
                    del streams[kind]
                    break
                for passage in page_passages(kind, source, title, text, 1 if kind == "wiki" else per_source):
                    pending[kind] -= 1
                    yield passage


def done_ids(path: Path) -> set[str]:
    """The passages an earlier run already wrote (a torn last line, from a killed run, is ignored)."""
    return {record["id"] for record in appended_objects(path) if "id" in record}


def generate_questions(
    passages: Iterable[Passage],
    ask: Callable[[str], str],
    out: Path,
    *,
    limit: int | None = None,
    time_limit: float | None = None,
    writer: str = "",
    progress: bool = True,
) -> dict:
    """Ask `ask` for each passage not yet in `out` and append its questions there; resumable.

    Stops after `limit` new passages or `time_limit` seconds, whichever first; returns counts.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    drop_torn_line(out)
    done = done_ids(out)
    start = time.monotonic()
    written = skipped = empty = 0
    bar = tqdm(total=limit, desc="questions", unit="passage", disable=not progress)
    with out.open("a", encoding="utf-8") as sink:
        for passage in passages:
            if passage.id in done:
                skipped += 1
                continue
            if (limit is not None and written >= limit) or (
                time_limit is not None and time.monotonic() - start > time_limit
            ):
                break
            began = time.monotonic()
            reply = ask(QUESTION_PROMPT.format(title=passage.title, text=passage.text))
            questions = parse_questions(reply)
            if not questions:
                empty += 1
            record = {
                **asdict(passage),
                "questions": with_derived(questions),
                "reply": reply,
                "writer": writer,
                "seconds": round(time.monotonic() - began, 2),
            }
            sink.write(json.dumps(record, ensure_ascii=False) + "\n")
            sink.flush()
            done.add(passage.id)
            written += 1
            bar.update(1)
    bar.close()
    return {"written": written, "already": skipped, "unparsed": empty, "seconds": round(time.monotonic() - start, 1)}
