"""Labelled (question, passage) pairs in CRAG's `question [SEP] passage<TAB>label` format, and a JSONL
twin that also keeps the title and the question's group."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from crag.jsonl import read_objects

SEP = " [SEP] "


@dataclass(frozen=True)
class Pair:
    question: str
    passage: str
    label: int
    title: str = ""
    group: str = ""
    source: str = ""
    teacher: float | None = None  # the zero-shot teacher's probability of relevance (training pairs only)


def clean(text: str) -> str:
    """Text on one line, without a literal `[SEP]` that would move the question/passage boundary."""
    return " ".join(text.replace("[SEP]", " ").split())


def to_crag_line(pair: Pair) -> str:
    return f"{clean(pair.question)}{SEP}{clean(pair.passage)}\t{int(pair.label)}"


def parse_crag_line(line: str, lineno: int = 0, path: str | Path = "<pairs>") -> Pair:
    """Parse one line of CRAG's format; errors name the file and line."""
    body, tab, label = line.rstrip("\n").rpartition("\t")
    if not tab:
        raise ValueError(f"{path}:{lineno}: expected 'question [SEP] passage<TAB>label', found no tab")
    label = label.strip()
    if label not in {"0", "1"}:
        raise ValueError(f"{path}:{lineno}: label must be 0 or 1, got {label!r}")
    question, sep, passage = body.partition("[SEP]")
    if not sep:
        raise ValueError(f"{path}:{lineno}: no '[SEP]' between question and passage")
    return Pair(question=question.strip(), passage=passage.strip(), label=int(label))


def read_pairs(path: str | Path) -> list[Pair]:
    """Read pairs from CRAG's TSV format or from the JSONL twin (by the suffix)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"pairs file not found: {path}")
    pairs: list[Pair] = []
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            if path.suffix == ".jsonl":
                try:
                    pairs.append(Pair(**json.loads(line)))
                except (json.JSONDecodeError, TypeError) as exc:
                    raise ValueError(f"{path}:{lineno}: not a pair record: {exc}") from exc
            else:
                pairs.append(parse_crag_line(line, lineno, path))
    if not pairs:
        raise ValueError(f"{path}: no pairs")
    return pairs


def write_pairs(pairs: Iterable[Pair], directory: Path, name: str) -> tuple[Path, Path]:
    """Write `name.tsv` (CRAG's format) and `name.jsonl` (with titles and groups) side by side."""
    directory.mkdir(parents=True, exist_ok=True)
    tsv, jsonl = directory / f"{name}.tsv", directory / f"{name}.jsonl"
    with tsv.open("w", encoding="utf-8") as t, jsonl.open("w", encoding="utf-8") as j:
        for pair in pairs:
            t.write(to_crag_line(pair) + "\n")
            j.write(json.dumps(asdict(pair), ensure_ascii=False) + "\n")
    return tsv, jsonl


def iter_jsonl(path: Path) -> Iterator[dict]:
    for _, record in read_objects(path):
        yield record


__all__ = ["Pair", "clean", "iter_jsonl", "read_pairs", "write_pairs"]  # what callers outside the package use
