"""MkDocs hooks: the configuration page's table of settings, generated from `crag.settings.Context`, and
the list of dated reports, generated from docs/reports/.

One source: each setting's default, description and environment variable are read from the `Context`
field (its `metadata`), its command-line flag from `crag.cli.settings.FIELDS` and whether a request to
the server may set it from `crag.serve.service.SAFE_SETTINGS`. The page holds a marker where the table
goes, so the table cannot drift from the code; tests/unit/test_docs.py checks the table against them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import posixpath
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from crag.cli.settings import OPTION_OF, flag
from crag.serve.service import SAFE_SETTINGS
from crag.settings import Context

MARKER = "<!-- settings-table -->"
REPORTS_MARKER = "<!-- reports-list -->"
REPORTS = Path(__file__).parent / "reports"


@contextlib.contextmanager
def _no_crag_environment() -> Iterator[None]:
    """The built-in defaults, not this machine's: CRAG_* variables hidden while defaults are computed."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("CRAG_")}
    for key in saved:
        del os.environ[key]
    try:
        yield
    finally:
        os.environ.update(saved)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(spec: dataclasses.Field) -> str:
    with _no_crag_environment():
        value = spec.default_factory() if spec.default_factory is not dataclasses.MISSING else spec.default
    return "empty" if value is None else f"`{value}`"


def settings_rows() -> list[dict[str, str]]:
    """One row per `Context` field, in the class's order."""
    rows = []
    for spec in dataclasses.fields(Context):
        rows.append(
            {
                "setting": f"`{spec.name}`",
                "default": _default(spec),
                "env": f"`{spec.metadata['env']}`" if "env" in spec.metadata else "",
                "flag": f"`{flag(OPTION_OF[spec.name])}`" if spec.name in OPTION_OF else "",
                "server": "yes" if spec.name in SAFE_SETTINGS else "",
                "description": spec.metadata.get("description", ""),
            }
        )
    return rows


def settings_table() -> str:
    """The Markdown table the configuration page shows."""
    head = "| setting | default | environment | CLI flag | per request | what it does |\n|---|---|---|---|---|---|\n"
    return head + "".join(
        f"| {r['setting']} | {_cell(r['default'])} | {r['env']} | {r['flag']} | {r['server']} | "
        f"{_cell(r['description'])} |\n"
        for r in settings_rows()
    )


def reports_list(page_uri: str = "reports/index.md") -> str:
    """Every dated report, newest first, as "- date: [title](link)" lines linked from the page at `page_uri`;
    the date and title come from each report's first line ("# Title (YYYY-MM-DD)")."""
    lines = []
    for path in sorted(REPORTS.glob("20*.md"), reverse=True):
        title = path.read_text(encoding="utf-8").splitlines()[0].lstrip("# ").strip()
        dated = re.match(r"(.*) \((\d{4}-\d{2}-\d{2})\)$", title)
        name, date = (dated.group(1), dated.group(2)) if dated else (title, path.name[:10])
        link = posixpath.relpath(f"reports/{path.name}", posixpath.dirname(page_uri) or ".")
        lines.append(f"- {date}: [{name}]({link})")
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, settings_table())
    if REPORTS_MARKER in markdown:
        markdown = markdown.replace(REPORTS_MARKER, reports_list(page.file.src_uri))
    return markdown
