"""Fine-tune a retrieval evaluator (full or LoRA) in a plain PyTorch loop, from the packaged base, a T5
checkpoint or a random T5; the best epoch by validation ROC-AUC is kept and calibrated."""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

from crag.evaluator.checkpoint import EvaluatorError, Metadata
from crag.evaluator.lexical import IdfTable
from crag.evaluator.model import T5_TYPES, Scorer, encode_pairs
from crag.evaluator.pairs import Pair, read_pairs
from crag.evaluator.reading import readings
from crag.evaluator.training.calibration import calibrate
from crag.evaluator.training.evaluation import classification_metrics
from crag.evaluator.training.losses import LOSSES
from crag.models.base_model import PACKAGED_BASE, resolve_base
from crag.passages import titled
from crag.runtime.extras import require

if TYPE_CHECKING:
    from torch.optim import Optimizer
    from torch.optim.lr_scheduler import LRScheduler

RANDOM_T5_PRESETS: dict[str, dict[str, Any]] = {
    # T5-small's shape; the vocabulary is the packaged WordPiece one (no T5 tokenizer ships offline)
    "random-t5-small": {"d_model": 512, "d_ff": 2048, "d_kv": 64, "num_layers": 6, "num_heads": 8},
    "random-t5-tiny": {"d_model": 64, "d_ff": 128, "d_kv": 16, "num_layers": 2, "num_heads": 2},
}


@dataclass
class TrainConfig:
    train: Path
    validation: Path
    out: Path
    base: str = PACKAGED_BASE
    epochs: int = 3
    batch_size: int = 16
    lr: float | None = None  # default: 5e-5 full, 5e-4 LoRA, 3e-4 random T5
    weight_decay: float = 0.01
    warmup: float = 0.1
    max_length: int = 128
    seed: int = 42
    loss: str = "bce"
    lora_rank: int = 0  # 0 = full fine-tune
    num_layers: int | None = None
    use_title: bool = False
    title_dropout: float = 0.5  # with use_title: train without the title this often, so titles stay optional
    freeze_embeddings: bool = True  # keep the base's word embeddings, so a compact export can reuse them
    limit: int | None = None
    false_relevant_cost: float = 2.0
    teacher_weight: float = 0.0  # train towards (1 − w)·label + w·teacher where a pair carries a teacher score
    # read a long passage in training as the scorer reads it (`crag.evaluator.reading`)
    read_long: bool = False
    extra: dict = field(default_factory=dict)


def set_seed(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _random_t5(preset: str):
    from transformers import AutoTokenizer, T5Config, T5ForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(resolve_base(PACKAGED_BASE))
    # PreTrainedConfig takes num_labels and decoder_start_token_id among its **kwargs; T5Config's typed
    # (dataclass) signature does not list them
    config = T5Config(  # type: ignore[call-arg]
        vocab_size=tokenizer.vocab_size,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.sep_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
        num_labels=1,
        **RANDOM_T5_PRESETS[preset],
    )
    return T5ForSequenceClassification(config), tokenizer, False


def init_model(base: str, num_layers: int | None):
    """Model, tokenizer and whether the weights are pretrained: a random T5 preset, a config-only folder
    or a checkpoint; `num_layers` keeps only the first encoder layers."""
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    if base in RANDOM_T5_PRESETS:
        return _random_t5(base)
    directory = resolve_base(base)
    if not (directory / "config.json").is_file():
        raise EvaluatorError(f"--base {base}: no config.json in {directory}")
    has_weights = any(directory.glob("*.safetensors")) or any(directory.glob("*.bin"))
    tok_dir = directory if (directory / "tokenizer_config.json").is_file() else resolve_base(PACKAGED_BASE)
    tokenizer = AutoTokenizer.from_pretrained(tok_dir)
    extra: dict[str, Any] = {"num_hidden_layers": num_layers} if num_layers else {}
    if not has_weights:
        config = AutoConfig.from_pretrained(directory, num_labels=1, **extra)
        return AutoModelForSequenceClassification.from_config(config), tokenizer, False
    return AutoModelForSequenceClassification.from_pretrained(directory, num_labels=1, **extra), tokenizer, True


def _wrap_lora(model, rank: int):
    peft = require("peft", "train")
    targets = (
        ["q", "k", "v", "o", "wi", "wo"] if model.config.model_type in T5_TYPES else ["query", "key", "value", "dense"]
    )
    config = peft.LoraConfig(
        task_type=peft.TaskType.SEQ_CLS, r=rank, lora_alpha=2 * rank, lora_dropout=0.05, target_modules=targets
    )
    return peft.get_peft_model(model, config)


def _texts(pairs: list[Pair], use_title: bool, rng: random.Random | None = None, dropout: float = 0.0):
    """(question, passage) texts; with `rng`, each title is left out with probability `dropout`."""

    def keep_title(p: Pair) -> bool:
        return use_title and bool(p.title) and not (rng is not None and rng.random() < dropout)

    return [(p.question, titled(p.passage, p.title) if keep_title(p) else p.passage) for p in pairs]


def _target(pair: Pair, teacher_weight: float) -> float:
    """The label, blended with the teacher's probability when the pair has one."""
    if pair.teacher is None or not teacher_weight:
        return float(pair.label)
    return (1.0 - teacher_weight) * pair.label + teacher_weight * pair.teacher


def evaluate_scorer(
    scorer: Scorer, pairs: list[Pair], use_title: bool, batch_size: int = 64, progress: str | None = None
) -> list[float]:
    # each pair in the set of its group and question, as the graph grades a question's documents together
    groups = [p.group for p in pairs]
    return scorer.score(_texts(pairs, use_title), batch_size=batch_size, groups=groups, progress=progress)


@dataclass
class Optimiser:
    """AdamW with linear warm-up and decay over the trainable parameters."""

    params: list
    optimizer: Optimizer
    scheduler: LRScheduler

    @classmethod
    def create(cls, model, lr: float, weight_decay: float, warmup: float, total_steps: int) -> Optimiser:
        import torch
        from transformers import get_linear_schedule_with_warmup

        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
        scheduler = get_linear_schedule_with_warmup(optimizer, int(warmup * total_steps), max(1, total_steps))
        return cls(params, optimizer, scheduler)


def train_epoch(
    model,
    tokenizer,
    meta: Metadata,
    pairs: list[Pair],
    optimiser: Optimiser,
    loss_fn,
    *,
    order_rng: random.Random,
    title_rng: random.Random,
    batch_size: int,
    use_title: bool,
    title_dropout: float,
    teacher_weight: float,
    desc: str,
    deadline: float | None = None,
    progress: bool = True,
    read: Callable[[list[tuple[str, str]]], list[tuple[str, str]]] | None = None,
) -> tuple[float, bool]:
    """One pass over `pairs` in a seeded order: (mean loss, whether the `perf_counter` `deadline` stopped it).
    `read`: what the model reads of each pair, as the scorer will."""
    import torch

    model.train()
    order = list(range(len(pairs)))
    order_rng.shuffle(order)
    bar = tqdm(range(0, len(order), batch_size), desc=desc, unit="batch", disable=not progress)
    running, steps, stopped = 0.0, 0, False
    for start in bar:
        if deadline is not None and time.perf_counter() >= deadline:
            stopped = True
            break
        batch = [pairs[i] for i in order[start : start + batch_size]]
        texts = _texts(batch, use_title, title_rng, title_dropout)
        encoded = encode_pairs(tokenizer, meta, read(texts) if read is not None else texts)
        logits = model(**encoded).logits.reshape(-1)
        loss = loss_fn(logits, torch.tensor([_target(p, teacher_weight) for p in batch], dtype=torch.float32))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(optimiser.params, 1.0)
        optimiser.optimizer.step()
        optimiser.scheduler.step()
        optimiser.optimizer.zero_grad()
        running += loss.item()
        steps += 1
        bar.set_postfix(loss=f"{running / steps:.4f}")
    bar.close()
    model.eval()
    return running / max(1, steps), stopped


def train(cfg: TrainConfig) -> dict:
    """Train, keep the best epoch, calibrate, save; return the metadata written."""
    if cfg.loss not in LOSSES:
        raise ValueError(f"unknown loss {cfg.loss!r}; choose one of {sorted(LOSSES)}")
    set_seed(cfg.seed)
    train_pairs, val_pairs = read_pairs(cfg.train), read_pairs(cfg.validation)
    if cfg.limit:
        train_pairs = random.Random(cfg.seed).sample(train_pairs, min(cfg.limit, len(train_pairs)))
    model, tokenizer, pretrained = init_model(cfg.base, cfg.num_layers)
    is_t5 = model.config.model_type in T5_TYPES
    meta = Metadata(
        kind="lora" if cfg.lora_rank else "full",
        base=cfg.base if cfg.base in (PACKAGED_BASE, *RANDOM_T5_PRESETS) else str(resolve_base(cfg.base).resolve()),
        input_format="sep" if is_t5 else "pair",
        score_transform=LOSSES[cfg.loss].transform,
        max_length=cfg.max_length,
        use_title=cfg.use_title,
        num_layers=cfg.num_layers,
    )
    if cfg.lora_rank:
        model = _wrap_lora(model, cfg.lora_rank)
    elif cfg.freeze_embeddings and pretrained:
        model.get_input_embeddings().weight.requires_grad_(False)
    lr = cfg.lr or (5e-4 if cfg.lora_rank else 3e-4 if cfg.base in RANDOM_T5_PRESETS else 5e-5)
    steps_per_epoch = (len(train_pairs) + cfg.batch_size - 1) // cfg.batch_size
    optimiser = Optimiser.create(model, lr, cfg.weight_decay, cfg.warmup, steps_per_epoch * cfg.epochs)
    scorer = Scorer(model, tokenizer, meta, cfg.out)
    history: list[dict] = []
    best: dict | None = None
    cfg.out.mkdir(parents=True, exist_ok=True)
    order_rng = random.Random(cfg.seed)
    title_rng = random.Random(cfg.seed + 1)
    read = None
    if cfg.read_long:
        table = IdfTable.from_corpus(dict.fromkeys(p.passage for p in train_pairs))
        read = lambda texts: readings(tokenizer, meta.max_length, texts, table.idf)  # noqa: E731
    labels = [p.label for p in val_pairs]
    started = time.perf_counter()
    for epoch in range(1, cfg.epochs + 1):
        loss, _ = train_epoch(
            model,
            tokenizer,
            meta,
            train_pairs,
            optimiser,
            LOSSES[cfg.loss],
            order_rng=order_rng,
            title_rng=title_rng,
            batch_size=cfg.batch_size,
            use_title=cfg.use_title,
            title_dropout=cfg.title_dropout,
            teacher_weight=cfg.teacher_weight,
            desc=f"epoch {epoch}/{cfg.epochs}",
            read=read,
        )
        scores = evaluate_scorer(scorer, val_pairs, cfg.use_title)
        metrics = classification_metrics(labels, scores, upper=0.0)
        record = {"epoch": epoch, "train_loss": loss, **metrics}
        history.append(record)
        tqdm.write(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in record.items()}))
        if best is None or metrics["roc_auc"] > best["metrics"]["roc_auc"]:
            best = {"epoch": epoch, "metrics": metrics, "scores": scores}
            _save(model, tokenizer, cfg.out, lora=bool(cfg.lora_rank))
    assert best is not None
    calibration = calibrate(labels, best["scores"], false_relevant_cost=cfg.false_relevant_cost)
    meta.thresholds = calibration.thresholds
    meta.calibrated = True
    meta.data_hash = _data_hash(cfg.train)
    meta.hyperparameters = {
        **{k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items()},
        "lr": lr,
        "best_epoch": best["epoch"],
        "train_pairs": len(train_pairs),
        "train_seconds": round(time.perf_counter() - started, 1),
    }
    meta.validation_metrics = {
        **classification_metrics(labels, best["scores"], upper=calibration.upper),
        "calibration": calibration.as_dict(),
        "history": history,
    }
    meta.write(cfg.out)
    return asdict(meta)


def _save(model, tokenizer, out: Path, lora: bool) -> None:
    model.save_pretrained(out)
    if lora:  # a LoRA adapter reuses the base model's tokenizer; PEFT's generated card says nothing
        (out / "README.md").unlink(missing_ok=True)
    else:
        tokenizer.save_pretrained(out)


def _data_hash(train_path: Path) -> str:
    """The hash of the data the pairs were built from (build-data's manifest's, else the file's)."""
    manifest = Path(train_path).parent / "manifest.json"
    if manifest.is_file():
        return json.loads(manifest.read_text()).get("data_hash", "")

    return hashlib.sha256(Path(train_path).read_bytes()).hexdigest()[:16]


__all__ = ["TrainConfig", "train"]  # what callers outside the package use
