"""GNU Info manuals (`crag.indexing.info`): one passage per node, without the navigation."""

from __future__ import annotations

import gzip
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from crag.indexing.files import supported
from crag.indexing.info import SEPARATOR, is_info, nodes
from crag.indexing.pipeline import load_file

MANUAL = f"""This is tool.info, produced by makeinfo version 6.8 from tool.texi.

Copyright (C) 2024 Somebody.  Permission is granted to copy this manual.
INFO-DIR-SECTION Utilities
START-INFO-DIR-ENTRY
* Tool: (tool).   Does things.
END-INFO-DIR-ENTRY

{SEPARATOR}
File: tool.info,  Node: Top,  Next: Options,  Up: (dir)

Tool
****

* Menu:

* Options::     What it takes.
* Index::       Words.

{SEPARATOR}
File: tool.info,  Node: Options,  Next: Index,  Prev: Top,  Up: Top

2 Options
=========

'--fast'
     Run faster.  *Note Speed and safety::, for the price, and *note the
     limits: Limits.  Compare *Note (coreutils)Common options::.

2.1 More
--------

Nothing else.

* Menu:

* Sub::      A child node.

{SEPARATOR}
File: tool.info,  Node: Index,  Prev: Options,  Up: Top

Index
*****

* Menu:

* fast:                                  Options.              (line 6)

{SEPARATOR}
Tag Table:
Node: Top{chr(127)}400
Node: Options{chr(127)}600
{SEPARATOR}
End Tag Table

{SEPARATOR}
Local Variables:
coding: utf-8
End:
"""


def test_each_node_with_text_is_a_passage_without_navigation():
    found = nodes(MANUAL)
    assert [n.title for n in found] == ["Options (tool)"]  # Top and Index are headings over menus
    text = found[0].text
    assert text.startswith("2 Options\n\n'--fast'\n     Run faster.")
    assert "see Speed and safety, for the price" in text and "see the limits." in text
    assert "see Common options (coreutils)." in text
    assert "2.1 More\n\nNothing else." in text
    for gone in ("===", "---", "* Menu:", "Sub::", "Next:", "Copyright", "Tag Table", "coding: utf-8"):
        assert gone not in text


def test_info_files_and_the_parts_of_a_split_manual_are_read():
    for name in ("wget.info", "find.info-2", "find.info-1.gz", "wget.info.gz", "WGET.INFO"):
        assert supported(Path(name)), name
    assert not is_info(".information") and not supported(Path("notes.info-x"))


def test_ingest_reads_a_compressed_manual_node_by_node(tmp_path):
    path = tmp_path / "tool.info.gz"
    path.write_bytes(gzip.compress(MANUAL.encode()))
    documents, empty = load_file(path)
    assert empty == [] and len(documents) == 1
    assert documents[0].metadata["title"] == "Options (tool)"
    assert documents[0].metadata["source"] == f"{path.resolve()}#Options"


PIECES = ["\x1f", "\n", "File: a.info,  Node: ", "x", "*", "=", " ", "*Note ", ":", "(", ")", ".", "* Menu:"]


@given(st.lists(st.sampled_from(PIECES)).map("".join))
def test_any_text_gives_nodes_without_separators(text):
    for node in nodes(text):
        assert SEPARATOR not in node.text and node.text == node.text.strip() and node.name
