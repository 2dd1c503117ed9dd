"""How `crag ingest` reads HTML (trafilatura), PDF (pypdf), Markdown and terminal output saved as text.
A PDF becomes one passage per page, its source `…#page=N` (RFC 8118). Markdown's YAML front matter is
metadata, its `title` the page's, its `description` (or `summary`) the text's start."""

from __future__ import annotations

import datetime
import html
import io
import itertools
import logging
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import lxml.html
import yaml
from langchain_core.documents import Document
from lxml.etree import ParserError
from markdown_it import MarkdownIt

from crag.english import KNOWN_WORD_ZIPF, zipf
from crag.indexing import myst
from crag.passages import passage
from crag.text import folded

_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
# ECMA-48 escape sequences (CSI, OSC, two-byte); hand-written: click.unstyle knows only CSI
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?")
_OVERSTRIKE = re.compile(r"[^\n\x08]\x08")  # "c BS c" (bold), "_ BS c" (underline): the last one written stays


def terminal_text(text: str) -> str:
    """`text` without escape sequences and backspace overstrikes, as `col -b` does for a saved `man` page."""
    if "\x1b" not in text and "\x08" not in text:
        return text
    text = _ESCAPES.sub("", text)
    while True:  # "_ BS _ BS c": each pass removes one layer
        stripped = _OVERSTRIKE.sub("", text)
        if stripped == text:
            return stripped.replace("\x08", "")
        text = stripped


_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)
SUMMARY_FIELDS = ("description", "summary")  # front matter fields that say in a line what the page is about
MARKDOWN_SUFFIXES = (".md", ".markdown")


@dataclass(frozen=True)
class MarkdownPage:
    """A Markdown file's text (its summary first), title ("" when none) and front matter's other fields."""

    text: str
    title: str
    fields: dict[str, Any] = field(default_factory=dict)


def _plain(value: Any) -> bool:
    """A scalar, or a list of scalars; nested values are dropped, as YAML aliases can expand without bound."""
    scalar = (str, int, float, bool, datetime.date)
    return isinstance(value, scalar) or (isinstance(value, list) and all(isinstance(v, scalar) for v in value))


def _front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(the front matter's fields, the text after it); ({}, text) when there is no YAML mapping."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, text
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return {}, text
    if not isinstance(data, dict):
        return {}, text
    return {str(k): v for k, v in data.items() if v is not None and _plain(v)}, text[match.end() :]


def _first_heading(text: str) -> str:
    """The plain text of the first level-1 heading, found by a parser (not a "# comment" in a code block)."""
    tokens = MarkdownIt("commonmark").parse(text)
    for opening, inline in itertools.pairwise(tokens):
        if opening.type == "heading_open" and opening.tag == "h1":
            # the words a reader sees: "# The `npm ci` [command](x)" is "The npm ci command"
            words = "".join(c.content if c.type in ("text", "code_inline") else " " for c in inline.children or [])
            return " ".join(words.split())
    return ""


# blocks end with a blank line (where the splitter cuts first), lines with a line break
_PARAGRAPH_TAGS = frozenset("p h1 h2 h3 h4 h5 h6 pre blockquote table ul ol hr div details".split())
_LINE_TAGS = frozenset("li tr br dd dt summary".split())


def markdown_plain(body: str) -> str:
    """Markdown as its rendered page reads: a line per block, "- " before a list item, no markup (which would
    reach quotes, embeddings and the evaluator)."""
    rendered = myst.render(body)
    if not rendered.strip():
        return ""
    root = lxml.html.fragment_fromstring(rendered, create_parent="div")
    for element in root.iter():
        if not isinstance(element.tag, str):  # a comment: no text of the page
            continue
        # between blocks, markdown-it's own line breaks go (an inline element's tail is text: kept)
        tail = (element.tail or "") if (element.tail or "").strip() else ""
        if element.tag == "li":
            parent = element.getparent()
            start = (parent.get("start") or "1") if parent is not None else "1"
            number = (int(start) if start.isdigit() else 1) + (parent.index(element) if parent is not None else 0)
            mark = f"{number}. " if parent is not None and parent.tag == "ol" else "- "
            element.text = mark + (element.text or "").lstrip()
        elif element.tag in ("tr", "thead", "tbody"):  # a table's rows, one a line
            element.text = (element.text or "").strip()
            if element.tag != "tr":
                element.tail = tail
        if element.tag in _PARAGRAPH_TAGS:
            element.tail = "\n\n" + tail
        elif element.tag in _LINE_TAGS:
            element.tail = "\n" + tail
        elif element.tag in ("td", "th"):
            element.tail = " " + tail
    text = "\n".join(line.rstrip() for line in root.text_content().splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def markdown_text(raw: str) -> MarkdownPage:
    fields, body = _front_matter(terminal_text(raw))
    summary = next((str(fields[k]).strip() for k in SUMMARY_FIELDS if isinstance(fields.get(k), str)), "")
    plain = markdown_plain(body)
    text = f"{summary}\n\n{plain}" if summary else plain
    title = fields.pop("title", "")
    title = " ".join(str(title).split()) if isinstance(title, (str, int, float)) and not isinstance(title, bool) else ""
    return MarkdownPage(text=text, title=title or _first_heading(body), fields=fields)


# navigation that documentation generators put in the page body, where trafilatura keeps it (texinfo, DocBook)
NAVIGATION_XPATHS = [
    '//div[@class="header"]',
    '//div[contains(concat(" ", normalize-space(@class), " "), " nav-panel ")]',
    '//div[@class="navheader" or @class="navfooter"]',
    '//*[@role="navigation"]',
    # a heading's permalink, a link whose text is only a sign: "#", Sphinx's "¶", "§"
    '//a[@href and (normalize-space(.)="#" or normalize-space(.)="\u00b6" or normalize-space(.)="\u00a7")]',
]


def html_text(raw: str) -> tuple[str, str]:
    """(main text, <title> or "") of an HTML page: trafilatura's main text, else all visible text."""
    import trafilatura
    from trafilatura.baseline import html2txt

    text = (
        trafilatura.extract(raw, include_comments=False, favor_recall=True, prune_xpath=NAVIGATION_XPATHS)
        or html2txt(raw)
        or ""
    )
    match = _HTML_TITLE.search(raw)
    return text, " ".join(html.unescape(match.group(1)).split()) if match else ""


def unindexed_reason(raw: str) -> str | None:
    """Why a page should stay out of an index by its own markup (robots noindex, as mdBook's print.html, or a
    meta refresh), or None: such pages make retrieval repeat itself."""
    if "<meta" not in raw.lower():  # nothing to look for: skip the parse
        return None
    try:
        root = lxml.html.fromstring(raw)
    except (ParserError, ValueError):  # an empty or unparseable page says nothing about itself
        return None
    for meta in root.iter("meta"):
        name = (meta.get("name") or "").strip().lower()
        content = (meta.get("content") or "").lower()
        if name in ("robots", "googlebot") and "noindex" in re.split(r"[\s,]+", content):
            return "it asks not to be indexed (robots noindex)"
        if (meta.get("http-equiv") or "").strip().lower() == "refresh" and re.search(r"url\s*=", content):
            target = re.split(r"url\s*=\s*", meta.get("content") or "", maxsplit=1, flags=re.IGNORECASE)[-1]
            return f"it only redirects to {target.strip(chr(39) + chr(34) + ' ')}"
    return None


class UnreadablePdf(ValueError):
    """A PDF no text can be taken from (encrypted, damaged or scanned); the message says why."""


def page_source(source: str, page: int) -> str:
    """`report.pdf#page=3`: the source of one page (1-based)."""
    return f"{source}#page={page}"


@dataclass(frozen=True)
class PdfPages:
    """The pages of one PDF that have text, as passages, and the sources of those that have none."""

    documents: list[Document]
    empty: list[str]


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """Hold back pypdf's logs, which do not name the file; the ingest report does."""
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _title(reader) -> str:
    """The PDF's own title, "" when it has none or its metadata cannot be read."""
    try:
        info = reader.metadata
        return " ".join(str(info.title or "").split()) if info else ""
    except Exception:  # a damaged information dictionary
        return ""


def without_running_lines(pages: list[str]) -> list[str]:
    """The pages' texts without running headers and footers: a first or last line found at the same end of
    two pages or more, numbers aside. Hand-written: pypdf has no notion of a running header."""
    ends = [(lines[0], lines[-1]) if (lines := [x for x in text.splitlines() if x.strip()]) else None for text in pages]

    def masked(line: str) -> str:
        return re.sub(r"\d+", "#", " ".join(line.split()))

    firsts = Counter(masked(e[0]) for e in ends if e)
    lasts = Counter(masked(e[1]) for e in ends if e)
    cleaned = []
    for text, end in zip(pages, ends):
        lines = text.splitlines()
        if end and firsts[masked(end[0])] >= 2:
            lines.remove(end[0])
        if end and lasts[masked(end[1])] >= 2 and end[1] in lines:
            del lines[len(lines) - 1 - lines[::-1].index(end[1])]
        # a page of one line ("Slide 1") keeps it
        cleaned.append("\n".join(lines) if any(x.strip() for x in lines) else text)
    return cleaned


REPEATED_IN = 5  # texts that must hold a line for it to be boilerplate rather than a page's own words
HEADING_WORDS = 12  # "Appendix G - How Rust is Made and “Nightly Rust”": a first line this short may be a heading


def repeated_only(texts: list[str]) -> list[bool]:
    """Per text, whether it is a heading over lines only boilerplate: each held by at least `REPEATED_IN`
    texts (an old edition's chapter reduced to a "no longer distributed" notice)."""

    split = [[folded(line) for line in text.splitlines() if line.strip()] for text in texts]
    holders = Counter(line for each in split for line in set(each))
    return [
        len(each) > 1
        and len(each[0].split()) <= HEADING_WORDS
        and not each[0].endswith(".")
        and all(holders[x] >= REPEATED_IN for x in each[1:])
        for each in split
    ]


# a word broken over a line with a hyphen: letters, "-", the line break, letters (no digits: "1990-\n1995")
_BROKEN_WORD = re.compile(r"([^\W\d_]+)[-\u00ad\u2010][ \t]*\r?\n[ \t]*([^\W\d_]+)")  # -, soft hyphen, hyphen


def joined_hyphens(text: str) -> str:
    """`text` with words hyphenated at a line's end made whole: joined when English knows the word, else with
    the hyphen ("well-known"). Hand-written: pypdf does not dehyphenate."""
    if not any(h in text for h in "-\u00ad\u2010"):
        return text

    def join(match: re.Match[str]) -> str:
        head, tail = match.group(1), match.group(2)
        return head + tail if zipf(head + tail) >= KNOWN_WORD_ZIPF else f"{head}-{tail}"

    return _BROKEN_WORD.sub(join, text)


def read_pdf(data: bytes, source: str, default_title: str) -> PdfPages:
    """One passage per page with text, titled by the PDF's metadata or `default_title`; `UnreadablePdf` for
    one encrypted with a password, damaged, or without text."""
    from pypdf import PasswordType, PdfReader
    from pypdf.errors import DependencyError

    try:
        with _quiet_pypdf():
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
                raise UnreadablePdf("encrypted with a password; decrypt it first (e.g. qpdf --decrypt)")
            title, texts = _title(reader), without_running_lines([page.extract_text() for page in reader.pages])
    except UnreadablePdf:
        raise
    except DependencyError as exc:  # AES encryption without the package pypdf decrypts it with
        raise UnreadablePdf(f"encrypted: {exc}") from exc
    except Exception as exc:  # pypdf raises many kinds on a damaged file; one bad file must not stop the rest
        raise UnreadablePdf(f"damaged or not a PDF ({type(exc).__name__}: {exc})") from exc
    if not any(text.strip() for text in texts):
        raise UnreadablePdf(
            f"no text in any of its {len(texts)} pages (scanned? it needs OCR first)" if texts else "it has no pages"
        )
    title = title or default_title
    documents, empty = [], []
    for number, text in enumerate(texts, start=1):
        where = page_source(source, number)
        if text.strip():
            documents.append(passage(joined_hyphens(text), title=title, source=where, page=number))
        else:
            empty.append(where)
    return PdfPages(documents, empty)
