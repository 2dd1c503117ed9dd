"""The passage helpers: one Document shape and one "Title: text"."""

from __future__ import annotations

from langchain_core.documents import Document

from crag.core.passages import passage, source_of, title_of, titled, titled_once


def test_a_passage_is_a_document_with_title_and_source():
    doc = passage("Text.", title="T", source="https://x.org/t", rank=2)
    assert isinstance(doc, Document) and doc.page_content == "Text."
    assert doc.metadata == {"title": "T", "source": "https://x.org/t", "rank": 2}
    assert (title_of(doc), source_of(doc)) == ("T", "https://x.org/t")
    assert (title_of(Document(page_content="x")), source_of(Document(page_content="x", metadata={"source": None}))) == (
        "",
        "",
    )


def test_a_title_is_joined_once():
    assert titled("text", "T") == "T: text" and titled("text", "") == "text" and titled("text", None) == "text"
    assert titled_once("T: text", "T") == "T: text"  # a fetched paragraph is stored titled
    assert titled_once("text", "T") == "T: text" and titled_once("Tea: text", "T") == "T: Tea: text"
    assert titled_once(": text", "") == ": text"
