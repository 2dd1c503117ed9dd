"""GNU Info manuals read as their nodes, one passage each ("HTTP Options (wget)"), without headers, menus
and underlines. Hand-written: no library on PyPI reads Info files."""

from __future__ import annotations

import re
from dataclasses import dataclass

SEPARATOR = "\x1f"
# ".info", and ".info-1", ".info-2" … for the parts of a manual split into several files
SUFFIX = re.compile(r"\.info(?:-\d+)?")
_FILE_SUFFIX = re.compile(SUFFIX.pattern + "$", re.IGNORECASE)  # "wget.info" in a node header -> "wget"
_HEADER = re.compile(r"File:\s*(?P<file>[^,\t]+?)\s*,\s*Node:\s*(?P<node>[^,\t]+?)\s*(?:,|\t|$)")
_UNDERLINE = re.compile(r"^[ \t]*([*=\-.])\1{2,}[ \t]*$", re.MULTILINE)
# "*Note Target::", "*note Label: Target.", across a line break; the label (else the target) is read
_NOTE = re.compile(r"\*[Nn]ote[ \t\n]+([^:]+?)::|\*[Nn]ote[ \t\n]+([^:]+?):[ \t\n]+[^.,]+([.,])")
_MENU = re.compile(r"^\* Menu:", re.MULTILINE)
_BLANK_RUNS = re.compile(r"\n{3,}")


@dataclass(frozen=True)
class Node:
    manual: str  # the Info file it belongs to, without ".info": "wget"
    name: str  # "HTTP Options"
    text: str

    @property
    def title(self) -> str:
        return f"{self.name} ({self.manual})"


def is_info(suffix: str) -> bool:
    return SUFFIX.fullmatch(suffix) is not None


_OTHER_MANUAL = re.compile(r"\((?P<manual>[^)]+)\)\s*(?P<node>.*)")


def _note(match: re.Match) -> str:
    target = " ".join((match.group(1) or match.group(2)).split())
    other = _OTHER_MANUAL.fullmatch(target)  # "(gcc)Bugs": a node of another manual
    if other:
        target = f"{other['node']} ({other['manual']})" if other["node"] else other["manual"]
    return f"see {target}{match.group(3) or ''}"


def _clean(body: str) -> str:
    menu = _MENU.search(body)
    if menu:
        body = body[: menu.start()]
    body = _UNDERLINE.sub("", body)
    body = _NOTE.sub(_note, body)
    return _BLANK_RUNS.sub("\n\n", body).strip()


def nodes(text: str) -> list[Node]:
    """The nodes of an Info file's text that hold more than their heading, in file order."""
    found = []
    for part in text.split(SEPARATOR)[1:]:  # before the first separator: the preamble
        part = part.lstrip("\r\n\f")
        first, _, body = part.partition("\n")
        header = _HEADER.match(first)
        if header is None or not header["node"].strip():  # the tag table, Emacs' local variables
            continue
        cleaned = _clean(body)
        if len(cleaned.splitlines()) <= 1:  # a heading over a menu, or nothing
            continue
        manual = _FILE_SUFFIX.sub("", header["file"].strip())
        found.append(Node(manual, header["node"].strip(), cleaned))
    return found
