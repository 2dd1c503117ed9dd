"""Load an evaluator checkpoint and score (question, passage) pairs in [-1, 1].
CRAG's own T5 format, any Hugging Face cross-encoder with one output, and our compact formats (int8 delta,
LoRA) load through the same code; foreign checkpoints get the paper's PopQA thresholds."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from crag.evaluator.checkpoint import METADATA_FILE, EvaluatorError, Metadata, create_hint
from crag.evaluator.compact import load_compact
from crag.evaluator.lexical import Blend, IdfTable, contrasts, overlap
from crag.evaluator.onnx_engine import EngineUnavailable, engine_from_env, onnx_forward
from crag.evaluator.pairs import SEP, clean
from crag.evaluator.reading import readings
from crag.models.base_model import resolve_base
from crag.passages import titled
from crag.runtime.extras import require
from crag.thresholds import Thresholds, score_of

T5_TYPES = {"t5", "mt5", "umt5"}
EMPTY_SCORE = -1.0  # an empty passage cannot support any answer
CHARS_PER_TOKEN_CAP = 16  # long passages are cut before tokenizing; max_length tokens of them are read (`readings`)


def _foreign_metadata(directory: Path) -> Metadata:
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(directory)
    if getattr(config, "num_labels", None) != 1:
        raise EvaluatorError(
            f"{directory} is a {config.model_type} model with {config.num_labels} outputs; "
            "the evaluator needs a sequence-classification checkpoint with num_labels=1"
        )
    is_t5 = config.model_type in T5_TYPES
    return Metadata(
        base=str(directory),
        input_format="sep" if is_t5 else "pair",
        score_transform="clip" if is_t5 else "sigmoid",
        max_length=512 if is_t5 else 256,
    )


def _load_weights(directory: Path, meta: Metadata):
    from transformers import AutoModelForSequenceClassification

    extra: dict[str, Any] = {"num_hidden_layers": meta.num_layers} if meta.num_layers else {}
    if meta.kind == "int8":
        return load_compact(directory, meta), resolve_base(meta.base)
    if meta.kind == "lora":
        base_dir = resolve_base(meta.base)
        model = AutoModelForSequenceClassification.from_pretrained(base_dir, num_labels=1, **extra)
        peft = require("peft", "train")  # LoRA checkpoints only; the shipped one is int8
        model = peft.PeftModel.from_pretrained(model, directory).merge_and_unload()
        return model, base_dir
    model = AutoModelForSequenceClassification.from_pretrained(directory, num_labels=1, **extra)
    return model, directory


class Scorer:
    """A loaded checkpoint, shared by threads: a lock guards the tokenizer (not re-entrant) and the forward
    pass. `forward`, when given, runs instead of the torch `model` (ONNX Runtime, the same logits)."""

    def __init__(self, model, tokenizer, meta: Metadata, path: Path, lexical=None, forward=None):
        self.model, self.tokenizer, self.meta, self.path = model, tokenizer, meta, path
        self.lexical = lexical  # (Blend, IdfTable) when the checkpoint blends in lexical overlap
        self.forward = forward
        self.forward_passes = 0
        self._lock = threading.Lock()

    @property
    def engine(self) -> str:
        return "torch" if self.forward is None else "onnx"

    @property
    def thresholds(self) -> Thresholds:
        return self.meta.thresholds

    def passage_text(self, text: str, title: str = "") -> str:
        return titled(text, title) if self.meta.use_title else text

    def _transform(self, z: float) -> float:
        if self.meta.score_transform == "clip":
            return min(1.0, max(-1.0, z))
        return score_of(z)

    def readings(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
        """The pairs as the model reads them: a long passage by its start and its best stretch (`readings`)."""
        cap = self.meta.max_length * CHARS_PER_TOKEN_CAP
        idf = self.lexical[1].idf if self.lexical is not None else None
        return readings(self.tokenizer, self.meta.max_length, [(q, clean(p[:cap])) for q, p in pairs], idf)

    def model_logits(
        self, pairs: Sequence[tuple[str, str]], batch_size: int = 32, progress: str | None = None
    ) -> list[float | None]:
        """The model's raw output per pair (None for an empty passage), in mini-batches sorted by length so
        that padding stays small; `progress` describes a progress bar."""
        import torch

        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        validate_pairs(pairs)
        out: list[float | None] = [None] * len(pairs)
        todo = sorted((i for i, (_, p) in enumerate(pairs) if p.strip()), key=lambda i: len(pairs[i][1]))
        bar = tqdm(total=len(todo), desc=progress, unit="pair", leave=False, disable=progress is None)
        for start in range(0, len(todo), batch_size):
            chunk = todo[start : start + batch_size]
            with self._lock, torch.inference_mode():
                encoded = encode_pairs(self.tokenizer, self.meta, self.readings([pairs[i] for i in chunk]))
                if self.forward is None:
                    logits = self.model(**encoded).logits.reshape(-1).float().tolist()
                else:
                    logits = self.forward(encoded).reshape(-1).tolist()
                self.forward_passes += 1
            for i, value in zip(chunk, logits):
                out[i] = float(value)
            bar.update(len(chunk))
        bar.close()
        return out

    def score(
        self,
        pairs: Sequence[tuple[str, str]],
        batch_size: int = 32,
        *,
        blend: bool = True,
        groups: Sequence[object] | None = None,
        progress: str | None = None,
    ) -> list[float]:
        """Scores in [-1, 1] (−1 for an empty passage); `blend=False` scores with the model alone. A blend's
        score may depend on the pairs scored with it: `groups[i]` names pair i's set (default: its question)."""
        if groups is not None and len(groups) != len(pairs):
            raise ValueError(f"{len(groups)} groups for {len(pairs)} pairs")
        raw = self.model_logits(pairs, batch_size, progress)
        kept = [i for i, z in enumerate(raw) if z is not None]
        values = [z for z in raw if z is not None]  # those of `kept`
        if blend and self.lexical is not None:
            head, table = self.lexical
            overlaps = [overlap(table, *pairs[i]) for i in kept]
            within = None if groups is None else [groups[i] for i in kept]
            shares = contrasts(table, [pairs[i] for i in kept], within) if head.contrast else None
            # a set: the pairs of one group with one question, as `contrasts` groups them
            sets = [(None if within is None else within[n], pairs[i][0]) for n, i in enumerate(kept)]
            values = [score_of(z) for z in head.logits(values, overlaps, shares, sets)]
        else:
            values = [self._transform(z) for z in values]
        scores = [EMPTY_SCORE] * len(pairs)
        for i, value in zip(kept, values):
            scores[i] = float(value)
        return scores


def encode_pairs(tokenizer, meta: Metadata, pairs: Sequence[tuple[str, str]]):
    """Tokenize pairs as the checkpoint expects (training and scoring alike)."""
    cap = meta.max_length * CHARS_PER_TOKEN_CAP
    questions = [clean(q[:cap]) for q, _ in pairs]
    passages = [clean(p[:cap]) for _, p in pairs]
    common = {"padding": True, "truncation": True, "max_length": meta.max_length, "return_tensors": "pt"}
    if meta.input_format == "sep":
        return tokenizer([f"{q}{SEP}{p}" for q, p in zip(questions, passages)], **common)
    return tokenizer(questions, passages, **common)


def validate_pairs(pairs: Sequence[tuple[str, str]]) -> None:
    """Reject what is not text, naming the pair."""
    for index, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"pair {index} must be (question, passage), got {type(pair).__name__}")
        question, passage = pair
        if not isinstance(question, str):
            raise TypeError(f"pair {index}: question must be str, got {type(question).__name__}")
        if not isinstance(passage, str):
            raise TypeError(f"pair {index}: passage must be str, got {type(passage).__name__}")
        if not question.strip():
            raise ValueError(f"pair {index}: the question is empty")


def load_scorer(path: str | Path, *, dynamic_int8: bool | None = None, engine: str | None = None) -> Scorer:
    """Load a checkpoint folder on `engine` ("onnx", "torch", "auto"; None: $CRAG_EVALUATOR_ENGINE). The ONNX
    graph copies the weights as loaded: code that trains `scorer.model` sets `scorer.forward = None`."""
    import torch
    from transformers import AutoTokenizer

    chosen = engine_from_env(engine)
    directory = Path(path).expanduser()
    if not directory.is_dir():
        raise EvaluatorError(f"no evaluator checkpoint at {directory}; {create_hint(directory)}")
    meta = Metadata.read(directory)
    try:
        if meta is None:
            if not (directory / "config.json").is_file():
                raise EvaluatorError(
                    f"{directory} holds neither {METADATA_FILE} nor a Hugging Face config.json; "
                    f"{create_hint(directory)}"
                )
            meta = _foreign_metadata(directory)
        model, tokenizer_dir = _load_weights(directory, meta)
        tokenizer = AutoTokenizer.from_pretrained(
            directory if (directory / "tokenizer_config.json").is_file() else tokenizer_dir
        )
    except EvaluatorError:
        raise
    except Exception as exc:  # corrupt weights, wrong shapes, missing tokenizer files …
        raise EvaluatorError(f"cannot load the evaluator at {directory}: {exc}; {create_hint(directory)}") from exc
    model.eval()
    if meta.dynamic_int8 if dynamic_int8 is None else dynamic_int8:
        with warnings.catch_warnings():  # torch 2.13 announces the API's move to torchao; it still works
            warnings.simplefilter("ignore", (DeprecationWarning, UserWarning))
            model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        meta.dynamic_int8 = True
    scorer = Scorer(model, tokenizer, meta, directory, lexical=_load_blend(directory, meta))
    if chosen != "torch" and not meta.dynamic_int8:
        scorer.forward = onnx_forward(
            model, lambda pairs: encode_pairs(tokenizer, meta, pairs), required=chosen == "onnx"
        )
    elif chosen == "onnx":
        raise EngineUnavailable("a model quantized at load (dynamic_int8) runs on torch only")
    return scorer


def _load_blend(directory: Path, meta: Metadata):
    if not meta.blend:
        return None

    try:
        blend = Blend(**meta.blend)
        return blend, IdfTable.load(directory / blend.idf_file)
    except (TypeError, OSError, ValueError, KeyError) as exc:
        raise EvaluatorError(f"broken lexical blend in {directory}: {exc}; {create_hint(directory)}") from exc
