"""The layout's rules, checked by the tools made for them: import-linter for which layer may import
which (pyproject.toml, [tool.importlinter]), and a fresh interpreter for what importing costs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the libraries that take seconds to import or load models and native code; ruff's TID253 keeps them
# out of module level (pyproject.toml), and this checks the result where it matters
HEAVY = [
    "torch",
    "transformers",
    "sentence_transformers",
    "peft",
    "sklearn",
    "chromadb",
    "langchain_chroma",
    "langchain_openai",
    "langchain_tavily",
    "llama_cpp",
    "matplotlib",
    "langserve",
    "fastapi",
    "uvicorn",
]


def test_the_import_contracts_hold():
    """Layers import only downwards, siblings stay independent where declared, nodes reach backends and
    the evaluator only through resources, and only the CLI uses typer."""
    linter = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(linter), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.mark.parametrize("module", ["crag.graph", "crag.cli.main", "crag.experiments.runner", "crag.evaluator_model"])
def test_importing_loads_no_model_stack(module):
    """`langgraph dev`, `crag --help` and apps importing the graph must not pay for torch or Chroma."""
    code = f"import json, sys, {module}; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == []
