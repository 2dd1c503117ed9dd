"""The passage helpers: one Document shape and one "Title: text"."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document

from crag.passages import distinct, passage, source_of, title_of, titled, titled_once


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


def test_a_text_stored_under_several_sources_is_kept_once_at_its_best_rank():
    licence = "Apache License\n   Version 2.0, January 2004"
    documents = [
        passage(licence, "OPEN-SANS-LICENSE", "fonts/OPEN-SANS-LICENSE.txt"),
        passage("Threads run code at once.", "Threads", "ch16.html"),
        passage("apache license version 2.0,  january 2004", "OPEN-SANS-LICENSE", "first-edition/fonts/LICENSE.txt"),
        passage("Threads run code at once!", "Threads", "print.html"),  # a character apart: both kept
    ]
    assert [d.metadata["source"] for d in distinct(documents)] == [
        "fonts/OPEN-SANS-LICENSE.txt",
        "ch16.html",
        "print.html",
    ]
    assert distinct([]) == []


@given(st.lists(st.sampled_from(["a b", "A  b", "a\tb ", "c", "C", "d e", ""]), max_size=12))
def test_distinct_keeps_the_first_of_each_text_in_order(texts):
    documents = [passage(text, source=str(n)) for n, text in enumerate(texts)]
    kept = distinct(documents)
    keys = [" ".join(d.page_content.casefold().split()) for d in kept]
    assert len(set(keys)) == len(keys)
    assert {" ".join(t.casefold().split()) for t in texts} == set(keys)
    assert [int(d.metadata["source"]) for d in kept] == sorted(int(d.metadata["source"]) for d in kept)
