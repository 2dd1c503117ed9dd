"""crag: Corrective Retrieval-Augmented Generation (Yan et al., 2024) as a LangGraph agent.
The main names (`from crag import graph, Context, CRAGRetriever`) load on first use, so that
`import crag` pulls in neither LangGraph nor torch."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "graph": "crag.graphs.crag",
    "knowledge_graph": "crag.graphs.crag",
    "build_graph": "crag.graphs.crag",
    "Context": "crag.settings",
    "CRAGCompressor": "crag.components",
    "CRAGRetriever": "crag.components",
    "bound_graph": "crag.components",
    "crag_tool": "crag.components",
    "HybridRetriever": "crag.search.hybrid",
    "RetrievalEvaluator": "crag.evaluator.runnable",
    "Thresholds": "crag.thresholds",
    "PRESETS": "crag.thresholds",
    "passage": "crag.passages",
    "ingest": "crag.indexing.api",
}

__all__ = [  # written out, as tools read it; a test checks it matches _EXPORTS
    "PRESETS",
    "CRAGCompressor",
    "CRAGRetriever",
    "Context",
    "HybridRetriever",
    "RetrievalEvaluator",
    "Thresholds",
    "__version__",
    "bound_graph",
    "build_graph",
    "crag_tool",
    "graph",
    "ingest",
    "knowledge_graph",
    "passage",
]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports on first use
    from crag.components import CRAGCompressor, CRAGRetriever, bound_graph, crag_tool
    from crag.evaluator.runnable import RetrievalEvaluator
    from crag.graphs.crag import build_graph, graph, knowledge_graph
    from crag.indexing.api import ingest
    from crag.passages import passage
    from crag.search.hybrid import HybridRetriever
    from crag.settings import Context
    from crag.thresholds import PRESETS, Thresholds


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'crag' has no attribute {name!r}")
    imported = importlib.import_module(module)
    value = imported if module == f"{__name__}.{name}" else getattr(imported, name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
