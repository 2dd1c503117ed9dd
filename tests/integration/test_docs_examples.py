"""The Python examples of the README and of the documentation site run as written, so they cannot rot.

Every ```python block of README.md and of docs/ (the dated reports aside: they record what was run then)
is executed, a page's blocks in order in one namespace, as a reader pasting them would. They run in a
folder holding what `make demo` leaves behind: the demo knowledge base ingested as `.crag/demo-chroma`
(collection "demo") and as the default store `.crag/chroma` (collection "crag"), and `crag/demo/` for the
demo's web index. The chat model is the test suite's `local:tiny` (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crag.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "crag" / "demo"
FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def pages() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [p for p in found if "reports" not in p.relative_to(ROOT).parts]


def examples(page: Path) -> list[str]:
    return FENCE.findall(page.read_text(encoding="utf-8"))


PAGES = [p for p in pages() if examples(p)]


def test_the_pages_with_examples_are_found():
    assert ROOT / "README.md" in PAGES and ROOT / "docs" / "getting-started.md" in PAGES


@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reader")
    for chroma, collection in ((".crag/demo-chroma", "demo"), (".crag/chroma", "crag")):
        result = CliRunner().invoke(
            app,
            [
                "ingest",
                str(DEMO / "kb"),
                "--chroma-dir",
                str(folder / chroma),
                "--collection",
                collection,
                "--no-progress",
            ],
        )
        assert result.exit_code == 0, result.output
    shutil.copytree(DEMO, folder / "crag" / "demo")
    return folder


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_run_as_written(page, demo_folder, monkeypatch):
    monkeypatch.chdir(demo_folder)
    for name in ("CRAG_CHROMA_DIR", "CRAG_COLLECTION", "CRAG_WEB_INDEX", "CRAG_WEB_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    namespace: dict = {"__name__": "__docs_example__"}
    for n, code in enumerate(examples(page), 1):
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(code, f"{page.name}, example {n}", "exec"), namespace)
        except Exception as exc:
            pytest.fail(f"{page.relative_to(ROOT)}, example {n} failed: {type(exc).__name__}: {exc}\n{code}")
    assert os.getcwd() == str(demo_folder)
