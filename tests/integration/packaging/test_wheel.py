"""The wheel as a user installs it: built from this tree, installed into a fresh venv with no
extras, it imports the graph and scores a pair with the shipped evaluator, and what needs an extra
says which. Slow (a venv and its dependencies, from pip's cache): `make test-slow`."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow

CHECK = """
import json, importlib.util
from crag import RetrievalEvaluator, __version__
from crag.graphs import crag as graph
from crag.models.chat import chat_model
from crag.runtime.extras import MissingExtra
scores = RetrievalEvaluator().invoke({"question": "Who wrote Hamlet?", "documents": [
    "Hamlet is a tragedy written by William Shakespeare around 1600.",
    "Oslo is the capital of Norway."]})
try:
    chat_model("local")
    local = "loaded"
except MissingExtra as exc:
    local = str(exc)
print(json.dumps({"scores": scores, "version": __version__, "nodes": sorted(graph.get_graph().nodes),
                  "local": local, "llama_cpp": importlib.util.find_spec("llama_cpp") is not None,
                  "langserve": importlib.util.find_spec("langserve") is not None}))
"""


def run(*args, cwd=None, timeout=1500):
    done = subprocess.run(list(map(str, args)), cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_the_wheel_installs_without_extras_and_scores_a_pair(tmp_path):
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp_path / "dist", ROOT)
    (wheel,) = (tmp_path / "dist").glob("crag_langgraph-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "crag/py.typed" in names and "crag/evaluator/default/crag_evaluator.json" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    # the bundled models' licence and attribution travel with the wheel
    assert any(n.endswith(".dist-info/licenses/NOTICE") for n in names)
    assert any(n.endswith(".dist-info/licenses/LICENSES/Apache-2.0.txt") for n in names)
    assert not any(n.startswith("tests/") for n in names)

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", "torch==2.13.0")  # the CPU build, as the README says
    run(python, "-m", "pip", "install", "-q", wheel)
    out = json.loads(run(python, "-c", CHECK, cwd=tmp_path).strip().splitlines()[-1])
    relevant, unrelated = out["scores"]
    assert -1 <= unrelated < relevant <= 1
    assert {"retrieve", "grade", "refine", "rewrite_and_search", "generate"} <= set(out["nodes"])
    assert not out["llama_cpp"] and not out["langserve"]  # the extras stayed out
    assert "pip install 'crag-langgraph[local]'" in out["local"]
    help_text = run(venv / "bin" / "crag", "--help", cwd=tmp_path)
    assert "ask" in help_text and "ingest" in help_text
