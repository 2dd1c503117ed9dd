"""The `crag` command itself: what it says about itself."""

from __future__ import annotations

from typer.testing import CliRunner

from crag import __version__
from crag.cli.main import app


def test_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output == f"crag-langgraph {__version__}\n"
