"""The FAQ parser behind the documentation-domain dev pairs (lab/evaluator/faq.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from crag.indexing.pipeline import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from lab.datasets.docs_domain import SOURCES
from lab.evaluator import faq

ANSWER = "Use the option that does exactly this; it is described in the manual page with an example of its use."
FAQ_TEXT = f"""Contents

1.1. How do I insert a newline into the replacement?
1.2. Why does the tool report bogus sizes
     on my system?
2.0  Porting notes

1.1. How do I insert a newline into the replacement?

   {ANSWER}

1.2. Why does the tool report bogus sizes
     on my system?

   Some kernels do not export the sizes, so the tool guesses from the inode and the guess can be wrong for large files.

2.0  Porting notes

   This section is not a question and must not become the previous answer's tail at all, really.

Q: What do the letters XZ mean?

A: Nothing. They are just two letters, which come from nothing in particular but were free as a name.

3.1. Is this too short?

   Yes.
"""


def test_questions_and_their_answers_are_read_from_a_plain_text_faq():
    entries = faq.parse_faq(FAQ_TEXT, "x")
    assert [e.question for e in entries] == [
        "How do I insert a newline into the replacement?",
        "Why does the tool report bogus sizes on my system?",  # continued on an indented line
        "What do the letters XZ mean?",  # the Q:/A: style
    ]
    first, second, third = entries
    assert first.answer == ANSWER  # the table of contents' copy has no answer; the last copy wins
    assert second.answer.startswith("Some kernels") and "Porting" not in second.answer  # a heading ends it
    assert third.answer.startswith("Nothing.") and not third.answer.startswith("A:")
    assert all(e.source == "x" for e in entries)  # "Is this too short?" has too short an answer


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=600))
def test_any_text_parses_to_questions_with_answers(text):
    for entry in faq.parse_faq(text):
        assert entry.question.endswith("?") and len(entry.answer.split()) >= faq.MIN_ANSWER_WORDS


def test_faq_titles_name_the_package():
    assert faq.faq_name("/usr/share/doc/lsof/00FAQ.gz") == "lsof FAQ"
    assert faq.faq_name("/usr/share/doc/zlib1g-dev/FAQ.gz") == "zlib FAQ"
    assert faq.faq_name("/usr/share/doc/xz-utils/faq.txt.gz") == "xz FAQ"


def test_faqs_are_chunked_as_crag_ingest_does_and_are_no_page_of_the_docs_slice():
    assert (faq.CHUNK_SIZE, faq.CHUNK_OVERLAP) == (DEFAULT_CHUNK_SIZE, DEFAULT_CHUNK_OVERLAP)
    slice_pages = {source.name.split(".")[0] for source in SOURCES}
    assert not {faq.faq_name(f).split()[0] for f in faq.FAQ_FILES} & slice_pages
