"""The evaluator's forward pass on ONNX Runtime: the same float32 scores as torch (so thresholds hold), sooner.
Exported once per checkpoint, fused, checked against torch on a probe batch and cached; any failure leaves
torch in place. Hand-written: optimum needs an older transformers and cannot take our compact checkpoints."""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import logging
import os
import secrets
import warnings
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from crag.runtime.paths import CACHE_ENV, cache_root

logger = logging.getLogger(__name__)

Engine = Literal["auto", "torch", "onnx"]
ENGINES: tuple[str, ...] = get_args(Engine)
ENGINE_ENV = "CRAG_EVALUATOR_ENGINE"  # the default engine for evaluators that do not name one
# "auto" leaves bigger models on torch: a graph over 2 GB needs ONNX's external-data format
MAX_AUTO_PARAMETERS = 150_000_000
KEEP_GRAPHS = 4  # cached graphs kept (the most recently used): an adapted checkpoint adds one each
EXPORT_ATTENTION = "eager"
PROBE_TOLERANCE = 1e-3  # largest |logit difference| from torch accepted on the probe batch
# model types onnxruntime's transformer optimizer fuses here; others run as exported
FUSED_TYPES = frozenset({"bert"})
# unequal lengths, so that padding and the attention mask are exercised
PROBE_PAIRS = [
    ("Who wrote the novel Middlemarch?", "Middlemarch is a novel by the English author George Eliot, published 1871."),
    ("how do I list hidden files", "ls -a, --all: do not ignore entries starting with ."),
    ("capital of France", "Paris"),
]


class EngineUnavailable(RuntimeError):
    """The ONNX engine was asked for by name and cannot run this checkpoint; the message says why."""


def engine_from_env(value: str | None = None) -> str:
    """The engine named by `value`, else by $CRAG_EVALUATOR_ENGINE, else "auto"."""
    name = (value or os.environ.get(ENGINE_ENV) or "auto").strip().lower()
    if name not in ENGINES:
        raise ValueError(f"unknown evaluator engine {name!r} (from {ENGINE_ENV}?); choose one of {', '.join(ENGINES)}")
    return name


def cache_dir() -> Path:
    return cache_root() / "evaluator-onnx"


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "-"


def graph_key(model: Any) -> str:
    """A digest of everything the exported graph depends on: weights, configuration, library versions."""
    digest = hashlib.sha256()
    versions = {d: _version(d) for d in ("torch", "onnxruntime", "onnx", "transformers")}
    digest.update(
        json.dumps([type(model).__name__, model.config.to_json_string(), EXPORT_ATTENTION, versions]).encode()
    )
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().contiguous().cpu().numpy().tobytes())
    return digest.hexdigest()[:32]


def input_names(model: Any, encoded_keys: Sequence[str]) -> list[str]:
    """The tokenizer's outputs in the order `forward` takes them: the exporter binds inputs by position."""
    params = list(inspect.signature(model.forward).parameters)
    # a key `forward` does not name would land in its **kwargs, unused
    return sorted((k for k in encoded_keys if k in params), key=params.index)


def _export(model: Any, names: list[str], sample: dict, path: Path) -> None:
    import torch

    class Logits(torch.nn.Module):  # positional inputs in, the logits tensor out
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            return self.inner(**dict(zip(names, args))).logits

    dynamic = {n: {0: "batch", 1: "sequence"} for n in names} | {"logits": {0: "batch"}}
    attention = getattr(model.config, "_attn_implementation", None)
    if attention is not None and hasattr(model, "set_attn_implementation"):
        # matmuls and softmax, which the optimizer fuses; torch's SDPA exports as a shape it does not recognise
        model.set_attn_implementation(EXPORT_ATTENTION)
    try:
        # the tracer's warnings are about shapes the probe batch checks
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Logits(model).eval(),
                tuple(sample[n] for n in names),
                str(path),
                input_names=names,
                output_names=["logits"],
                dynamic_axes=dynamic,
                opset_version=17,
                dynamo=False,  # the TorchScript exporter: the dynamo one needs onnxscript, not a dependency
            )
    finally:
        if attention is not None and hasattr(model, "set_attn_implementation"):
            model.set_attn_implementation(attention)


def _fuse(path: Path, config: Any) -> None:
    """onnxruntime's transformer fusions for a BERT-style encoder, in place."""
    if getattr(config, "model_type", "") not in FUSED_TYPES:
        return
    from onnxruntime.transformers import optimizer

    fused = optimizer.optimize_model(
        str(path), model_type="bert", num_heads=config.num_attention_heads, hidden_size=config.hidden_size, opt_level=1
    )
    fused.save_model_to_file(str(path))


def _build(model: Any, names: list[str], sample: dict, target: Path) -> None:
    """Export and fuse beside `target`, then move it into place, so no process reads half a file."""
    import onnx  # noqa: F401  (torch's exporter needs it; missing, this names it)

    target.parent.mkdir(parents=True, exist_ok=True)
    # a name of this process's own, created by the exporter as any file is (mkstemp's would be 0600)
    staging = target.with_name(f".{target.stem}.{os.getpid()}.{secrets.token_hex(4)}.onnx")
    try:
        _export(model, names, sample, staging)
        _fuse(staging, model.config)
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)


def _prune(folder: Path, keep: int = KEEP_GRAPHS) -> None:
    graphs = sorted(folder.glob("*.onnx"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in graphs[keep:]:
        old.unlink(missing_ok=True)


class OnnxForward:
    """`forward(encoded) -> logits` (numpy, one row per pair) on an ONNX Runtime session."""

    def __init__(self, path: Path, names: list[str], threads: int):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.path, self.names = path, names
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def __call__(self, encoded: dict) -> Any:
        feed = {n: encoded[n].numpy() for n in self.names}
        return self.session.run(["logits"], feed)[0]


def onnx_forward(
    model: Any, encode: Callable[[Sequence[tuple[str, str]]], dict], *, required: bool
) -> OnnxForward | None:
    """The ONNX Runtime forward pass for a loaded torch `model`, cached or built, checked against torch.
    When it cannot be had: `EngineUnavailable` if `required`, else None and a warning."""
    import torch

    size = sum(p.numel() for p in model.parameters())
    if not required and size > MAX_AUTO_PARAMETERS:
        logger.info("the evaluator (%d parameters) runs on torch; CRAG_EVALUATOR_ENGINE=onnx exports it anyway", size)
        return None
    try:
        sample = encode(PROBE_PAIRS)
        names = input_names(model, list(sample))
        folder = cache_dir()
        path = folder / f"{graph_key(model)}.onnx"
        if path.is_file():
            with contextlib.suppress(OSError):  # a read-only cache still serves
                path.touch()  # recently used: pruned last
        else:
            logger.info("exporting the evaluator to ONNX (once per checkpoint) into %s", folder)
            _build(model, names, sample, path)
            _prune(folder)
        forward = OnnxForward(path, names, torch.get_num_threads())
        with torch.inference_mode():
            expected = model(**sample).logits.float().numpy()
        got = forward(sample)
        gap = float(np.abs(got.reshape(expected.shape) - expected).max())
        if not gap <= PROBE_TOLERANCE:  # NaN fails too
            path.unlink(missing_ok=True)
            raise EngineUnavailable(f"its logits differ from torch's by {gap:.2g} on a probe batch")
        return forward
    except Exception as exc:  # an architecture the exporter cannot trace, a read-only cache, a missing package …
        reason = f"the evaluator cannot run on ONNX Runtime ({type(exc).__name__}: {exc})"
        if required:
            raise EngineUnavailable(reason) from exc
        logger.warning(
            "%s; it runs on torch (the same scores, slower). %s=torch skips the attempt; %s names a writable "
            "cache folder",
            reason,
            ENGINE_ENV,
            CACHE_ENV,
        )
        return None
