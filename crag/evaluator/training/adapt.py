"""Adapt the evaluator to a user's own collection, without labels: its head fitted on self-made queries,
anchored by half of a general set. One worse than its start on held-apart documents, or forgetting more than
`refuse_general_drop` of the general set, is not written unless forced."""

from __future__ import annotations

import hashlib
import random
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from crag.evaluator.checkpoint import EvaluatorError, Metadata
from crag.evaluator.compact import export_compact
from crag.evaluator.lexical import IDF_FILE, IdfTable, fit_blend
from crag.evaluator.model import Scorer, load_scorer
from crag.evaluator.pairs import Pair
from crag.evaluator.runnable import DEFAULT_CHECKPOINT
from crag.evaluator.training.adapt_checks import Check, check_labelled, split_pairs, verdict
from crag.evaluator.training.adapt_head import HeadData, features, fit_head, split_general
from crag.evaluator.training.calibration import calibrate
from crag.evaluator.training.collection_questions import write_questions
from crag.evaluator.training.evaluation import roc_auc
from crag.evaluator.training.general import load_general_check
from crag.evaluator.training.losses import LOSSES
from crag.evaluator.training.selfsup import RETRIEVED_DEPTH, CollectionChunk, self_supervised_sets
from crag.evaluator.training.trainer import Optimiser, evaluate_scorer, set_seed, train_epoch
from crag.models.base_model import PACKAGED_BASE
from crag.thresholds import score_of

FINISH_MARGIN = 1.5  # time kept after training: this many times what scoring took before, plus:
FINISH_SECONDS = 20.0  # export, blend and saving


@dataclass
class AdaptConfig:
    out: Path
    start: Path | None = None  # the evaluator to adapt (default: the shipped one)
    held_apart: float = 0.3  # share of documents never fitted on: half choose the head and thresholds, half check
    hard_negatives: int = 2
    max_queries: int | None = 4000  # chunks asked about (a sample, by seed); negatives come from all chunks
    epochs: int = 0  # also fine-tune the cross-encoder for this many epochs (0: the head alone)
    batch_size: int = 16
    lr: float = 1e-4
    teacher_weight: float = 0.5
    title_dropout: float = 0.5
    seed: int = 0
    time_limit: float | None = None  # seconds for the whole run; training stops early to keep it
    false_relevant_cost: float = 2.0
    max_general_drop: float = 0.02  # more forgetting on the general set is written with a warning
    refuse_general_drop: float = 0.05  # and this much is not written at all
    labelled: list[Pair] | None = None
    # the chat model that writes questions for sampled chunks; None: headings and cut-out sentences alone
    question_writer: Callable[[str], str] | None = None
    question_writer_name: str = ""  # what wrote them, for the checkpoint's record ("local", "openai:…")
    question_share: float = 0.5  # of the time limit, at most, spent writing questions
    max_question_chunks: int = 300  # chunks asked about, at most
    general: list[Pair] | None = None  # the forgetting check's pairs (default: the shipped general set)
    force: bool = False
    progress: bool = True


@dataclass
class AdaptResult:
    out: Path
    written: bool
    problems: list[str]  # why it was not written (or was, forced)
    warnings: list[str]  # written, but the user should know
    checks: list[Check]
    meta: Metadata
    counts: dict[str, int] = field(default_factory=dict)


def final_scores(scorer: Scorer, pairs: list[Pair], progress: str | None = None) -> list[float]:
    """Scores as the checkpoint serves them."""
    return evaluate_scorer(scorer, pairs, scorer.meta.use_title, progress=progress)


def teacher_probabilities(
    scorer: Scorer, pairs: list[Pair], embed: Callable[[list[str]], Sequence[Sequence[float]]]
) -> list[float]:
    """Per pair, the mean of the starting evaluator's and the embedding model's probability of relevance."""
    from sklearn.linear_model import LogisticRegression

    evaluator = [(s + 1.0) / 2.0 for s in final_scores(scorer, pairs)]
    questions = sorted({p.question for p in pairs})
    passages = sorted({p.passage for p in pairs})
    qv = dict(zip(questions, np.asarray(embed(questions), dtype="float32")))
    pv = dict(zip(passages, np.asarray(embed(passages), dtype="float32")))

    def unit(v):
        return v / max(float(np.linalg.norm(v)), 1e-12)

    cos = np.array([[float(np.dot(unit(qv[p.question]), unit(pv[p.passage])))] for p in pairs])
    fit = LogisticRegression().fit(cos, [p.label for p in pairs])
    embedding = fit.predict_proba(cos)[:, 1]
    return [round((e + c) / 2.0, 4) for e, c in zip(evaluator, embedding.tolist())]


def collection_hash(chunks: list[CollectionChunk]) -> str:
    digest = hashlib.sha256()
    for text in sorted(c.text for c in chunks):
        digest.update(text.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:16]


def adapt(
    chunks: list[CollectionChunk],
    embed: Callable[[list[str]], Sequence[Sequence[float]]],
    cfg: AdaptConfig,
    *,
    collection: str = "",
    log: Callable[[str], None] = print,
) -> AdaptResult:
    """Build queries and sets, fine-tune (`cfg.epochs`), fit the head, check; write `cfg.out` unless a check fails."""
    started = time.perf_counter()
    deadline = started + cfg.time_limit if cfg.time_limit else None
    if cfg.labelled is not None:
        check_labelled(cfg.labelled)
    set_seed(cfg.seed)
    start_dir = Path(cfg.start or DEFAULT_CHECKPOINT)
    start = load_scorer(start_dir)
    if start.meta.input_format != "pair" or start.meta.base != PACKAGED_BASE or start.meta.kind not in ("int8", "full"):
        raise EvaluatorError(
            f"{start_dir} cannot be adapted: adapt works on evaluators built on {PACKAGED_BASE} "
            "(the shipped one or one trained or adapted from it)"
        )

    generated = (
        write_questions(
            chunks,
            cfg.question_writer,
            seed=cfg.seed,
            max_chunks=cfg.max_question_chunks,
            budget=cfg.time_limit * cfg.question_share if cfg.time_limit else None,
            started=started,
            log=log,
            progress=cfg.progress,
        )
        if cfg.question_writer
        else []
    )
    log(f"building self-supervised queries from {len(chunks):,} chunks")
    pairs, graded = self_supervised_sets(
        chunks,
        embed,
        hard_negatives=cfg.hard_negatives,
        seed=cfg.seed,
        max_queries=cfg.max_queries,
        generated=generated,
    )
    splits, held_by = split_pairs(pairs, cfg.held_apart)  # training pairs, used when fine-tuning
    sets, _ = split_pairs(graded, cfg.held_apart)  # the same documents' retrieved sets: the head's data
    for name in ("train", "calibrate", "check"):
        if sum(p.label for p in sets[name]) < 2 or len({p.label for p in sets[name]}) < 2:
            raise ValueError(
                f"the collection gave too few self-supervised queries to adapt on ({len(pairs)} pairs in all, "
                f"{len(sets[name])} retrieved for {name}); it needs more chunks of running text"
            )
    counts = {
        "pairs": len(pairs),
        **{f"{k}_pairs": len(v) for k, v in splits.items()},
        **{f"{k}_set_pairs": len(v) for k, v in sets.items()},
        "chunks": len(chunks),
        "documents": len({c.source for c in chunks}),
    }
    log(
        f"{sum(p.label for p in pairs):,} queries "
        f"({', '.join(f'{k} {v}' for k, v in sorted(Counter(p.source for p in pairs if p.label).items()))}), "
        f"each graded among {RETRIEVED_DEPTH} retrieved chunks; held apart by {held_by}: fit "
        f"{len(sets['train'])}, calibrate {len(sets['calibrate'])}, check {len(sets['check'])} pairs"
    )

    anchor, guard = split_general(cfg.general if cfg.general is not None else load_general_check())
    scoring_started = time.perf_counter()
    checked = {"held-apart sets": sets["check"], "general set": guard}
    if cfg.labelled is not None:
        checked["labelled pairs"] = cfg.labelled

    def bar(what: str) -> str | None:  # a progress bar's description, or none
        return what if cfg.progress else None

    before = {
        name: roc_auc([p.label for p in ps], final_scores(start, ps, bar(f"before: {name}")))
        for name, ps in checked.items()
    }
    start_calibrate = final_scores(start, sets["calibrate"], bar("before: calibration sets"))  # to keep its route rates
    scoring_seconds = time.perf_counter() - scoring_started  # what scoring again after training will take

    train_seconds, stopped = 0.0, False
    if cfg.epochs:
        stopped, train_seconds = _fine_tune(start, splits["train"], embed, cfg, started, deadline, scoring_seconds, log)

    staging = Path(tempfile.mkdtemp(prefix=f".{cfg.out.name}.", dir=cfg.out.parent))
    staging.chmod(cfg.out.parent.stat().st_mode & 0o777)  # mkdtemp's 0700 would hide it from a server's user
    try:
        head = HeadData(sets["train"], sets["calibrate"], start_calibrate, anchor, guard, before["general set"])
        meta = _save(start, staging, chunks, splits, head, cfg, held_by)
        adapted = load_scorer(staging)
        after = {
            name: roc_auc([p.label for p in ps], final_scores(adapted, ps, bar(f"after: {name}")))
            for name, ps in checked.items()
        }
        checks = [Check(name, len(checked[name]), before[name], after[name]) for name in checked]
        problems, warnings = verdict(checks, cfg.refuse_general_drop, cfg.max_general_drop)
        meta.hyperparameters["adapt"].update(
            counts=counts,
            start=str(start_dir),
            train_seconds=round(train_seconds, 1),
            stopped_at_time_limit=stopped,
            seconds=round(time.perf_counter() - started, 1),
            collection=collection,
            forced=bool(problems),
        )
        meta.validation_metrics["adapt_checks"] = (
            [{**asdict(c), "change": round(c.change, 4)} for c in checks]
            + ([{"problems": problems}] if problems else [])
            + ([{"warnings": warnings}] if warnings else [])
        )
        meta.write(staging)
        written = not problems or cfg.force
        if written:
            if cfg.out.exists():
                shutil.rmtree(cfg.out)
            staging.rename(cfg.out)
        return AdaptResult(cfg.out, written, problems, warnings, checks, meta, counts)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def _fine_tune(
    start: Scorer,
    train: list[Pair],
    embed: Callable[[list[str]], Sequence[Sequence[float]]],
    cfg: AdaptConfig,
    started: float,
    deadline: float | None,
    scoring_seconds: float,
    log: Callable[[str], None],
) -> tuple[bool, float]:
    """Fine-tune `start.model` in place towards the teachers; (whether the time limit stopped it, seconds)."""
    log("teachers: the starting evaluator and the embedding model score the training pairs")
    teacher = teacher_probabilities(start, train, embed)
    train_pairs = [replace(p, teacher=t) for p, t in zip(train, teacher)]
    model = start.model
    start.forward = None  # the ONNX graph holds the weights as loaded; from here on they train
    model.get_input_embeddings().weight.requires_grad_(False)  # the compact format stores no word embeddings
    steps = cfg.epochs * ((len(train_pairs) + cfg.batch_size - 1) // cfg.batch_size)
    optimiser = Optimiser.create(model, cfg.lr, 0.01, 0.1, steps)
    train_deadline = None
    if deadline is not None:
        train_deadline = deadline - FINISH_MARGIN * scoring_seconds - FINISH_SECONDS
        if train_deadline <= time.perf_counter():
            raise ValueError(
                f"--time-limit leaves no time to train (building pairs and teachers took "
                f"{time.perf_counter() - started:.0f} s); raise it, lower --max-queries or pass --epochs 0"
            )
    order_rng, title_rng = random.Random(cfg.seed), random.Random(cfg.seed + 1)
    train_started, stopped = time.perf_counter(), False
    for epoch in range(1, cfg.epochs + 1):
        _, stopped = train_epoch(
            model,
            start.tokenizer,
            start.meta,
            train_pairs,
            optimiser,
            LOSSES["bce"],
            order_rng=order_rng,
            title_rng=title_rng,
            batch_size=cfg.batch_size,
            use_title=start.meta.use_title,
            title_dropout=cfg.title_dropout,
            teacher_weight=cfg.teacher_weight,
            desc=f"adapt {epoch}/{cfg.epochs}",
            deadline=train_deadline,
            progress=cfg.progress,
        )
        if stopped:
            log(f"time limit: training stopped in epoch {epoch}")
            break
    return stopped, time.perf_counter() - train_started


def _save(
    start: Scorer,
    staging: Path,
    chunks: list[CollectionChunk],
    splits: dict[str, list[Pair]],
    head: HeadData,
    cfg: AdaptConfig,
    held_by: str,
) -> Metadata:
    """Export the model compactly into `staging`, then fit its head and thresholds there."""
    with tempfile.TemporaryDirectory(dir=staging) as full:
        full_meta = replace(start.meta, kind="full", base=PACKAGED_BASE, blend=None)
        start.model.save_pretrained(full)
        start.tokenizer.save_pretrained(full)
        full_meta.write(Path(full))
        export_compact(Path(full), staging, PACKAGED_BASE, start.meta.max_length)
    scorer = load_scorer(staging)
    # the starting evaluator's document frequencies; a start without a blend gets the collection's own
    table = (
        start.lexical[1]
        if start.lexical
        else IdfTable.from_corpus(scorer.passage_text(c.text, c.title) for c in chunks)
    )
    table.save(staging / IDF_FILE)
    if cfg.labelled is not None:  # real labels: the utility calibration `make evaluator` uses
        labelled = features(scorer, table, cfg.labelled)  # a head over logit and overlap
        blend = fit_blend(labelled.logits, labelled.overlaps, labelled.labels)
        calibration = calibrate(
            labelled.labels, [score_of(z) for z in labelled.scored(blend)], false_relevant_cost=cfg.false_relevant_cost
        )
        thresholds, how = calibration.thresholds, calibration.as_dict()
    else:
        blend, thresholds, how = fit_head(
            scorer, table, head, start.thresholds, cfg.seed, cfg.max_general_drop, progress=cfg.progress
        )
    meta = scorer.meta
    meta.blend = blend.as_dict()
    meta.thresholds = thresholds
    meta.calibrated = True
    meta.data_hash = collection_hash(chunks)
    settings = {
        k: (str(v) if isinstance(v, Path) else v)
        for k, v in asdict(cfg).items()
        if k not in ("labelled", "general", "question_writer")
    }
    meta.hyperparameters = {
        "adapt": {
            **settings,
            "labelled_pairs": len(cfg.labelled) if cfg.labelled is not None else 0,
            "general_pairs": "shipped" if cfg.general is None else len(cfg.general),
            "held_apart_by": held_by,
            "fitted_on": "labelled pairs" if cfg.labelled is not None else "self-made pairs",
            "pair_kinds": dict(sorted(Counter(p.source for ps in splits.values() for p in ps).items())),
        }
    }
    meta.validation_metrics = {"calibration": how, "idf_documents": table.n_docs}
    meta.write(staging)
    return meta
