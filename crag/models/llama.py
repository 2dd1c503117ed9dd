"""Loading a GGUF file with llama-cpp-python, the one way this project does.

Every model is loaded without llama.cpp's extra weight buffers (its AMX matrix kernels and the
repacked weight layouts). llama-cpp-python 0.3.36, what `[local]` pins, crashes with them on any
prompt of more than one token on CPUs that have AMX (Sapphire Rapids and later Xeons;
ggml-org/llama.cpp#20824), and without them it is as fast there as 0.3.16 with AMX (153 prompt
tokens/s against 149 for the 1.5B on 2 cores). On a CPU with AVX2 and no AVX-512 the buffers cost
speed: the 1.5B reads 50 prompt tokens/s without them and 36 with them (0.3.16: 30 and 33).
docs/reports/2026-11-28-llama-cpp-0.3.36.md has the measurements.
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
