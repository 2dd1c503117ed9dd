"""The configuration page's table comes from the settings' declarations (docs/hooks.py), and what it says is
what the code does: each environment variable it names sets its setting, each flag is one `crag ask` takes,
each "per request" setting is one the server accepts, and the page keeps the marker where the table goes."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest
import typer

from crag.cli.main import app
from crag.serve.service import SAFE_SETTINGS
from crag.settings import Context

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
hooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hooks)

ROWS = {row["setting"].strip("`"): row for row in hooks.settings_rows()}
# a value each environment variable may take, to see it reach its setting (the rest: their defaults' kind)
ENV_VALUES = {
    "evaluator": "/models/evaluator",
    "chat_model": "local:tiny",
    "chroma_dir": "/data/chroma",
    "chroma_url": "http://127.0.0.1:9",
    "chroma_timeout": "4.5",
    "k": "7",
    "web_backend": "wikipedia",
    "retry_prompt": "compact",
    "requery": "hyde",
    "judge_quotes": "true",
}


def test_every_setting_has_a_row_and_the_page_keeps_the_marker():
    assert sorted(ROWS) == sorted(f.name for f in dataclasses.fields(Context))
    assert hooks.MARKER in (ROOT / "docs" / "guides" / "configuration.md").read_text()
    page = hooks.on_page_markdown(hooks.MARKER, page=None)
    assert sum(line.startswith("| `") for line in page.splitlines()) == len(ROWS)
    assert "| `rewrite` | `keywords` |" in page


def test_the_environment_column_is_what_the_defaults_read(monkeypatch):
    assert {name for name, row in ROWS.items() if row["env"]} == set(ROWS) - {"retriever"}
    for name, value in ENV_VALUES.items():
        variable = ROWS[name]["env"].strip("`")
        monkeypatch.setenv(variable, value)
        assert str(Context.default(name)).lower() == value, name
        assert str(getattr(Context(web_index="w.jsonl"), name)).lower() == value, name
    monkeypatch.setenv("CRAG_K", "none")
    with pytest.raises(ValueError, match="k is a whole number"):
        Context()


def test_defaults_are_the_built_in_ones_whatever_this_machine_sets(monkeypatch):
    monkeypatch.setenv("CRAG_CHAT_MODEL", "openai:gpt-4o-mini")
    assert ROWS["chat_model"]["default"] == "`local`"
    assert next(r for r in hooks.settings_rows() if r["setting"] == "`chat_model`")["default"] == "`local`"


def test_every_flag_is_one_crag_ask_takes():
    ask = typer.main.get_command(app).commands["ask"]
    options = {opt for param in ask.params for opt in param.opts}
    flags = {row["flag"].strip("`") for row in ROWS.values() if row["flag"]}
    assert flags and flags <= options, flags - options


def test_per_request_settings_are_the_servers():
    assert {name for name, row in ROWS.items() if row["server"]} == set(SAFE_SETTINGS) & set(ROWS)


@pytest.mark.parametrize("text", ["a | b", "two\nlines"])
def test_cells_stay_in_their_column(text):
    assert "\n" not in hooks._cell(text) and "\\|" in hooks._cell("a | b")


def test_every_report_is_listed_by_its_date_and_title():
    reports = sorted((ROOT / "docs" / "reports").glob("20*.md"))
    listed = hooks.reports_list("evaluation/index.md").splitlines()
    assert len(listed) == len(reports) > 0
    for path in reports:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# "), path.name
        assert any(line.startswith(f"- {path.name[:10]}: [") and f"(../reports/{path.name})" in line for line in listed)
    assert hooks.REPORTS_MARKER in (ROOT / "docs" / "reports" / "index.md").read_text()


def test_the_readmes_links_into_the_repository_resolve():
    import re

    links = re.findall(r"\]\(((?!https?:|#)[^)]+)\)", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert links
    for link in links:
        assert (ROOT / link.split("#")[0]).exists(), link
