"""`python -m lab datasets build-docs`: a documentation-domain validation set from text already on this machine.

PopQA measures the evaluator on Wikipedia, the domain it was trained on. This set asks how it does on
technical documentation that nobody in this project wrote: Python's own reference text (pydoc) for 15
standard-library modules and 15 man pages (git, coreutils-like tools, manpages' section 7). The
questions in `docs_questions.jsonl` were written and labelled by hand after reading the rendered
pages; they are for validation only and must never be used for training.

Nothing is copied into the repository: every page is rendered at build time, deterministically
(fixed locale, width, no hyphenation or justification, no memory addresses or install paths), and
the manifest keeps the sha256 of each rendered text so that two builds can be compared.

Each question names the page that answers it (`doc`, the file stem) and `evidence`: short exact
phrases, compared case-insensitively after collapsing whitespace. A chunk of that page is relevant
iff it contains one of them (`is_relevant`), which is how retrieval and the evaluator are scored.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from crag.evaluation.inputs import read_questions
from crag.jsonl import read_objects
from crag.text import folded
from lab.datasets.manuals import Source, SourceMissing, render
from lab.datasets.popqa import default_data_dir, interleave, web_records, write_records

QUESTIONS_FILE = Path(__file__).with_name("docs_questions.jsonl")
UNANSWERABLE_FILE = Path(__file__).with_name("docs_unanswerable.jsonl")  # validation only, like the questions
STYLES = ("how-to", "what-does", "which-option", "keywords", "vague", "typo-or-casual")
MAX_BYTES = 64 * 1024  # "about 60 KB": a bigger page would dominate the corpus (git-log, find are left out)


PYDOC_MODULES = (
    "json",
    "argparse",
    "subprocess",
    "shutil",
    "re",
    "functools",
    "itertools",
    "collections",
    "logging",
    "csv",
    "tempfile",
    "textwrap",
    "statistics",
    "hashlib",
    "difflib",
)
# git-man and manpages (signal.7, glob.7) are on every machine of this kind; ls, sort and date come with
# coreutils, xargs with findutils, tar and grep with their own packages: a minimal image that drops their
# pages fails the build, naming them. find(1) and git-log(1) are left out: 89 and 125 KB.
MAN_PAGES = (
    ("git-rebase", "1"),
    ("git-stash", "1"),
    ("git-commit", "1"),
    ("git-reset", "1"),
    ("git-bisect", "1"),
    ("git-worktree", "1"),
    ("gitignore", "5"),
    ("ls", "1"),
    ("tar", "1"),
    ("grep", "1"),
    ("sort", "1"),
    ("xargs", "1"),
    ("date", "1"),
    ("signal", "7"),
    ("glob", "7"),
)
SOURCES = tuple(Source("pydoc", m) for m in PYDOC_MODULES) + tuple(Source("man", n, s) for n, s in MAN_PAGES)


def is_relevant(text: str, evidence: list[str] | tuple[str, ...]) -> bool:
    """Whether a chunk (or page) contains one of a question's evidence phrases."""
    page = folded(text)
    return any(folded(phrase) in page for phrase in evidence)


def load_questions(path: str | Path | None = None) -> list[dict]:
    """The question records (default: the packaged file), checked: the reader's checks, then `doc`,
    `evidence` and `style`."""
    path = QUESTIONS_FILE if path is None else path
    records = []
    for question in read_questions(path):
        record = {
            "id": question.qid,
            "question": question.question,
            "answers": list(question.answers),
            **question.extra,
        }
        doc, evidence = record.get("doc"), record.get("evidence")
        if not isinstance(doc, str) or not doc:
            raise ValueError(f'{path}: question {question.qid} has no "doc"')
        if (
            not isinstance(evidence, list)
            or not evidence
            or not all(isinstance(e, str) and e.strip() for e in evidence)
        ):
            raise ValueError(f'{path}: question {question.qid} needs "evidence", a list of phrases')
        if record.get("style") not in STYLES:
            raise ValueError(
                f"{path}: question {question.qid} has style {record.get('style')!r}; choose one of {', '.join(STYLES)}"
            )
        records.append(record)
    return records


def check_questions(questions: list[dict], pages: dict[str, str], missing: dict[str, str]) -> None:
    """ValueError (one line) naming every page that questions need but did not render, else the first
    question whose page lacks one of its evidence phrases."""
    unrendered: dict[str, list[str]] = {}
    for q in questions:
        if q["doc"] not in pages:
            unrendered.setdefault(q["doc"], []).append(q["id"])
    if unrendered:
        raise ValueError(
            "; ".join(
                f"doc {doc!r} (question {', '.join(ids)}) did not render: "
                f"{missing.get(doc, 'it is not one of the sources')}"
                for doc, ids in unrendered.items()
            )
        )
    for q in questions:
        absent = [e for e in q["evidence"] if folded(e) not in folded(pages[q["doc"]])]
        if absent:
            raise ValueError(f"question {q['id']}: evidence {absent[0]!r} is not in {q['doc']}.txt")


def _tool_version(command: list[str]) -> str:
    """The first line of a tool's --version output, or "" when it cannot be run."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0] if lines else ""


def build_docs(
    out: str | Path,
    data_dir: str | Path | None = None,
    *,
    questions: str | Path | None = None,
    sources: tuple[Source, ...] | None = None,
) -> dict:
    """Render the sources and write docs/*.txt, questions.jsonl, kb.jsonl, web.jsonl and manifest.json.

    `questions` and `sources` default to the packaged file and SOURCES. Everything is read and checked
    before anything is written (the cheap checks first), so a failed build leaves `out` as it was.
    """
    out = Path(out).expanduser()
    data = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
    questions = Path(questions) if questions is not None else QUESTIONS_FILE
    sources = SOURCES if sources is None else sources
    records = load_questions(questions)
    web = web_records(data)
    pages: dict[str, str] = {}
    missing: dict[str, str] = {}
    for source in sources:
        try:
            pages[source.stem] = render(source)
        except SourceMissing as exc:
            missing[source.stem] = str(exc)
    too_big = [f"{stem} ({len(text.encode())} bytes)" for stem, text in pages.items() if len(text.encode()) > MAX_BYTES]
    if too_big:
        raise ValueError(f"rendered pages over {MAX_BYTES} bytes: {', '.join(too_big)}")
    check_questions(records, pages, missing)

    docs = out / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for stale in docs.glob("*.txt"):  # a page that no longer renders must not linger for `crag ingest`
        stale.unlink()
    for stem, text in pages.items():
        (docs / f"{stem}.txt").write_text(text, encoding="utf-8")
    (out / "questions.jsonl").write_bytes(questions.read_bytes())
    # the same, interleaved with hand-written questions the pages cannot answer (abstention, issue 11)
    write_records(
        out / "questions-with-unanswerable.jsonl",
        interleave([r for _, r in read_objects(questions)], [r for _, r in read_objects(UNANSWERABLE_FILE)]),
    )
    kb = [{"id": stem, "title": stem, "text": text} for stem, text in pages.items()]
    manifest = {
        "sources": [
            {
                "stem": s.stem,
                "kind": s.kind,
                "name": s.name,
                "section": s.section or None,
                "bytes": len(pages[s.stem].encode()),
                "sha256": hashlib.sha256(pages[s.stem].encode()).hexdigest(),
            }
            for s in sources
            if s.stem in pages
        ],
        "missing": [{"stem": stem, "reason": reason} for stem, reason in missing.items()],
        "python": sys.version.split()[0],
        "man": _tool_version(["man", "--version"]) if any(s.kind == "man" for s in sources) else "",
        "groff": _tool_version(["groff", "--version"]) if any(s.kind == "man" for s in sources) else "",
        "data_dir": str(data),
        "counts": {
            "docs": len(pages),
            "questions": len(records),
            "kb": write_records(out / "kb.jsonl", kb),
            "web": write_records(out / "web.jsonl", web),
        },
        "note": "validation only: never train on these questions or pages",
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest
