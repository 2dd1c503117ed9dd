"""Build the documentation corpora's `crag eval run` inputs from the files on this machine.

Each folder here is one corpus: `corpus.json` names the files (as a user would point `crag ingest` at
them) and `questions.jsonl` holds hand-written questions, answerable (`answers`: strings the answer
must contain, as the paper's metric counts) and not (`"answerable": false`). The files are read with
`crag.load_documents`, the readers `crag ingest` uses, so the pages are what a user's collection
holds; nothing is copied into the repository. Validation only: never train on these.

    python -m lab.corpora.build valgrind-html [--out artifacts/corpora] [--data-dir ../shared/data]

writes OUT/NAME/kb.jsonl, web.jsonl (PopQA's web strips: a web that holds nothing about the
documentation), questions.jsonl (the answerable ones), questions-with-unanswerable.jsonl (both,
interleaved), pages/ (each page's text, for reading) and manifest.json (each page's sha256, so two
builds can be compared). Every answerable question is checked: some answer occurs in its `doc` page
(or, without `doc`, in some page), else the build fails naming it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path

from crag.evaluation.inputs import read_questions
from crag.indexing.pipeline import load_documents
from lab.datasets.popqa import interleave, web_records, write_records

HERE = Path(__file__).resolve().parent
STYLES = ("how-to", "what-does", "which-option", "keywords", "vague", "typo-or-casual")


def corpus_names() -> list[str]:
    return sorted(p.parent.name for p in HERE.glob("*/corpus.json"))


def page_name(source: str, n: int) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", source.rsplit("/", 1)[-1])[:80]
    return f"{n:03d}-{stem}.txt"


def check_questions(name: str, questions: list, pages: list[tuple[str, str]]) -> None:
    """ValueError naming the first answerable question none of whose answers its page (or any page) holds."""
    for q in questions:
        style = q.extra.get("style")
        if style not in STYLES:
            raise ValueError(f"{name}: question {q.qid} has style {style!r}; choose one of {', '.join(STYLES)}")
        if not q.answerable:
            continue
        doc = q.extra.get("doc")
        where = [text for source, text in pages if not doc or source == doc or source.endswith(f"/{doc}")]
        if doc and not where:
            raise ValueError(f"{name}: question {q.qid} names doc {doc!r}, which no page's source ends with")
        if not any(answer in text for answer in q.answers for text in where):
            raise ValueError(f"{name}: question {q.qid}: no answer of {list(q.answers)} occurs in {doc or 'any page'}")


def build(name: str, out: Path, data_dir: Path) -> dict:
    folder = HERE / name
    spec = json.loads((folder / "corpus.json").read_text(encoding="utf-8"))
    loaded = load_documents(spec["paths"])
    if loaded.unreadable:
        raise ValueError(f"{name}: unreadable files: {loaded.unreadable}")
    pages = [(d.metadata["source"], d.page_content) for d in loaded.documents]
    if not pages:
        raise ValueError(f"{name}: no pages read from {spec['paths']}")
    questions_file = folder / "questions.jsonl"
    questions = read_questions(questions_file) if questions_file.is_file() else []
    check_questions(name, questions, pages)

    target = out / name
    (target / "pages").mkdir(parents=True, exist_ok=True)
    for stale in (target / "pages").glob("*.txt"):
        stale.unlink()
    for n, (d, (source, text)) in enumerate(zip(loaded.documents, pages)):
        (target / "pages" / page_name(source, n)).write_text(f"{d.metadata.get('title', '')}\n{source}\n\n{text}\n")
    kb = [
        {"id": source, "title": d.metadata.get("title", ""), "text": text}
        for d, (source, text) in zip(loaded.documents, pages)
    ]
    raw = (
        [json.loads(line) for line in questions_file.read_text(encoding="utf-8").splitlines() if line.strip()]
        if questions
        else []
    )
    answerable = [r for r in raw if r.get("answerable", True) is not False]
    unanswerable = [r for r in raw if r.get("answerable", True) is False]
    counts = {
        "pages": len(kb),
        "files": len(loaded.files),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
    }
    counts["kb"] = write_records(target / "kb.jsonl", kb)
    counts["web"] = write_records(target / "web.jsonl", web_records(data_dir))
    if raw:
        write_records(target / "questions.jsonl", answerable)
        write_records(target / "questions-with-unanswerable.jsonl", interleave(answerable, unanswerable))
    manifest = {
        "corpus": name,
        **spec,
        "counts": counts,
        "bytes": sum(len(t.encode()) for _, t in pages),
        "pages": [
            {"source": s, "bytes": len(t.encode()), "sha256": hashlib.sha256(t.encode()).hexdigest()} for s, t in pages
        ],
        "note": "validation only: never train on these questions or pages",
    }
    (target / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"corpora (default: all of {', '.join(corpus_names())})")
    parser.add_argument("--out", type=Path, default=Path("artifacts/corpora"))
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("CRAG_DATA_DIR") or "../shared/data"))
    args = parser.parse_args(argv)
    for name in args.names or corpus_names():
        if name not in corpus_names():
            parser.error(f"no corpus {name!r}: choose from {', '.join(corpus_names())}")
        try:
            manifest = build(name, args.out, args.data_dir)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        c = manifest["counts"]
        print(
            f"{name}: {c['files']} files, {c['pages']} pages, {manifest['bytes'] / 1e3:.0f} kB; "
            f"{c['answerable']} + {c['unanswerable']} questions -> {args.out / name}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
