"""`crag_evaluator.json`, how a checkpoint's weights are scored with, and the error for an unusable folder."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from crag.models.base_model import ModelUnavailable
from crag.thresholds import PRESETS, Thresholds

METADATA_FILE = "crag_evaluator.json"


class EvaluatorError(ModelUnavailable):
    """A checkpoint that is missing or cannot be loaded; the message says how to make one."""


def create_hint(path: Path | str) -> str:
    return (
        f"create it with `python -m lab evaluator build-data && python -m lab evaluator train --out {path}` "
        "or pass the path of an existing checkpoint"
    )


@dataclass
class Metadata:
    """What a checkpoint needs besides its weights to be scored the way it was trained."""

    kind: str = "full"  # "full" weights, a "lora" adapter or "int8" delta weights on `base`
    base: str = ""
    input_format: str = "pair"  # "pair": tokenizer(q, p); "sep": one text "q [SEP] p" (CRAG/T5)
    score_transform: str = "sigmoid"  # "sigmoid": 2σ(z)−1; "clip": clamp(z, −1, 1)
    max_length: int = 256
    use_title: bool = False
    num_layers: int | None = None
    dynamic_int8: bool = False  # quantize Linear layers to int8 at load time (faster on CPU)
    thresholds: Thresholds = PRESETS["popqa"]  # stored as {"upper": …, "lower": …}
    calibrated: bool = False
    data_hash: str = ""
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    validation_metrics: dict[str, Any] = field(default_factory=dict)
    blend: dict[str, Any] | None = None  # lexical.Blend fields; None = the model's output alone
    format_version: int = 1

    @classmethod
    def read(cls, directory: Path) -> Metadata | None:
        path = directory / METADATA_FILE
        if not path.is_file():
            return None
        try:
            raw = json.loads(path.read_text())
            known = {k: v for k, v in raw.items() if k in cls.__dataclass_fields__}
            if "thresholds" in known:
                known["thresholds"] = Thresholds.from_mapping(known["thresholds"])
            return cls(**known)
        except (json.JSONDecodeError, TypeError, KeyError, ValueError) as exc:
            raise EvaluatorError(f"broken {METADATA_FILE} in {directory}: {exc}; {create_hint(directory)}") from exc

    def write(self, directory: Path) -> None:
        (directory / METADATA_FILE).write_text(json.dumps(asdict(self), indent=2) + "\n")


__all__ = ["EvaluatorError", "Metadata"]  # what callers outside the package use
