"""Nothing a page or the model writes can act on the terminal: escape sequences, controls, bidirectional
and other invisible format characters are stripped from every line the CLI prints (`crag.cli.terminal`),
and written as escapes in the JSON view."""

from __future__ import annotations

import json
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from crag.cli.render import StreamPrinter, print_run, show
from crag.cli.terminal import escaped, printable

BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
HOSTILE = (
    "\x1b]8;;http://evil.example\x1b\\Anna Berg\x1b]8;;\x1b\\ was a \x1b[31mSwedish\x1b[0m painter"
    "\u202e.txt\u202c\x9b2J\r\x07\x1b]0;owned\x07\u2066\u2069\u200b\U000e0041"
)


def forbidden(char: str) -> bool:
    category = unicodedata.category(char)
    return (
        char in BIDI
        or (category == "Cc" and char not in "\n\t")
        or (category == "Cf" and char not in "\u200c\u200d")
        or category in ("Cs", "Zl", "Zp")
    )


# every code point, surrogates and all, with the escape sequences' introducers made frequent
TEXT = st.lists(
    st.one_of(
        st.characters(codec=None, exclude_categories=()),
        st.sampled_from(["\x1b", "\x1b[", "\x1b]8;;", "\x9b", "\x9d", "\x07", "\x1b\\", *BIDI]),
    )
).map("".join)


@given(TEXT)
def test_no_control_or_bidirectional_character_survives(text):
    out = printable(text)
    assert not any(forbidden(c) for c in out)
    assert printable(out) == out  # nothing left to strip


@given(st.text(alphabet=st.characters(exclude_categories=("Cc", "Cf", "Cs", "Zl", "Zp"))))
def test_text_without_them_is_printed_as_it_is(text):
    assert printable(text) == text
    assert printable(f"a\n\tb{text}") == f"a\n\tb{text}"


@given(st.dictionaries(st.text(max_size=5), TEXT, max_size=3))
def test_the_json_view_escapes_them_and_reads_back_the_same(value):
    dumped = escaped(json.dumps(value, ensure_ascii=False))
    assert not any(forbidden(c) for c in dumped) and json.loads(dumped) == value


def test_escape_sequences_go_whole_and_a_hidden_link_leaves_only_its_text():
    assert printable(HOSTILE) == "Anna Berg was a Swedish painter.txt"  # "\x9b2J": 8-bit CSI, gone whole


def hostile_run() -> dict:
    return {
        "answer": HOSTILE,
        "given": [
            {"title": "\x1b[2JAnna", "text": HOSTILE, "origin": "internal", "score": 0.9, "selection_score": 0.9}
        ],
        "citations": [{"sentence": HOSTILE, "start": 0, "end": 5, "sources": [1]}],
        "sources": [
            {"id": 1, "title": "Anna\u202e", "source": "http://x\x1b[8m", "origin": "internal", "doc": 0}
            | {"start": 0, "end": 5}
        ],
        "documents": [],
        "web_error": "\x1b]0;title\x07timeout",
        "draft": HOSTILE,
        "replaced": "planted",
        "quoted": True,
    }


def test_no_view_of_crag_ask_or_chat_prints_them(capsys):
    for view in ("plain", "stream", "json"):
        show(hostile_run(), view)
    printer = StreamPrinter()
    for token in ["\x1b[31", "mred\u202e", "\x9b2J"]:  # an escape split across tokens: no piece acts alone
        printer.token(token)
    printer.finish(hostile_run())
    print_run(hostile_run())
    out = capsys.readouterr().out
    assert "Anna Berg was a Swedish painter" in out and "an instruction planted in a document" in out
    assert not any(forbidden(c) for c in out)
