"""What reaches the terminal: text from documents, web pages and the model, made safe to print.

A page can carry terminal escape sequences (colours, a changed window title, an OSC 8 hyperlink whose target
is not the text shown) and bidirectional or invisible formatting characters that make the text read
otherwise than it is (U+202E turns "exe.txt" into "txt.exe"). Every line the CLI prints from a run goes
through `printable`; the JSON view keeps the same characters as `\\uXXXX` escapes, so no data is lost."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import typer

# escape sequences whole, so that none leaves its parameters behind: CSI ("ESC [ … final", 8-bit CSI), the
# string commands OSC/DCS/SOS/PM/APC up to their terminator (OSC 8 hyperlinks, window titles), and the
# two-character escapes. click.unstyle removes CSI colours only; an unterminated string command is left to
# the character filter below, which drops its introducer.
ESCAPE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]"
)
KEPT = frozenset("\n\t")
# joiners that scripts (Persian, the Indic scripts) and emoji sequences need; every other format character
# (bidirectional embeddings, overrides, isolates and marks, word joiners, tag characters) is dropped
JOINERS = frozenset("\u200c\u200d")
LINE_BREAKS = frozenset(("Zl", "Zp"))  # U+2028, U+2029: a line break to a terminal that knows them


def unsafe(char: str) -> bool:
    """Whether `char` would act on the terminal or hide or reorder text: a control (C0, C1, DEL) other than a
    newline or tab, a format character other than the joiners, a surrogate, or a line or paragraph separator."""
    if char in KEPT:
        return False
    category = unicodedata.category(char)
    return category in ("Cc", "Cs") or category in LINE_BREAKS or (category == "Cf" and char not in JOINERS)


def printable(text: str) -> str:
    """`text` without escape sequences and `unsafe` characters (separators become newlines)."""
    kept = []
    for char in ESCAPE.sub("", text):
        if unicodedata.category(char) in LINE_BREAKS:
            kept.append("\n")
        elif not unsafe(char):
            kept.append(char)
    return "".join(kept)


def escaped(dumped: str) -> str:
    """A JSON text with each `unsafe` character written as its escape (JSON's own structure is ASCII, so
    only characters inside strings change, and the values read back the same)."""
    return "".join("".join(f"\\u{unit:04x}" for unit in _utf16(c)) if unsafe(c) else c for c in dumped)


def _utf16(char: str) -> list[int]:
    data = char.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def echo(message: Any = None, **kwargs: Any) -> None:
    typer.echo(None if message is None else printable(str(message)), **kwargs)


def secho(message: Any = None, **kwargs: Any) -> None:
    typer.secho(None if message is None else printable(str(message)), **kwargs)
