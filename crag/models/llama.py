"""Loading a GGUF file with llama-cpp-python, without llama.cpp's extra weight buffers: the pinned
version crashes with them on AMX CPUs (ggml-org/llama.cpp#20824), and is no slower without them."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from crag.runtime.extras import require

# one load at a time: two overlapping loads could leave the defaults' wrapper in place
_LOADING = threading.Lock()


def load_llama(path: str | Path, **options: Any) -> Any:
    """A `llama_cpp.Llama` for the GGUF at `path` with `options`; `Llama()` takes no argument for the
    extra buffers, so the binding's default model parameters are wrapped while it loads."""
    llama_cpp = require("llama_cpp", "local")
    binding = llama_cpp.llama.llama_cpp  # the module llama.py reads the defaults from
    with _LOADING:
        default = binding.llama_model_default_params

        def without_extra_buffers() -> Any:
            params = default()
            params.use_extra_bufts = False
            return params

        binding.llama_model_default_params = without_extra_buffers
        try:
            return llama_cpp.Llama(model_path=str(path), **options)
        finally:
            binding.llama_model_default_params = default


__all__ = ["load_llama"]  # what callers outside the package use
