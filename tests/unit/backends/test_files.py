"""Compressed documents: `X.gz` is read as `X` would be, and what cannot be read is reported, not fatal."""

from __future__ import annotations

import contextlib
import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crag.indexing import files
from crag.indexing.files import find_files, is_binary, kind, read_bytes, stem
from crag.indexing.pipeline import load_documents, load_file
from crag.jsonl import read_objects
from tests.pdfs import pdf_bytes

PAGES = {
    "notes.txt": "Backups run nightly at two. Restore with the restore command.",
    "README.md": "# Frobnicator\n\nThe frobnicator turns *widgets* into gadgets.\n\n- fast\n- small\n",
    "manual.html": "<html><head><title>Frob manual</title></head><body><h1>Usage</h1>"
    "<p>Run frob with --all to frobnicate every widget in the folder at once.</p></body></html>",
    "guide.rst": "Guide\n=====\n\nUse :command:`frob` to start. The ``--quiet`` option hides progress.\n",
}


def gz(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data))
    return path


@pytest.fixture
def docs(tmp_path):
    """The same pages twice: plain in plain/, compressed in packed/ (as /usr/share/doc keeps them)."""
    for name, text in PAGES.items():
        (tmp_path / "plain").mkdir(exist_ok=True)
        (tmp_path / "plain" / name).write_text(text)
        gz(tmp_path / "packed" / f"{name}.gz", text.encode())
    return tmp_path


def test_a_compressed_page_reads_as_its_plain_self(docs):
    for name in PAGES:
        [plain], _ = load_file(docs / "plain" / name)
        [packed], _ = load_file(docs / "packed" / f"{name}.gz")
        assert packed.page_content == plain.page_content and packed.page_content.strip()
        assert packed.metadata["title"] == plain.metadata["title"]
        assert packed.metadata["source"] == str((docs / "packed" / f"{name}.gz").resolve())
    [readme], _ = load_file(docs / "packed" / "README.md.gz")
    assert readme.metadata["title"] == "Frobnicator" and "*" not in readme.page_content  # read as Markdown
    [notes], _ = load_file(docs / "packed" / "notes.txt.gz")
    assert notes.metadata["title"] == "notes"  # not "notes.txt"


def test_compressed_pdfs_and_jsonl(tmp_path):
    gz(tmp_path / "paper.pdf.gz", pdf_bytes(["Page one says hello.", "Page two says goodbye."]))
    records = [{"title": "A", "text": "Alpha text."}, {"title": "B", "text": "Beta text.", "url": "https://b.example"}]
    gz(tmp_path / "records.jsonl.gz", "".join(json.dumps(r) + "\n" for r in records).encode())
    loaded = load_documents([tmp_path])
    texts = sorted(d.page_content for d in loaded.documents)
    assert texts == ["Alpha text.", "Beta text.", "Page one says hello.", "Page two says goodbye."]
    assert [n for n, _ in read_objects(tmp_path / "records.jsonl.gz")] == [1, 2]


def test_what_cannot_be_read_is_reported_and_the_rest_is_read(tmp_path, monkeypatch):
    folder = tmp_path / "doc"
    gz(folder / "ok.txt.gz", b"A readable compressed note about frobs.")
    (folder / "broken.txt.gz").write_bytes(b"this is not gzip data at all")
    whole = gzip.compress(b"# Title\n\n" + b"text " * 500)
    (folder / "truncated.md.gz").write_bytes(whole[: len(whole) // 2])  # a download cut short
    records = gzip.compress(b'{"title": "A", "text": "Alpha."}\n' * 50)
    (folder / "truncated.jsonl.gz").write_bytes(records[: len(records) // 2])  # it had stopped the whole ingest
    gz(folder / "bomb.txt.gz", b"a" * 5000)
    gz(folder / "binary.txt.gz", b"\x00\x01\x02 not text")
    gz(folder / "FAQ.gz", b"Q: what? A: that.")  # no suffix before .gz: plain text by its name
    gz(folder / "logo.png.gz", b"\x89PNG")
    monkeypatch.setattr(files, "MAX_DECOMPRESSED", 4096)
    loaded = load_documents([folder])
    assert sorted(d.page_content for d in loaded.documents) == [
        "A readable compressed note about frobs.",
        "Q: what? A: that.",
    ]
    assert sorted(p.name for p in loaded.unsupported) == ["logo.png.gz"]
    assert [p.name for p in loaded.binary] == ["binary.txt.gz"]
    why = {line.split(": ", 1)[0].rsplit("/", 1)[-1]: line.split(": ", 1)[1] for line in loaded.unreadable}
    assert set(why) == {"broken.txt.gz", "truncated.md.gz", "truncated.jsonl.gz", "bomb.txt.gz"}
    assert "not a readable gzip file" in why["broken.txt.gz"] and "not a readable gzip" in why["truncated.md.gz"]
    assert "not a readable gzip" in why["truncated.jsonl.gz"]
    assert why["bomb.txt.gz"] == "decompresses to more than 4,096 bytes"


def test_named_files_must_be_of_a_type_read(tmp_path):
    with pytest.raises(ValueError, match=r"no file type in its name, and not plain text"):
        find_files([gz(tmp_path / "FAQ.gz", b"\x00\x01 binary")])
    with pytest.raises(ValueError, match=r"unsupported file type '\.png\.gz'"):
        find_files([gz(tmp_path / "logo.png.gz", b"x")])
    assert find_files([gz(tmp_path / "Notes.TXT.GZ", b"x")])[0]  # suffixes in any case


def test_kind_and_stem():
    from pathlib import Path

    assert [kind(Path(n)) for n in ("a.txt", "a.MD.gz", "a.gz", "a.tar.gz", "README")] == [
        ".txt",
        ".md",
        "",
        ".tar",
        "",
    ]
    assert [stem(Path(n)) for n in ("README.md.gz", "notes.txt", "x.gz", ".gz")] == ["README", "notes", "x", ".gz"]


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=3000))
def test_any_bytes_compressed_or_not_are_sniffed_and_read_without_crashing(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("fuzz")
    plain = folder / "x.txt"
    plain.write_bytes(data)
    packed = gz(folder / "x.txt.gz", data)
    assert is_binary(packed) == is_binary(plain)
    assert read_bytes(packed) == data
    raw = folder / "raw.txt.gz"  # arbitrary bytes that claim to be gzip
    raw.write_bytes(data)
    with contextlib.suppress(files.UnreadableFile):
        read_bytes(raw)
    is_binary(raw)  # never raises


UNTYPED = {  # names without a file type, as Unix documentation and /usr/share/common-licenses carry them
    "LICENSE": b"Permission is hereby granted, free of charge, to any person obtaining a copy.",
    "MPL-2.0": b"Mozilla Public License Version 2.0\n1.1. Contributor means each individual.",
    "README.Debian": b"This package is built with the frob plugin enabled.",
    "NEWS.gz": gzip.compress(b"Version 2 drops the --old flag."),
}
NOT_PLAIN = {  # no file type either, but read as words they would be noise
    "ls.1": b'.\\" DO NOT MODIFY THIS FILE!\n.TH LS "1" "2023"\n.SH NAME\nls \\- list directory contents\n',
    "stub.3": b".so man3/other.3\n",
    "frob": b'#!/bin/sh\nexec frob-real "$@"\n',
    "blob": b"\x00\x01\x02\x03 binary",
    "empty": b"",
    "archive.tar": b"plain looking bytes, but a type we do not read",
}


def test_files_without_a_file_type_are_read_as_plain_text_when_they_are(tmp_path):
    folder = tmp_path / "licenses"
    folder.mkdir()
    for name, data in {**UNTYPED, **NOT_PLAIN}.items():
        (folder / name).write_bytes(data)
    (folder / "GPL").symlink_to(folder / "MPL-2.0")  # Debian's GPL -> GPL-3: one file, read once
    loaded = load_documents([folder])
    titles = sorted(d.metadata["title"] for d in loaded.documents)
    assert titles == ["LICENSE", "MPL-2.0", "NEWS", "README.Debian"]  # the whole name: MPL-2.0, not MPL-2
    assert sorted(p.name for p in loaded.unsupported) == sorted(NOT_PLAIN)
    [mpl] = [d for d in loaded.documents if d.metadata["title"] == "MPL-2.0"]
    assert mpl.page_content.startswith("Mozilla Public License") and mpl.metadata["source"].endswith("MPL-2.0")
    for name in NOT_PLAIN:  # named on the command line: an error that says why
        with pytest.raises(
            ValueError, match="no file type in its name, and not plain text|unsupported file type '.tar'"
        ):
            find_files([folder / name])
    [license_], _ = load_file(folder / "LICENSE")
    assert license_.metadata["title"] == "LICENSE"


def test_what_counts_as_a_file_type():
    from pathlib import Path

    typed = ["a.py", "a.json", "clip.mp4", "a.tar.gz", "a.TXT", "grep.info-1.gz", "page.markdown"]
    untyped = ["LICENSE", "MPL-2.0", "LGPL-2.1", "README.Debian", "README.source", "FAQ.gz", "ls.1"]
    assert [files.untyped(Path(n)) for n in typed] == [False] * len(typed)
    assert [files.untyped(Path(n)) for n in untyped] == [True] * len(untyped)
