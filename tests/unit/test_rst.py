"""reStructuredText read as its built page shows it (`crag.indexing.rst`): CMake's documentation was
quoted with its markup (":command:`add_custom_target`", "message ------- Log a message.")."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crag.indexing.rst import _ADORNMENT, _DIRECTIVE, inline, rst_text

# the shapes of CMake's Help/command/*.rst and Help/manual/*.rst, and of Sphinx pages generally
PAGE = """.. cmake-manual-description: CMake Command Reference

message
-------

Log a message.

Synopsis
^^^^^^^^

.. parsed-literal::

  `General messages`_
    message([<mode>] "message text" ...)

The optional ``<mode>`` keyword is read by :command:`message` and
:ref:`the generators <Build System Generators>` (see :prop_tgt:`~cmake.targets.COMPILE_DEFINITIONS`).
Use **this** form::

  message(STATUS "hello")

A literal block after a space ::

  x

.. versionadded:: 3.15
  Added the ``NOTICE`` level.

.. note::
  Messages go to stderr.

.. seealso:: :command:`cmake_language`

.. toctree::
   :maxdepth: 1

   /command/add_custom_command
   /command/add_library

.. option:: -j <jobs>, --parallel <jobs>

 Run the tests in parallel.

.. _`Reporting checks`:

=========  ===========
Type       Default
=========  ===========
BIN        ``bin``
=========  ===========

See `the CMake site <https://cmake.org>`_ and `Reporting checks`_.
"""

RENDERED = """message

Log a message.

Synopsis


  General messages
    message([<mode>] "message text" ...)

The optional <mode> keyword is read by message and
the generators (see COMPILE_DEFINITIONS).
Use this form:

  message(STATUS "hello")

A literal block after a space

  x

New in version 3.15.
  Added the NOTICE level.

Note:
  Messages go to stderr.

See also: cmake_language

-j <jobs>, --parallel <jobs>

 Run the tests in parallel.

Type       Default
BIN        bin

See the CMake site and Reporting checks."""


def test_a_page_reads_as_its_built_page_shows_it():
    assert rst_text(PAGE) == RENDERED


def test_inline_markup_keeps_its_text():
    assert inline(":ref:`Visual Studio <Visual Studio Generators>` and :envvar:`CC`") == "Visual Studio and CC"
    assert inline("`a link`__, ``code`` and `interpreted`") == "a link, code and interpreted"
    assert inline("globs like **/*.txt and 2 * 3 stay") == "globs like **/*.txt and 2 * 3 stay"


MARKUP = st.sampled_from(
    [".. ", "::", ":cmd:`", "`", "``", "_", "**", "====", "----", "\n", "  ", "note", "toctree", "a", "<b>", " "]
)


@given(st.lists(MARKUP, max_size=30).map("".join))
def test_no_directive_line_or_adornment_survives_and_only_labels_are_added(text):
    once = rst_text(text)
    kept = set(once.splitlines())
    assert not [line for line in text.splitlines() if _DIRECTIVE.match(line) and line in kept]
    assert not [line for line in text.splitlines() if _ADORNMENT.match(line) and line in kept]
    assert len(once) <= len(text) + 40 * text.count("::")  # labels ("See also:") are all it adds


def test_an_included_file_is_read_in_place_with_the_pages_substitutions(tmp_path):
    """CMake's property pages are a version note and `.. include::` of text shared by several pages."""
    (tmp_path / "SHARED.txt").write_text(
        "List of public |property_name| requirements.\n\n.. include:: NESTED.txt\n\nSee |unknown| too.\n"
    )
    (tmp_path / "NESTED.txt").write_text("Set by the |command_name| command.\n\n.. include:: NESTED.txt\n")
    page = (
        "INTERFACE_LINK_DIRECTORIES\n--------------------------\n\n.. versionadded:: 3.13\n\n"
        ".. |property_name| replace:: link directories\n"
        ".. |command_name| replace:: :command:`target_link_directories`\n"
        ".. include:: SHARED.txt\n.. include:: missing.txt\n"
    )
    text = rst_text(page, tmp_path)
    assert "List of public link directories requirements." in text
    assert "Set by the target_link_directories command." in text  # a file it includes, in turn
    assert text.count("Set by the") == 2  # the file that includes itself stops at the depth limit
    assert "See |unknown| too." in text and "include" not in text
    assert "List of public" not in rst_text(page)  # no folder: nothing to read the file from
