"""Reading JSON Lines files of objects (`.gz` too), with errors that name the file and the line."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from pathlib import Path


def read_objects(path: Path, errors: str = "strict") -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line; ValueError for invalid JSON or a non-object."""
    path = Path(path)
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors=errors) as lines:
        yield from parse_objects(lines, path)


def parse_objects(lines: Iterable[str], source: object) -> Iterator[tuple[int, dict]]:
    """`read_objects` over lines already read; `source` names them in errors."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{source}, line {number}: invalid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{source}, line {number}: expected a JSON object")
        yield number, record


def appended_objects(path: Path) -> Iterator[dict]:
    """The objects of a resumable run's JSONL file (none if missing), skipping a torn line."""
    path = Path(path)
    if not path.is_file():
        return
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                yield record


def drop_torn_line(path: Path) -> None:
    """Cut a torn last line (the run was killed mid-write) so that appending starts on a fresh line."""
    path = Path(path)
    if path.is_file() and path.stat().st_size:
        data = path.read_bytes()
        if not data.endswith(b"\n"):
            path.write_bytes(data[: data.rfind(b"\n") + 1])


__all__ = [
    "appended_objects",
    "drop_torn_line",
    "parse_objects",
    "read_objects",
]  # what callers outside the package use
