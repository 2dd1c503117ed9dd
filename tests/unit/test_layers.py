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


def python_json(code: str, timeout: float = 120):
    """What `code`, run in a fresh interpreter from the project's root, prints as JSON."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_import_contracts_hold():
    """Layers import only downwards, siblings stay independent where declared, nodes reach backends and
    the evaluator only through resources, and only the CLI uses typer."""
    linter = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(linter), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.mark.parametrize(
    "module",
    ["crag", "crag.graphs.crag", "crag.components", "crag.cli.main", "crag.evaluation.runner", "crag.evaluator"],
)
def test_importing_loads_no_model_stack(module):
    """`langgraph dev`, `crag --help` and apps importing the graph must not pay for torch or Chroma."""
    code = f"import json, sys, {module}; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    assert python_json(code) == []


def test_the_package_exports_its_main_names_on_first_use():
    """`from crag import graph, CRAGRetriever, …` works, and `import crag` alone loads none of them."""
    code = (
        "import json, sys, crag; before = 'crag.graphs.crag' in sys.modules; "
        "values = {name: getattr(crag, name) for name in crag.__all__}; "
        "print(json.dumps([before, sorted(crag.__all__), sorted(dir(crag)), "
        "[name for name, value in values.items() if value is None], sorted([*crag._EXPORTS, '__version__'])]))"
    )
    loaded_early, exported, listed, missing, defined = python_json(code)
    assert not loaded_early and exported == listed == defined and missing == []
    assert {"graph", "Context", "CRAGCompressor", "CRAGRetriever", "RetrievalEvaluator"} <= set(exported)
    failed = subprocess.run(
        [sys.executable, "-c", "import crag; crag.nothing_here"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert "module 'crag' has no attribute 'nothing_here'" in failed.stderr
    # `graph` is the compiled graph even after its module of the same name was imported first
    code = "import crag.components, crag.graphs.crag; from crag import graph; print(type(graph).__name__)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "CompiledStateGraph", done.stderr[-2000:]


def test_scoring_with_the_shipped_evaluator_imports_no_training_code():
    """The evaluator's runtime and its training are two folders (issue 47): grading documents loads the
    model, and none of `crag.evaluator.training` (data, trainer, adapt)."""
    code = (
        "import json, sys; from crag.evaluator import RetrievalEvaluator; "
        "scores = RetrievalEvaluator().invoke({'question': 'Who painted the sea?', "
        "'documents': ['Anna Berg was a Swedish painter. She painted the sea.']}); "
        "print(json.dumps([len(scores), sorted(m for m in sys.modules if m.startswith('crag.evaluator.training'))]))"
    )
    assert python_json(code, timeout=300) == [1, []]
