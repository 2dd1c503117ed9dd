"""reStructuredText (Sphinx sources) read as the text a reader of the built page sees.
Hand-written: docutils reports Sphinx's roles and directives as errors in place of their text, and Sphinx's
text builder needs the whole project to read one page."""

from __future__ import annotations

import re
from pathlib import Path

RST_SUFFIXES = (".rst", ".rest")

# a section title: a line underlined (and maybe overlined) by a run of one punctuation character
_TITLE = re.compile(
    r"^(?:(?P<over>[=\-~`:'\"^_*+#<>])(?P=over)+[ \t]*\n)?(?P<title>[ \t]*\S[^\n]*?)[ \t]*\n"
    r"(?P<underline>(?P<under>[=\-~`:'\"^_*+#<>])(?P=under)+)[ \t]*$",
    re.MULTILINE,
)
_ROLE = re.compile(r":[\w:+.-]+:`([^`]*)`")  # :command:`add_custom_target`, :ref:`text <target>`
_LITERAL = re.compile(r"``(.+?)``")
_LINK = re.compile(r"`([^`]+?)`__?(?!\w)")  # `text <https://…>`_, `General messages`_
_INTERPRETED = re.compile(r"(?<![\w`])`([^`\n]+)`(?![\w`])")  # `text` in the default role
_STRONG = re.compile(r"(?<![\w*])\*\*(\S(?:[^*]*?\S)?)\*\*(?![\w*])")
# a section's under- or overline, a simple table's borders, a grid table's rules
_ADORNMENT = re.compile(r"^[ \t]*(?:([=\-~`:'\"^_*+#<>])\1{2,}|=+(?:[ \t]+=+)+|\+(?:[-=]+\+)+)[ \t]*$")
_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\.[ \t]+(?P<name>[\w:-]+)::(?:[ \t]+(?P<args>.*?))?[ \t]*$")
_EXPLICIT = re.compile(r"^[ \t]*\.\.(?:[ \t]|$)")  # a comment, a link target, a substitution definition
_SUBSTITUTION = re.compile(r"^[ \t]*\.\.[ \t]+\|(?P<name>[^|\n]+)\|[ \t]+replace::[ \t]*(?P<text>.*)$", re.MULTILINE)
_REFERENCE = re.compile(r"\|([^|\s](?:[^|\n]*[^|\s])?)\|")
_OPTION = re.compile(r"^[ \t]+:[\w -]+:(?:[ \t].*)?$")  # a directive's options: ":maxdepth: 1"

# directives whose block is no text of the page: a table of contents, an index entry, an included program
HIDDEN = frozenset(
    "toctree contents index literalinclude highlight default-role role cmake-module image figure "
    "raw meta sectnum only ifconfig".split()
)
# directives whose argument is no text: the block is code in the named language
CODE = frozenset("code-block code sourcecode parsed-literal productionlist".split())
VERSIONS = {"versionadded": "New in version {}.", "versionchanged": "Changed in version {}.",
            "deprecated": "Deprecated since version {}."}  # fmt: skip
# an admonition's label ("Note:"); the generic `admonition` takes its argument as the label
ADMONITIONS = {
    **{name: name.capitalize() for name in "note warning tip important caution attention danger error hint".split()},
    "seealso": "See also",
}


def rst_title(text: str) -> str:
    """The first section title, inline markup reduced to its text; "" when there is none."""
    for match in _TITLE.finditer(text):
        title = match.group("title").strip()
        if len(match.group("underline")) >= len(title) and re.search(r"\w", title):
            return " ".join(inline(title).replace("`", "").replace("*", "").split())
    return ""


def role_text(content: str) -> str:
    """A role's text as Sphinx shows it: an explicit title, else the target (its last part after "~")."""
    content = content.strip()
    titled = re.fullmatch(r"(?s)(.*?\S)\s*<[^<>]*>", content)
    if titled:
        return titled.group(1)
    content = content.lstrip("!")
    return content[1:].rsplit(".", 1)[-1] if content.startswith("~") else content


def inline(text: str) -> str:
    """`text` with roles, literals, links and strong reduced to what a reader sees."""
    text = _ROLE.sub(lambda m: role_text(m.group(1)), text)
    text = _LITERAL.sub(r"\1", text)
    text = _LINK.sub(lambda m: re.sub(r"\s*<[^<>]*>$", "", m.group(1)), text)
    text = _INTERPRETED.sub(r"\1", text)
    return _STRONG.sub(r"\1", text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


INCLUDE_DEPTH = 3  # files included by included files, and no further (a file that includes itself)


def _included(args: str, folder: Path | None, depth: int) -> list[str]:
    """The rendered lines of an `.. include::`d file, relative to the page's folder; none if unreadable."""
    if folder is None or depth >= INCLUDE_DEPTH or not args:
        return []
    path = folder / args.strip().lstrip("/")
    try:
        included = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return rst_text(included, path.parent, depth + 1).splitlines()


def rst_text(text: str, folder: Path | None = None, depth: int = 0) -> str:
    """A page as its built page shows it: adornments and hidden blocks dropped, directives as Sphinx shows
    them ("Note:"), includes (read from `folder`) and substitutions in place, inline markup as text."""
    substitutions = {m.group("name"): inline(m.group("text").strip()) for m in _SUBSTITUTION.finditer(text)}
    out: list[str] = []
    skip_deeper = None  # dropping a block: the indentation its lines are deeper than
    in_options = False
    for line in text.splitlines():
        if skip_deeper is not None:
            if not line.strip() or _indent(line) > skip_deeper:
                continue
            skip_deeper = None
        if in_options and _OPTION.match(line):
            continue
        in_options = False
        directive = _DIRECTIVE.match(line)
        if directive:
            name, args = directive.group("name").lower(), inline(directive.group("args") or "")
            in_options = True
            if name in HIDDEN:
                skip_deeper = len(directive.group("indent"))
            elif name == "include":
                out += _included(directive.group("args") or "", folder, depth)
            elif name in VERSIONS:
                out.append(directive.group("indent") + VERSIONS[name].format(args))
            elif name == "admonition":
                out.append(f"{directive.group('indent')}{args}:")
            elif name in ADMONITIONS:
                out.append(f"{directive.group('indent')}{ADMONITIONS[name]}: {args}".rstrip())
            elif name not in CODE and args:
                out.append(directive.group("indent") + args)
            continue
        if _EXPLICIT.match(line):  # a comment or target and what is indented under it
            skip_deeper = _indent(line)
            continue
        if _ADORNMENT.match(line):
            continue
        if line.rstrip().endswith("::"):
            stripped = line.rstrip()[:-2].rstrip()
            if not stripped.strip():
                continue
            line = stripped if line.rstrip()[-3:-2].isspace() else stripped + ":"
            if _ADORNMENT.match(line):  # "::::" is a run of colons, not a paragraph
                continue
        out.append(inline(line))
    return _REFERENCE.sub(lambda m: substitutions.get(m.group(1), m.group(0)), "\n".join(out))
