"""The compact checkpoint format: the tensors a fine-tune changed, as int8 (one scale per row) and
float16, on top of the packaged base; small enough to commit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crag.evaluator.checkpoint import EvaluatorError, Metadata
from crag.models.base_model import PACKAGED_BASE, quiet_loading, resolve_base

WEIGHTS_FILE = "compact.safetensors"


def _base_state(meta: Metadata):
    """The packaged base cut to the checkpoint's layers, with a fresh head (its load report silenced)."""
    from transformers import AutoModelForSequenceClassification

    extra: dict[str, Any] = {"num_hidden_layers": meta.num_layers} if meta.num_layers else {}
    with quiet_loading(reports=True):
        return AutoModelForSequenceClassification.from_pretrained(resolve_base(meta.base), num_labels=1, **extra)


def quantize_rows(weight):
    """Symmetric per-row int8: returns (int8 tensor, float32 scale per row)."""
    import torch

    scale = weight.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / 127.0
    return torch.round(weight / scale).clamp(-127, 127).to(torch.int8), scale.squeeze(1).float()


def export_compact(
    full_dir: Path, out_dir: Path, base: str = PACKAGED_BASE, max_length: int | None = None
) -> dict[str, int]:
    """Write the int8 delta of a full fine-tune (trained from `base`) into `out_dir`."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForSequenceClassification

    meta = Metadata.read(full_dir)
    if meta is None or meta.kind != "full":
        raise EvaluatorError(f"{full_dir} is not a full fine-tune written by `python -m lab evaluator train`")

    tuned_model = AutoModelForSequenceClassification.from_pretrained(full_dir, num_labels=1)
    tuned = tuned_model.state_dict()
    meta.base = base
    meta.num_layers = getattr(tuned_model.config, "num_hidden_layers", None)
    reference = _base_state(meta).state_dict()
    tensors: dict[str, torch.Tensor] = {}
    kept = 0
    for name, value in tuned.items():
        if name in reference and reference[name].shape == value.shape and torch.equal(reference[name], value):
            continue  # unchanged from the base (the frozen word embeddings): loaded from the package
        if not value.is_floating_point():
            tensors[name] = value.contiguous()
        elif value.dim() == 2:
            tensors[f"{name}::q"], tensors[f"{name}::scale"] = quantize_rows(value)
        else:
            tensors[name] = value.to(torch.float16).contiguous()
        kept += value.numel()
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(tensors, out_dir / WEIGHTS_FILE)
    meta.kind = "int8"
    meta.hyperparameters = {**meta.hyperparameters, "exported_from": str(full_dir)}
    if max_length:
        meta.max_length = max_length
    meta.write(out_dir)
    return {"parameters": kept, "bytes": (out_dir / WEIGHTS_FILE).stat().st_size}


def load_compact(directory: Path, meta: Metadata):
    """The base model with the stored tensors dequantized into it (float32)."""
    import torch
    from safetensors.torch import load_file

    path = directory / WEIGHTS_FILE
    if not path.is_file():
        raise EvaluatorError(f"{path} is missing")
    stored = load_file(path)
    model = _base_state(meta)
    state: dict[str, torch.Tensor] = {}
    for name, value in stored.items():
        if name.endswith("::scale"):
            continue
        if name.endswith("::q"):
            key = name[: -len("::q")]
            state[key] = value.float() * stored[f"{key}::scale"].unsqueeze(1)
        else:
            state[name] = value.float() if value.is_floating_point() else value
    result = model.load_state_dict(state, strict=False)
    if result.unexpected_keys:
        raise EvaluatorError(f"{path} does not fit base {meta.base}: unexpected {result.unexpected_keys[:3]}")
    return model


__all__ = ["export_compact"]  # what callers outside the package use
