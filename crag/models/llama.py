"""Loading a GGUF file with llama-cpp-python, the one way this project does.

Every model is loaded without llama.cpp's extra weight buffers (its AMX matrix kernels and repacked weight
layouts): the pinned llama-cpp-python crashes with them on CPUs that have AMX (ggml-org/llama.cpp#20824), and
without them it is as fast there and faster on CPUs without AVX-512.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from crag.runtime.extras import require

# one load at a time: each wraps the binding's defaults and puts back what it found, so two loads that
# overlapped (a pool's lane made while another model's pool loads) could leave the wrapper in place
_LOADING = threading.Lock()


def load_llama(path: str | Path, **options: Any) -> Any:
    """A `llama_cpp.Llama` for the GGUF at `path` with `options` (n_ctx, n_threads …), loaded without
    llama.cpp's extra weight buffers. `Llama()` takes no argument for them, so the binding's default
    model parameters are wrapped while it loads, one load at a time."""
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
