"""Which files `crag ingest` reads, and their bytes as the readers need them.
A file is read by its suffix; `X.gz` as `X` (Debian compresses its longer docs), up to `MAX_DECOMPRESSED`
bytes. A file with no file type in its name (`LICENSE`, `FAQ`) is read when it is plain text."""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterable
from pathlib import Path

from crag.indexing.info import is_info
from crag.indexing.readers import MARKDOWN_SUFFIXES
from crag.indexing.rst import RST_SUFFIXES

TEXT_SUFFIXES = (".txt", *MARKDOWN_SUFFIXES, *RST_SUFFIXES, ".html", ".htm", ".jsonl")
SUFFIXES = (*TEXT_SUFFIXES, ".pdf")
COMPRESSED = ".gz"
MAX_DECOMPRESSED = 64 * 1024 * 1024  # a document of plain text this long is already a book shelf
BINARY_SNIFF = 8000  # bytes looked at, as git does to call a file binary
_GZIP_ERRORS = (OSError, EOFError, zlib.error)  # a broken stream (gzip.BadGzipFile is an OSError) or one cut short


class UnreadableFile(ValueError):
    """A file whose bytes cannot be had (a broken or oversized gzip stream); the message says why."""


def kind(path: Path) -> str:
    """The suffix a file is read by, lower-cased: its own, or for `X.gz` the suffix of `X`."""
    suffix = path.suffix.lower()
    return Path(path.stem).suffix.lower() if suffix == COMPRESSED else suffix


def stem(path: Path) -> str:
    """The file's name without the suffixes it is read by: "README" for README.md.gz, "MPL-2.0" for MPL-2.0."""
    inner = Path(path.stem) if path.suffix.lower() == COMPRESSED else path
    name = inner.name if untyped(path) else inner.stem
    return name or path.name


# a short lower-case word with a letter ("py", "mp4"); "MPL-2.0" or "README.Debian" is part of the name
FILE_TYPE = re.compile(r"\.(?=[a-z0-9]*[a-z])[a-z0-9]{1,5}")
# the lines that give away a manual page's troff source ("ls.1"): its header, a redirect, a comment
TROFF = re.compile(rb"^(?:\.(?:TH|Dd|so|SH)\s|\.\\\"|'\\\")", re.MULTILINE)


def untyped(path: Path) -> bool:
    """Whether the file's name (for `X.gz`, of `X`) carries no file type: "LICENSE", "FAQ.gz", "MPL-2.0"."""
    suffix = Path(path.stem).suffix if path.suffix.lower() == COMPRESSED else path.suffix
    return not (FILE_TYPE.fullmatch(suffix) or suffix.lower() in SUFFIXES or is_info(suffix.lower()))


def plain_text(path: Path) -> bool:
    """Whether a file's first bytes are text, and neither a script (`#!`) nor troff."""
    try:
        head = _head(path)
    except OSError:
        return False
    return bool(head.strip()) and not _binary(head) and not head.startswith(b"#!") and not TROFF.search(head)


def supported(path: Path) -> bool:
    suffix = kind(path)
    return suffix in SUFFIXES or is_info(suffix) or (untyped(path) and plain_text(path))


def unsupported_message(path: Path) -> str:
    if untyped(path):
        return (
            f"{path}: no file type in its name, and not plain text (empty, binary, a script or a manual page's "
            "troff source: save what `man` shows, `man ./page.1 > page.txt`, and ingest that)"
        )
    shown = "".join(path.suffixes[-2:]) if path.suffix.lower() == COMPRESSED else path.suffix
    return (
        f"{path}: unsupported file type {shown!r}; supported: {', '.join(SUFFIXES)}, .info "
        f"(GNU Info manuals; and each compressed, {COMPRESSED}), and plain text files with no type in their "
        "name (LICENSE, FAQ)"
    )


def read_bytes(path: Path) -> bytes:
    """The file's bytes, decompressed when `.gz`; `UnreadableFile` for a broken or oversized stream."""
    if path.suffix.lower() != COMPRESSED:
        return path.read_bytes()
    try:
        with gzip.open(path, "rb") as stream:
            data = stream.read(MAX_DECOMPRESSED + 1)
    except _GZIP_ERRORS as exc:
        raise UnreadableFile(f"not a readable gzip file ({exc})") from exc
    if len(data) > MAX_DECOMPRESSED:
        raise UnreadableFile(f"decompresses to more than {MAX_DECOMPRESSED:,} bytes")
    return data


def read_text(path: Path) -> str:
    return read_bytes(path).decode("utf-8", errors="replace")


def find_files(paths: Iterable[str | Path]) -> tuple[list[Path], list[Path]]:
    """The supported files named by `paths` (folders searched recursively, hidden ones ignored) and the
    unsupported ones skipped inside folders; a file named explicitly must be supported."""
    found: dict[Path, None] = {}  # ordered set: a file named twice is read once
    skipped: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if not child.is_file() or any(part.startswith(".") for part in child.relative_to(path).parts):
                    continue
                if supported(child):
                    found[child.resolve()] = None
                else:
                    skipped.append(child)
        elif path.is_file():
            if not supported(path):
                raise ValueError(unsupported_message(path))
            found[path.resolve()] = None
        else:
            raise FileNotFoundError(f"no such file or folder: {path}")
    return list(found), skipped


def _head(path: Path) -> bytes:
    """The first `BINARY_SNIFF` bytes, decompressed; none for a broken gzip stream."""
    if path.suffix.lower() != COMPRESSED:
        with path.open("rb") as handle:
            return handle.read(BINARY_SNIFF)
    try:
        with gzip.open(path, "rb") as stream:
            return stream.read(BINARY_SNIFF)
    except _GZIP_ERRORS:
        return b""


def is_binary(path: Path) -> bool:
    """Whether a file's first bytes hold a NUL (as git decides) or more than 10% control characters."""
    return _binary(_head(path))


def _binary(head: bytes) -> bool:
    if b"\0" in head:
        return True
    controls = sum(1 for byte in head if (byte < 32 and byte not in b"\t\n\r\f\b\x1b") or byte == 127)
    return bool(head) and controls / len(head) > 0.1


def split_binary(files: list[Path]) -> tuple[list[Path], list[Path]]:
    """(readable files, binary files): a file with a text suffix must hold text."""
    binary = {file for file in files if kind(file) in TEXT_SUFFIXES and is_binary(file)}
    return [file for file in files if file not in binary], [file for file in files if file in binary]
