"""This machine's own documentation as plain text: man pages and Python's pydoc, rendered the same way
every time.

Two users need the pages: the documentation validation set (`python -m lab datasets build-docs`), whose
questions name exact phrases of a page, and the evaluator's generated training questions
(`python -m lab evaluator generate-questions`), which must never read a page of that set. Both render
here, deterministically (fixed locale, width, no hyphenation or justification, no memory addresses
or install paths), so that the same page gives the same text.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

MAN_WIDTH = 80


@dataclass(frozen=True)
class Source:
    """A page to render: a module for pydoc, or a man page name and section."""

    kind: str  # "pydoc" or "man"
    name: str
    section: str = ""

    @property
    def stem(self) -> str:
        """The file stem, hence the chunks' title: `json`, `git-rebase`, `signal.7` (sections other than 1 shown)."""
        if self.kind == "man" and self.section != "1":
            return f"{self.name}.{self.section}"
        return self.name


class SourceMissing(LookupError):
    """The page cannot be rendered here (module not importable, man or the man page not installed)."""


_OVERSTRIKE = re.compile(r".\x08")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # `<object object at 0x7f…>` default values change every run
_FILE_SECTION = re.compile(r"^FILE\n(?:    .*\n|\n)*", re.MULTILINE)  # the install path, not documentation


def _tidy(text: str) -> str:
    """Overstrikes removed, tabs expanded, trailing blanks dropped, one final newline."""
    text = _OVERSTRIKE.sub("", text).expandtabs()
    lines = [line.rstrip() for line in text.splitlines()]
    return "\n".join(lines).strip("\n") + "\n"


_PYDOC = """import importlib, pydoc, sys
try:
    module = importlib.import_module(sys.argv[1])
except ImportError as exc:
    sys.stderr.write(f"module {sys.argv[1]} cannot be imported ({exc})")
    sys.exit(3)
sys.stdout.buffer.write(pydoc.render_doc(module, renderer=pydoc.plaintext).encode("utf-8"))
"""


def _render_pydoc(name: str) -> str:
    # a child process with a fixed hash seed: pydoc prints set values (hashlib.algorithms_available)
    # in hash order, which changes with every interpreter's random seed
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    # -P: the working directory is not put on sys.path, so a local json.py cannot stand in for the module
    done = subprocess.run([sys.executable, "-P", "-c", _PYDOC, name], env=env, capture_output=True, timeout=120)
    if done.returncode == 3:
        raise SourceMissing(done.stderr.decode(errors="replace"))
    if done.returncode != 0:
        raise RuntimeError(f"pydoc failed for {name}: {done.stderr.decode(errors='replace').strip()[-300:]}")
    return _ADDRESS.sub("", _FILE_SECTION.sub("", _tidy(done.stdout.decode("utf-8"))))


def _render_man(name: str, section: str) -> str:
    if shutil.which("man") is None:
        raise SourceMissing("the man command is not installed")
    # a fixed locale and width, no hyphenation (--nh) or justification (--nj): words never split across
    # lines and spacing stays single, so the same page renders the same text and phrases match
    env = {**os.environ, "LC_ALL": "C.UTF-8", "MANWIDTH": str(MAN_WIDTH), "MAN_KEEP_FORMATTING": "0"}
    env.pop("MANPAGER", None)
    env.pop("MANOPT", None)
    found = subprocess.run(["man", "-w", section, name], env=env, capture_output=True, text=True, timeout=60)
    if found.returncode != 0:
        raise SourceMissing(f"man page {name}({section}) is not installed")
    done = subprocess.run(
        ["man", "--nh", "--nj", "-P", "cat", section, name], env=env, capture_output=True, timeout=120
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise SourceMissing(f"man {section} {name} failed: {done.stderr.decode(errors='replace').strip()[:200]}")
    return _tidy(done.stdout.decode("utf-8", errors="replace"))


def render(source: Source) -> str:
    """The page's plain text; SourceMissing if it cannot be rendered on this machine."""
    if source.kind == "pydoc":
        return _render_pydoc(source.name)
    if source.kind == "man":
        return _render_man(source.name, source.section)
    raise ValueError(f"unknown source kind {source.kind!r}")
