"""MkDocs hooks: the configuration page's table of settings, generated from `crag.settings.Context`, and
the list of dated reports, generated from docs/reports/.

One source: each setting's default, help, group, environment variable, command-line flag and whether a
request to the server may set it are read from its declaration (`crag.settings.setting`). The page holds
a marker where the table goes, so the table cannot drift from the code; tests/unit/test_docs.py checks it.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from pathlib import Path
from typing import Any

from crag.cli.settings import flag, option
from crag.cli.settings import on_command_line as in_the_cli  # not on_*: mkdocs takes those for its hooks
from crag.settings import GROUPS, about, env_name, settings

MARKER = "<!-- settings-table -->"
REPORTS_MARKER = "<!-- reports-list -->"
REPORTS = Path(__file__).parent / "reports"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(spec: dataclasses.Field) -> str:
    value = about(spec)["default"]
    return "empty" if value is None else f"`{value}`"


def settings_rows() -> list[dict[str, str]]:
    """One row per setting, group by group in the order `--help` shows them."""
    rows = []
    for group in GROUPS:
        for spec in settings():
            declared = about(spec)
            if declared["group"] != group:
                continue
            rows.append(
                {
                    "setting": f"`{spec.name}`",
                    "group": group,
                    "default": _default(spec),
                    "env": f"`{env_name(spec.name)}`" if declared["env"] else "",
                    "flag": f"`{flag(option(spec))}`" if in_the_cli(spec) else "",
                    "server": "yes" if declared["request"] else "",
                    "description": declared["help"],
                }
            )
    return rows


def settings_table() -> str:
    """The Markdown table the configuration page shows, a section per group."""
    out = []
    for group in GROUPS:
        out.append(
            f"\n**{group}**\n\n| setting | default | environment | CLI flag | per request | what it does |\n|---|---|---|---|---|---|\n"
        )
        out.extend(
            f"| {r['setting']} | {_cell(r['default'])} | {r['env']} | {r['flag']} | {r['server']} | {_cell(r['description'])} |\n"
            for r in settings_rows()
            if r["group"] == group
        )
    return "".join(out)


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
