"""crag: Corrective Retrieval-Augmented Generation (Yan et al., 2024) as a LangGraph agent.

The main names are importable from here (`from crag import graph, Context, CRAGRetriever`). They
load on first use, not at `import crag`: the graph pulls in LangGraph and the evaluator torch,
and a CLI or a server that needs neither should not pay for them.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> the module that defines it
_EXPORTS = {
    "graph": "crag.graph",
    "knowledge_graph": "crag.graph",
    "build_graph": "crag.graph",
    "Context": "crag.context",
    "CRAGCompressor": "crag.components",
    "CRAGRetriever": "crag.components",
    "bound_graph": "crag.components",
    "crag_tool": "crag.components",
    "RetrievalEvaluator": "crag.evaluator_model.runnable",
    "Thresholds": "crag.core.thresholds",
    "PRESETS": "crag.core.thresholds",
    "passage": "crag.core.passages",
}

__all__ = [  # written out, as tools read it; a test checks it matches _EXPORTS
    "PRESETS",
    "CRAGCompressor",
    "CRAGRetriever",
    "Context",
    "RetrievalEvaluator",
    "Thresholds",
    "__version__",
    "bound_graph",
    "build_graph",
    "crag_tool",
    "graph",
    "knowledge_graph",
    "passage",
]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports on first use
    from crag.components import CRAGCompressor, CRAGRetriever, bound_graph, crag_tool
    from crag.context import Context
    from crag.core.passages import passage
    from crag.core.thresholds import PRESETS, Thresholds
    from crag.evaluator_model.runnable import RetrievalEvaluator
    from crag.graph import build_graph, graph, knowledge_graph


def __getattr__(name: str) -> Any:
    # PEP 562: a module-level __getattr__ is Python's own way to export names lazily
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'crag' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


class _Package(types.ModuleType):
    """`crag.graph` is the compiled graph, as `from crag import graph` promises, in every process.

    The module `crag/graph.py` has the same name, and the import system binds each submodule on its
    package once it is imported: `from crag import graph` then gave the module wherever anything had
    imported it first (the documentation's examples, run by the tests, found it). The property keeps
    the name for the graph; `from crag.graph import build_graph` still reaches the module.
    """

    @property
    def graph(self) -> Any:
        return importlib.import_module("crag.graph").graph

    @graph.setter
    def graph(self, value: Any) -> None:  # the import system binding the submodule: the name stays the graph's
        pass


sys.modules[__name__].__class__ = _Package
