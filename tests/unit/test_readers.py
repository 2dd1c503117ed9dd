"""PDF reading (pages, titles, no-text pages, encryption, damage), PDFs among files, URL lists,
terminal output saved as text, and Markdown's front matter and title.

The PDFs are written by `tests/pdfs.py`; no model or store is loaded here.
"""

from __future__ import annotations

import datetime
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crag.indexing.pipeline import load_documents, split_documents
from crag.indexing.readers import (
    UnreadablePdf,
    html_text,
    joined_hyphens,
    markdown_plain,
    markdown_text,
    read_pdf,
    repeated_only,
    terminal_text,
    unindexed_reason,
    without_running_lines,
)
from crag.indexing.rst import rst_title
from crag.indexing.urls import is_url, read_url_list
from tests.pdfs import encrypted, pdf_bytes

PAGES = [
    "The Analytical Engine was a design for a general-purpose mechanical computer.",
    "Ada Lovelace published the first algorithm intended for the engine (in 1843).",
    "Charles Babbage never finished building it; parts are in the Science Museum.",
]


def test_each_page_is_a_passage_whose_source_names_it():
    pages = read_pdf(pdf_bytes(PAGES, title="The  Engine"), "/docs/engine.pdf", "engine")
    assert [d.page_content.strip() for d in pages.documents] == PAGES
    assert [d.metadata["source"] for d in pages.documents] == [f"/docs/engine.pdf#page={n}" for n in (1, 2, 3)]
    assert [d.metadata["page"] for d in pages.documents] == [1, 2, 3]
    assert {d.metadata["title"] for d in pages.documents} == {"The Engine"}  # the PDF's own, spaces tidied
    assert pages.empty == []


def test_lines_are_kept_and_the_title_falls_back_to_the_given_one():
    pages = read_pdf(pdf_bytes(["first line\nsecond line (with parentheses)"]), "a.pdf", "a")
    assert pages.documents[0].page_content.split("\n") == ["first line", "second line (with parentheses)"]
    assert pages.documents[0].metadata["title"] == "a"


def test_running_headers_and_footers_are_dropped():
    pages = [
        "Chapter 1: Setup 1\nInstall the library first.\n1",
        "Chapter 1: Setup 2\nThen configure it.\nChapter 1 ends here.\n2",
        "Chapter 2: Use 3\nCall the parser.\n3",
        "Index\n",
    ]
    texts = [d.page_content.strip() for d in read_pdf(pdf_bytes(pages), "m.pdf", "m").documents]
    assert texts == [
        "Install the library first.",
        "Then configure it.\nChapter 1 ends here.",
        "Chapter 2: Use 3\nCall the parser.",  # a first line seen once may be a heading, and stays
        "Index",
    ]
    assert without_running_lines(["Only one page 1\ntext\n1"]) == ["Only one page 1\ntext\n1"]
    assert without_running_lines(["Slide 1", "Slide 2", "Slide 3"]) == ["Slide 1", "Slide 2", "Slide 3"]


def test_words_hyphenated_at_a_line_end_are_made_whole():
    [page] = read_pdf(
        pdf_bytes(["The declara-\ntions were se-\nlected by hand, a well-\nknown way."]), "m.pdf", "m"
    ).documents
    assert " ".join(page.page_content.split()) == "The declarations were selected by hand, a well-known way."
    assert joined_hyphens("ELE-\n   MENT, well-\nknown, self\u00ad\ncontained") == "ELEMENT, well-known, self-contained"
    # digits, a dash between spaces and a hyphen inside a line are left as they are
    assert joined_hyphens("1990-\n1995, a -\nb, x-ray") == "1990-\n1995, a -\nb, x-ray"


def test_pages_without_text_are_named_and_a_pdf_with_none_is_unreadable():
    pages = read_pdf(pdf_bytes([PAGES[0], "", PAGES[2], ""]), "scan.pdf", "scan")
    assert [d.metadata["page"] for d in pages.documents] == [1, 3]
    assert pages.empty == ["scan.pdf#page=2", "scan.pdf#page=4"]
    with pytest.raises(UnreadablePdf, match=r"no text in any of its 2 pages \(scanned\? it needs OCR first\)"):
        read_pdf(pdf_bytes(["", ""]), "scanned.pdf", "scanned")
    with pytest.raises(UnreadablePdf, match="it has no pages"):
        read_pdf(pdf_bytes([]), "hollow.pdf", "hollow")


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-128", "AES-256"])
def test_encrypted_pdfs_open_with_the_empty_password_or_are_unreadable(algorithm):
    plain = pdf_bytes(PAGES[:2], title="Locked")
    restricted = read_pdf(encrypted(plain, "", algorithm), "r.pdf", "r")  # only an owner password
    assert [d.page_content.strip() for d in restricted.documents] == PAGES[:2]
    assert restricted.documents[0].metadata["title"] == "Locked"
    with pytest.raises(UnreadablePdf, match=r"^encrypted with a password; decrypt it first"):
        read_pdf(encrypted(plain, "secret", algorithm), "s.pdf", "s")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"this is not a PDF at all, only some words",
        bytes(range(256)) * 20,
        pdf_bytes(PAGES)[:200],  # cut off: no page tree, no cross-reference table
    ],
    ids=["empty", "words", "noise", "truncated"],
)
def test_damaged_pdfs_are_unreadable_with_a_one_line_reason(data):
    with pytest.raises(UnreadablePdf, match=r"^damaged or not a PDF \(\w+: ") as info:
        read_pdf(data, "bad.pdf", "bad")
    assert "\n" not in str(info.value)


def test_pdfs_in_folders_are_read_and_the_bad_ones_reported(tmp_path):
    (tmp_path / "papers" / "old").mkdir(parents=True)
    (tmp_path / "papers" / "engine.pdf").write_bytes(pdf_bytes(PAGES, title="Engine"))
    (tmp_path / "papers" / "old" / "partly-scanned.PDF").write_bytes(pdf_bytes(["", PAGES[1]]))
    (tmp_path / "papers" / "scanned.pdf").write_bytes(pdf_bytes(["", ""]))
    (tmp_path / "papers" / "locked.pdf").write_bytes(encrypted(pdf_bytes(PAGES), "secret"))
    (tmp_path / "papers" / "broken.pdf").write_bytes(pdf_bytes(PAGES)[:300])
    (tmp_path / "papers" / "notes.txt").write_text("Babbage designed the Difference Engine first.")

    loaded = load_documents([tmp_path / "papers"])
    root = (tmp_path / "papers").resolve()
    assert [f.name for f in loaded.files] == ["engine.pdf", "notes.txt", "partly-scanned.PDF"]
    assert loaded.binary == []  # a PDF's bytes are binary by nature: not sniffed as a text file's are
    sources = [d.metadata["source"] for d in loaded.documents]
    assert sources == [
        *(f"{root / 'engine.pdf'}#page={n}" for n in (1, 2, 3)),
        str(root / "notes.txt"),
        f"{root / 'old' / 'partly-scanned.PDF'}#page=2",
    ]
    assert loaded.empty_pages == [f"{root / 'old' / 'partly-scanned.PDF'}#page=1"]
    reasons = dict(line.split(": ", 1) for line in loaded.unreadable)
    assert list(reasons) == [str(root / name) for name in ("broken.pdf", "locked.pdf", "scanned.pdf")]
    assert reasons[str(root / "broken.pdf")].startswith("damaged or not a PDF")
    assert reasons[str(root / "locked.pdf")].startswith("encrypted with a password")
    assert reasons[str(root / "scanned.pdf")].startswith("no text in any of its 2 pages")


def test_chunks_of_a_pdf_keep_their_page():
    long_page = "\n".join(f"Sentence {i} about the Analytical Engine and its punched cards." for i in range(40))
    pages = read_pdf(pdf_bytes([long_page, PAGES[1]]), "book.pdf", "book").documents
    chunks = split_documents(pages, chunk_size=300, chunk_overlap=30)
    assert len(chunks) > 5
    for chunk in chunks:
        page = chunk.metadata["page"]
        assert chunk.metadata["source"] == f"book.pdf#page={page}"
        assert chunk.page_content in pages[page - 1].page_content  # a chunk never runs over a page break
    assert chunks[-1].metadata["page"] == 2 and chunks[-1].page_content.strip() == PAGES[1]


def test_url_lists_and_url_arguments(tmp_path):
    listing = tmp_path / "urls.txt"
    listing.write_text(
        "# pages to ingest\n\nhttps://example.org/a\n  http://example.org/b.pdf  \n\n# the end\nHTTPS://EXAMPLE.ORG/C\n"
    )
    assert read_url_list(listing) == ["https://example.org/a", "http://example.org/b.pdf", "HTTPS://EXAMPLE.ORG/C"]
    listing.write_text("https://example.org/a\nexample.org/no-scheme\n")
    with pytest.raises(ValueError, match=r"urls\.txt, line 2: not an http\(s\) URL: 'example\.org/no-scheme'"):
        read_url_list(listing)
    with pytest.raises(ValueError, match="cannot read the URL list .*missing.txt"):
        read_url_list(tmp_path / "missing.txt")
    assert [is_url(s) for s in ("https://x.org", "HTTP://x.org/p", "docs/a.pdf", "ftp://x.org/f", "C:\\a")] == [
        True,
        True,
        False,
        False,
        False,
    ]


# what `man grep > grep.txt` saves with groff's SGR escapes, and the older overstrike form of `man | cat`
MAN_SGR = (
    "\x1b[1mNAME\x1b[0m\n       grep - print lines that match\n         \x1b[1m+\x08o mandb     \x1b[22m- caches\n"
)
MAN_OVERSTRIKE = "N\bNA\bAM\bME\bE\n       g\bgr\bre\bep\bp -r _\bf_\bi_\bl_\be\n"


def test_terminal_formatting_is_removed_as_col_b_would():
    assert terminal_text(MAN_SGR) == "NAME\n       grep - print lines that match\n         o mandb     - caches\n"
    assert terminal_text(MAN_OVERSTRIKE) == "NAME\n       grep -r file\n"
    assert (
        terminal_text("\x1b]8;;https://example.org\x1b\\a link\x1b]8;;\x1b\\ and \x1b[38;5;196mred\x1b[m")
        == "a link and red"
    )
    # a backspace steps back over the blank before it, which the next blank overwrites
    assert terminal_text("_\b_\bx, a stray \x08 and a lone \x1b") == "x, a stray and a lone "


def test_text_files_and_jsonl_records_are_read_without_terminal_formatting(tmp_path):
    (tmp_path / "grep.txt").write_text(MAN_OVERSTRIKE)
    (tmp_path / "man.md").write_text("# man-db\n" + MAN_SGR)
    (tmp_path / "pages.jsonl").write_text('{"title": "log", "text": "\\u001b[31mERROR\\u001b[0m disk full"}\n')
    texts = {d.metadata["title"]: d.page_content for d in load_documents([tmp_path]).documents}
    assert texts == {
        "grep": "NAME\n       grep -r file\n",
        "man-db": markdown_text("# man-db\n" + terminal_text(MAN_SGR)).text,  # no escape left to render
        "log": "ERROR disk full",
    }


@given(st.text())
def test_terminal_text_leaves_no_escape_or_backspace_and_keeps_plain_text(text):
    cleaned = terminal_text(text)
    assert "\x1b" not in cleaned and "\x08" not in cleaned
    assert terminal_text(cleaned) == cleaned
    if "\x1b" not in text and "\x08" not in text:
        assert cleaned == text


# as npm's documentation writes a page: front matter, no level-1 heading, "# …" comments in shell examples
NPM_CONFIG = """---
title: Config
section: 7
description: About npm configuration
id: cfg
date: 2024-05-01
tags: [npm, config]
authors: {main: someone}
---

### Shorthands

```bash
# same as:
npm ls --global --parseable --long --loglevel info
```
"""


def test_front_matter_names_the_page_and_its_summary_starts_the_text(tmp_path):
    page = markdown_text(NPM_CONFIG)
    assert page.title == "Config"
    assert page.text == (
        "About npm configuration\n\nShorthands\n\n# same as:\nnpm ls --global --parseable --long --loglevel info"
    )  # rendered: the heading's marks gone, the fenced example kept line for line
    assert page.fields == {
        "section": 7,
        "description": "About npm configuration",
        "id": "cfg",
        "date": datetime.date(2024, 5, 1),
        "tags": ["npm", "config"],
    }  # a nested mapping is dropped
    (tmp_path / "config.md").write_text(NPM_CONFIG)
    [document] = load_documents([tmp_path]).documents
    assert document.metadata == {
        "title": "Config",
        "source": str((tmp_path / "config.md").resolve()),
        "section": 7,
        "description": "About npm configuration",
        "doc_id": "cfg",  # `id` is the chunk's store id
        "date": "2024-05-01",
        "tags": '["npm", "config"]',
    }


@pytest.mark.parametrize(
    ("markdown", "title"),
    [
        ("```sh\n# same as:\nnpm ls\n```\n\n# The `npm ls` [command](ls.md)\n", "The npm ls command"),
        ("    # indented code\n\nSetext title\n============\n\n# later\n", "Setext title"),
        ("## only level 2\n\ntext\n", ""),
        ("---\ndescription: no title here\n---\n# From the heading\n", "From the heading"),
        ("---\ntitle: 2024\n---\nbody\n", "2024"),
        ("---\ntitle: [unclosed\n---\n# Heading\n", "Heading"),  # not YAML: the block stays text
    ],
)
def test_without_a_front_matter_title_the_first_level_1_heading_outside_code_names_the_page(markdown, title):
    assert markdown_text(markdown).title == title


@pytest.mark.parametrize(
    "markdown",
    [
        "---\ntitle: [unclosed\n---\nbody\n",  # invalid YAML
        "---\n- a list\n- not a mapping\n---\nbody\n",
        "---\ntitle: never closed\nbody\n",
        "text\n\n---\ntitle: not at the top\n---\n",  # a thematic break, not front matter
    ],
)
def test_what_is_not_front_matter_stays_text(markdown):
    page = markdown_text(markdown)
    assert page.fields == {} and ("body" in page.text or "not at the top" in page.text)


def test_a_markdown_file_without_a_title_is_named_by_its_file(tmp_path):
    (tmp_path / "notes.markdown").write_text("---\ndescription: Notes on tides\n---\nThe Moon pulls the sea.\n")
    [document] = load_documents([tmp_path]).documents
    assert document.metadata["title"] == "notes"
    assert document.page_content == "Notes on tides\n\nThe Moon pulls the sea."


@given(st.text())
def test_markdown_without_front_matter_keeps_its_words(text):
    page = markdown_text(text)
    assert "\n" not in page.title and page.title == page.title.strip()
    if not text.startswith("---"):
        assert page.fields == {}


# prose: a line that starts "00." is an ordered list's marker, which the rendered page shows as "0."
PROSE = st.text(alphabet=st.sampled_from(list("abc XYZ 019\n.,;?")), max_size=200).filter(
    lambda text: not re.search(r"(?m)^\s*\d+[.)]", text)
)


@given(PROSE)
def test_plain_prose_keeps_its_words_in_order(text):
    assert markdown_text(text).text.split() == text.split()


def test_inline_markup_keeps_the_spaces_between_its_words():
    assert markdown_plain("Run `npm` `ci` or *really* **carefully** [read](x) it.") == (
        "Run npm ci or really carefully read it."
    )
    assert markdown_plain('<ol start="x"><li>raw HTML list</li></ol>\n\n3. three\n4. four') == (
        "1. raw HTML list\n\n3. three\n4. four"
    )


def test_markdown_reads_as_its_rendered_page():
    """Node.js's API pages (their `.md` sources) were quoted with their markup."""
    source = (
        "## `immediate.unref()`\n\n<!-- YAML\nadded: v9.7.0\n-->\n\n* Returns: {Immediate} a reference to "
        "`immediate`\n* See [`setImmediate()`][] and **[the guide](guide.md)**.\n\n```js\nconst i = setImmediate(f);"
        "\n\ni.unref();\n```\n\n| flag | meaning |\n|---|---|\n| `-r` | recurse |\n\n"
        "[`setImmediate()`]: timers.md#setimmediate\n"
    )
    assert markdown_plain(source) == (
        "immediate.unref()\n\n- Returns: {Immediate} a reference to immediate\n- See setImmediate() and the guide."
        "\n\nconst i = setImmediate(f);\n\ni.unref();\n\nflag meaning\n-r recurse"
    )


# pip's documentation (MyST Markdown, read from /usr/share/doc/python3-pip/html) had been quoted as
# "(editable-installs)= Editable installs You can install … {ref}pip freeze"
MYST = """(editable-installs)=
# Editable installs

Pin with {ref}`pip freeze`; {ref}`--no-deps <install_--no-deps>` adds insurance ({pypi}`keyring`).

```{note}
Editable installs need **setuptools**.
```

```{versionadded} 22.3
The `--config-settings` option.
```

```{toctree}
:maxdepth: 2
getting-started
installation
```

:::{warning}
Careful with `sudo`.
:::

```{pip-cli}
:prompt: yes
$ pip install -e path/to/SomeProject
```

```{eval-rst}
.. note:: Run :command:`pip check` afterwards.
```

% a comment for the authors
"""


def test_myst_markdown_reads_as_sphinx_shows_it():
    page = markdown_text(MYST)
    assert page.title == "Editable installs"
    assert page.text == (
        "Editable installs\n\nPin with pip freeze; --no-deps adds insurance (keyring).\n\n"
        "Note:\n\nEditable installs need setuptools.\n\nNew in version 22.3.\n\nThe --config-settings option."
        "\n\nWarning:\n\nCareful with sudo.\n\n$ pip install -e path/to/SomeProject\n\n"
        "Note: Run pip check afterwards."
    )
    # plain CommonMark is read as before: a fence without braces is code, a parenthesis is text
    assert markdown_plain("```python\nx = {1}\n```\n\n(a)= b\n") == "x = {1}\n\n(a)= b"


# a texinfo manual's page (libffi's, every GNU manual's), with its navigation line inside the body
TEXINFO = """<html><head><title>Thread Safety (libffi)</title></head><body>
<div class="section" id="Thread-Safety">
<div class="header"><p>Previous: <a href="x.html">Closure Example</a>, Up: <a href="u.html">Using libffi</a>
&nbsp; [<a href="i.html" title="Index">Index</a>]</p></div>
<h3 class="section">2.7 Thread Safety</h3>
<p>libffi is not completely thread-safe. However, many parts are, and if you follow some simple rules,
you can use it safely in a multi-threaded program.</p>
<div class="nav-panel"><p>Next: <a href="n.html">Memory Usage</a></p></div>
</div></body></html>"""


def test_documentation_navigation_inside_the_body_is_not_text():
    text, title = html_text(TEXINFO)
    assert title == "Thread Safety (libffi)"
    assert "libffi is not completely thread-safe." in text
    assert "Previous:" not in text and "Next:" not in text and "[Index]" not in text


@pytest.mark.parametrize(
    ("rst", "title"),
    [
        (
            ":mod:`email` Package Architecture\n=================================\n\nOverview\n--------\n",
            "email Package Architecture",
        ),
        ("=========\n The Guide \n=========\n\nIntro\n-----\n", "The Guide"),
        ("text\n\n=====  =====\na      b\n=====  =====\n\nReal\n~~~~\n", "Real"),  # a simple table is no title
        ("Longer than its underline\n=====\n\nInstall\n=======\n", "Install"),
        (":ref:`Setting up <setup>` *fast*\n" + "=" * 32 + "\n", "Setting up fast"),
        ("no title at all\n", ""),
    ],
)
def test_a_restructuredtext_page_is_named_by_its_first_section_title(rst, title):
    assert rst_title(rst) == title


def test_restructuredtext_files_are_read_as_text(tmp_path):
    (tmp_path / "arch.rst").write_text(
        ":mod:`email` Package Architecture\n=================================\n\nText.\n"
    )
    (tmp_path / "notes.rst").write_text("Just text.\n")
    documents = {d.metadata["title"]: d.page_content for d in load_documents([tmp_path]).documents}
    assert documents == {"email Package Architecture": "email Package Architecture\n\nText.", "notes": "Just text."}


# mdBook's print.html (the whole book again), rustdoc's moved-page stubs, mdBook's redirect pages
PRINT_PAGE = """<!DOCTYPE HTML><html><head><title>The Rust Programming Language</title>
<meta name="robots" content="noindex"></head><body><main><h1>Foreword</h1><p>Every chapter of the book, again, on
one page: the same passages the chapters hold.</p></main></body></html>"""
REDIRECT = """<html><head><title>Redirecting...</title><meta http-equiv="refresh" content="0; URL=ch18-00-oop.html">
</head><body><p>Redirecting to... <a href="ch18-00-oop.html">ch18-00-oop.html</a>.</p></body></html>"""
CHAPTER = """<html><head><title>Using Threads</title><meta name="description" content="noindex is a word here">
<meta name="robots" content="index, follow"><meta http-equiv="refresh" content="300"></head>
<body><main><p>Threads run code at the same time: spawn one with thread::spawn and a closure.</p></main></body></html>"""


@pytest.mark.parametrize(
    ("page", "reason"),
    [
        (PRINT_PAGE, "it asks not to be indexed (robots noindex)"),
        ('<META NAME="Robots" CONTENT="NOINDEX,FOLLOW">', "it asks not to be indexed (robots noindex)"),
        ('<meta name="googlebot" content="nofollow noindex">', "it asks not to be indexed (robots noindex)"),
        (REDIRECT, "it only redirects to ch18-00-oop.html"),
        ("<meta http-equiv='Refresh' content=\"5;url='/new/'\">", "it only redirects to /new/"),
        (CHAPTER, None),  # "index" is no "noindex"; a refresh without a target reloads the page itself
        ('<meta name="robots" content="noindexing">', None),
        ("<p>no meta tags at all</p>", None),
        ("", None),
        ("<meta", None),
    ],
)
def test_a_page_that_asks_not_to_be_indexed_or_only_redirects_says_so(page, reason):
    assert unindexed_reason(page) == reason


def test_such_pages_are_skipped_in_folders_and_read_when_named(tmp_path):
    book = tmp_path / "book"
    book.mkdir()
    for name, page in (("print.html", PRINT_PAGE), ("old.html", REDIRECT), ("threads.html", CHAPTER)):
        (book / name).write_text(page)
    loaded = load_documents([book])
    assert [d.metadata["title"] for d in loaded.documents] == ["Using Threads"]
    assert loaded.files == [(book / "threads.html").resolve()]
    assert loaded.unindexed == {
        (book / "old.html").resolve(): "it only redirects to ch18-00-oop.html",
        (book / "print.html").resolve(): "it asks not to be indexed (robots noindex)",
    }
    named = load_documents([book / "print.html"])  # the user chose this page: it is read
    assert [d.metadata["title"] for d in named.documents] == ["The Rust Programming Language"] and not named.unindexed


@given(st.text(alphabet=st.sampled_from(list("<>/=\"' ;-metanobrsindexhpqurlfc\n")), max_size=120))
def test_any_markup_gets_a_reason_or_none_and_no_error(page):
    reason = unindexed_reason(page)
    assert reason is None or reason.startswith("it ")


MOVED = (
    "The second edition of the book is no longer distributed with Rust’s documentation.\n"
    "If you came here via a link or web search, you may want to check out the current version of the book instead."
)


def test_a_page_of_a_heading_over_lines_other_pages_repeat_has_nothing_of_its_own():
    stubs = [f"{heading}\n{MOVED}" for heading in ("Ownership", "Appendix A: Keywords", "Slices", "Vectors")]
    texts = [
        *stubs,
        f"  what  is OWNERSHIP?\n{MOVED.upper()}\n",  # case and spacing aside, the same lines
        f"Ownership\n{MOVED}\nEach value in Rust has an owner.",  # a line of its own: kept
        f"Each value has an owner.\n{MOVED}",  # its first line is a sentence, not a heading
        "Slices",  # a heading alone: nothing to compare
        "",
    ]
    assert repeated_only(texts) == [True] * 5 + [False] * 4
    assert repeated_only(texts[:3]) == [False] * 3  # three pages repeating a line: not yet boilerplate
    assert repeated_only([]) == []


def test_hollow_pages_are_left_out_and_named(tmp_path):
    for n in range(5):
        (tmp_path / f"old-{n}.md").write_text(f"# Chapter {n}\n{MOVED}\n")
    (tmp_path / "ownership.md").write_text(f"# Ownership\n{MOVED}\nEach value in Rust has an owner.\n")
    loaded = load_documents([tmp_path])
    assert [d.metadata["title"] for d in loaded.documents] == ["Ownership"]
    assert sorted(loaded.repeated) == [str((tmp_path / f"old-{n}.md").resolve()) for n in range(5)]
    assert len(loaded.files) == 6  # read, so that what an earlier run took from them is removed


@given(st.lists(st.text(alphabet=st.sampled_from(list("ab. \n")), max_size=20), max_size=8))
def test_repeated_only_judges_every_text_and_never_one_line(texts):
    flags = repeated_only(texts)
    assert len(flags) == len(texts)
    assert not any(flag for flag, text in zip(flags, texts) if len([x for x in text.splitlines() if x.strip()]) < 2)


def test_a_headings_permalink_sign_is_not_text():
    """Node.js's API pages end each heading with a "#" link, Sphinx's with "¶"."""
    page = (
        "<html><body><article><h3><code>path.join([...paths])</code><span><a class='mark' href='#pathjoin'>#</a>"
        "</span></h3><p>The path.join() method joins all given path segments together using the separator.</p>"
        "<h2>Install<a class='headerlink' href='#install' title='Permalink to this heading'>¶</a></h2>"
        "<p>Run the installer and answer its questions; section 4 of the manual says more.</p></article></body></html>"
    )
    text, _ = html_text(page)
    assert "path.join([...paths])\n" in text and "Install\n" in text
    assert "#" not in text and "¶" not in text
