"""`crag evaluator`: measure the retrieval evaluator on your labelled pairs, or adapt it to your collection."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from crag.cli.common import fail, quiet_transformers
from crag.cli.settings import with_settings
from crag.evaluator.checkpoint import EvaluatorError
from crag.evaluator.pairs import read_pairs
from crag.evaluator.runnable import get_scorer
from crag.evaluator.training.adapt import AdaptConfig, adapt
from crag.evaluator.training.evaluation import classification_metrics
from crag.evaluator.training.selfsup import collection_chunks
from crag.models.chat import CHAT_MODEL_HELP, chat_model
from crag.models.embeddings import EmbeddingError
from crag.search.store import StoreError, open_existing
from crag.settings import Context

__all__ = ["ModelOption", "app", "load_pairs", "score_pairs"]

app = typer.Typer(
    help="The retrieval evaluator: measure it on your pairs, fit it to your collection.", no_args_is_help=True
)
ModelOption = Annotated[
    Path | None, typer.Option("--model", help="Checkpoint folder (default: the shipped evaluator).")
]


def load_pairs(model: Path | None, pairs_files: Path | list[Path], dynamic_int8: bool | None = None):
    """The checkpoint, the labelled pairs of the files, each as the checkpoint reads it, and each pair's set."""
    quiet_transformers()
    files = pairs_files if isinstance(pairs_files, list) else [pairs_files]
    try:
        loaded = [read_pairs(f) for f in files]
        scorer = get_scorer(model, dynamic_int8)
    except (EvaluatorError, FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    pairs = [p for ps in loaded for p in ps]
    groups = [(n, p.group) for n, ps in enumerate(loaded) for p in ps]
    return scorer, pairs, [(p.question, scorer.passage_text(p.passage, p.title)) for p in pairs], groups


def score_pairs(model: Path | None, pairs_files: Path | list[Path], batch_size: int, dynamic_int8: bool | None):
    """The checkpoint, the pairs' labels, their scores and the seconds scoring took."""
    scorer, pairs, texts, groups = load_pairs(model, pairs_files, dynamic_int8)
    started = time.perf_counter()
    scores = scorer.score(texts, batch_size=batch_size, groups=groups)
    elapsed = time.perf_counter() - started
    return scorer, [p.label for p in pairs], scores, elapsed


@app.command("eval")
def eval_cmd(
    pairs: Annotated[Path, typer.Option(help="Pairs in CRAG's format: question [SEP] passage<TAB>0|1.")],
    model: ModelOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    batch_size: Annotated[int, typer.Option(min=1)] = 64,
    dynamic_int8: Annotated[
        bool | None,
        typer.Option(
            "--dynamic-int8/--no-dynamic-int8", help="Quantize Linear layers at load (overrides the checkpoint)."
        ),
    ] = None,
) -> None:
    """Accuracy, balanced accuracy, F1, ROC-AUC and speed at the checkpoint's upper threshold."""
    scorer, labels, scores, elapsed = score_pairs(model, pairs, batch_size, dynamic_int8)
    upper = scorer.thresholds.upper
    metrics = classification_metrics(labels, scores, upper)
    result: dict[str, Any] = {k: metrics[k] for k in ("accuracy", "balanced_accuracy", "f1", "roc_auc", "n")}
    result |= {"pairs_per_s": metrics["n"] / elapsed if elapsed > 0 else math.inf, "engine": scorer.engine}
    if as_json:
        typer.echo(json.dumps({k: None if isinstance(v, float) and math.isnan(v) else v for k, v in result.items()}))
        return
    typer.echo(f"model        {scorer.path} (upper threshold {upper})")
    for key, value in result.items():
        typer.echo(f"{key:<18} {value:.4f}" if isinstance(value, float) else f"{key:<18} {value}")


@app.command("adapt")
@with_settings("chroma_dir", "chroma_url", "collection", "embeddings")
def adapt_cmd(
    out: Annotated[
        Path, typer.Option(help="Folder for the adapted checkpoint (use it with --evaluator or CRAG_EVALUATOR).")
    ],
    start: Annotated[
        Path | None, typer.Option("--evaluator", help="The evaluator to adapt (default: the shipped one).")
    ] = None,
    labelled: Annotated[
        Path | None,
        typer.Option(
            help="A few labelled pairs from your domain (CRAG's .tsv or .jsonl): the blend and thresholds are fitted on them."
        ),
    ] = None,
    time_limit: Annotated[
        float | None,
        typer.Option(min=1, help="Minutes for the whole run; fine-tuning (--epochs) stops early to keep it."),
    ] = None,
    epochs: Annotated[
        int,
        typer.Option(
            min=0,
            help="Epochs of fine-tuning the cross-encoder on the self-made pairs before its head is fitted "
            "(0: the head alone, which measured as good on documentation and takes a third of the time).",
        ),
    ] = AdaptConfig.epochs,
    max_queries: Annotated[
        int, typer.Option(min=10, help="Chunks asked about (a seeded sample of a larger collection).")
    ] = 4000,
    held_apart: Annotated[
        float,
        typer.Option(
            min=0.1,
            max=0.6,
            help="Share of documents never fitted on: half choose the head and thresholds, half check.",
        ),
    ] = 0.3,
    chat_model_spec: Annotated[
        str,
        typer.Option(
            "--chat-model",
            help=f"The model that writes questions for sampled chunks: {CHAT_MODEL_HELP}; 'none': headings and "
            "cut-out sentences only.",
        ),
    ] = "local",
    question_chunks: Annotated[
        int, typer.Option(min=1, help="Chunks the chat model writes questions for, at most (about 5 s each locally).")
    ] = AdaptConfig.max_question_chunks,
    seed: Annotated[int, typer.Option()] = 0,
    force: Annotated[bool, typer.Option(help="Write the adapted evaluator even when a check finds it worse.")] = False,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing checkpoint at --out.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show progress bars.")] = True,
    *,
    settings: dict[str, Any],
) -> None:
    """Fit the evaluator to an ingested collection with self-made queries (no labels, no network), and check it.

    Writes a normal evaluator checkpoint unless the adapted evaluator is worse than the one it started
    from on held-apart documents of the collection, or forgets on a general set shipped with crag."""
    quiet_transformers()
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        fail(f"{out} exists and is not empty; pass --overwrite to replace it or choose another --out")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        labelled_pairs = read_pairs(labelled) if labelled else None
        where = Context(**settings)
        collection = where.collection
        store = open_existing(
            persist_dir=where.chroma_dir, collection=collection, chroma_url=where.chroma_url, embedder=where.embeddings
        )
        chunks = collection_chunks(store)
        writer: Callable[[str], str] | None = None
        if chat_model_spec.strip().lower() != "none":
            model = chat_model(chat_model_spec, max_tokens=160)

            def write(prompt: str) -> str:
                return str(model.invoke(prompt).content)

            writer = write

        config = AdaptConfig(
            out=out,
            start=start,
            labelled=labelled_pairs,
            time_limit=time_limit * 60 if time_limit else None,
            epochs=epochs,
            max_queries=max_queries,
            held_apart=held_apart,
            seed=seed,
            force=force,
            progress=progress,
            question_writer=writer,
            question_writer_name=chat_model_spec if writer else "",
            max_question_chunks=question_chunks,
        )
        assert store.embeddings is not None  # open_existing gives the store its embeddings
        result = adapt(
            chunks,
            store.embeddings.embed_documents,
            config,
            collection=collection,
            log=lambda line: typer.echo(line, err=True),
        )
    except (EvaluatorError, StoreError, EmbeddingError, FileNotFoundError, ValueError, OSError) as exc:
        fail(str(exc))
    for check in result.checks:
        typer.echo(
            f"{check.name:<18} {check.pairs:>5} pairs  ROC-AUC {check.before:.3f} -> {check.after:.3f} "
            f"({check.change:+.3f})"
        )
    thresholds = result.meta.thresholds
    for problem in result.problems:
        typer.secho(f"warning: the adapted evaluator is {problem}", fg=typer.colors.RED, err=True)
    for warning in result.warnings:
        typer.secho(f"WARNING: the adapted evaluator {warning}", fg=typer.colors.YELLOW, err=True)
    if not result.written:
        fail(f"nothing written to {out}; pass --force to write it anyway")
    adapt_info = result.meta.hyperparameters["adapt"]
    typer.echo(
        f"wrote {out} in {adapt_info['seconds'] / 60:.1f} min (thresholds upper={thresholds.upper:.3f} "
        f"lower={thresholds.lower:.3f}); use it with `crag ask --evaluator {out}` or CRAG_EVALUATOR={out}"
    )
