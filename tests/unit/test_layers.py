"""The layout's rules, checked by the tools made for them: import-linter for which layer may import
which (pyproject.toml, [tool.importlinter]), and a fresh interpreter for what importing costs."""

from __future__ import annotations

import ast
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


def _public(module: str) -> set[str] | None:
    """The names a crag module declares public (its `__all__`, read from its source), or None when `module` is
    not a module of the package."""
    path = ROOT.joinpath(*module.split("."))
    source = path.with_suffix(".py") if path.with_suffix(".py").is_file() else path / "__init__.py"
    if not source.is_file():
        return None
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def _crag_names(tree: ast.Module) -> list[tuple[str, str, int]]:
    """(module, name, line) for each name the code takes from a crag module: imported from it, or read as an
    attribute of a crag module it imported."""
    found, modules = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "crag":
            for alias in node.names:
                if _public(f"{node.module}.{alias.name}") is not None:  # a module: its attributes are checked
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                else:
                    found.append((node.module, alias.name, node.lineno))
        elif isinstance(node, ast.Import):
            modules.update({a.asname or a.name: a.name for a in node.names if a.name.split(".")[0] == "crag"})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            found.append((modules[node.value.id], node.attr, node.lineno))
    return found


def test_the_lab_uses_only_public_names_of_crag():
    """What the project measures and trains itself with (lab/) may use only what a module of crag declares
    public (its `__all__`), so that a private helper can change without breaking a script that leans on it."""
    private = []
    for path in sorted((ROOT / "lab").rglob("*.py")):
        for module, name, line in _crag_names(ast.parse(path.read_text())):
            public = _public(module)
            if public is not None and name not in public and _public(f"{module}.{name}") is None:
                private.append(f"{path.relative_to(ROOT)}:{line}: {module}.{name}")
    assert not private, "\n".join(private)
