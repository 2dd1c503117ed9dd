"""`crag evaluator adapt`: fit the evaluator to an ingested collection without labels (issue 13;
the work is `crag.evaluator_model.training.adapt`, this is its command line)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crag.backends.embeddings import EmbeddingError, default_embeddings
from crag.backends.llm import CHAT_MODEL_HELP, chat_model
from crag.backends.retrieval import (
    StoreError,
    default_chroma_dir,
    default_chroma_url,
    default_collection,
    open_existing,
)
from crag.cli.common import ChromaDir, ChromaUrl, Collection, Embeddings, fail, quiet_transformers
from crag.evaluator_model.checkpoint import EvaluatorError
from crag.evaluator_model.pairs import read_pairs
from crag.evaluator_model.training.adapt import AdaptConfig, adapt
from crag.evaluator_model.training.selfsup import collection_chunks


def adapt_cmd(
    out: Annotated[
        Path, typer.Option(help="Folder for the adapted checkpoint (use it with --evaluator or CRAG_EVALUATOR).")
    ],
    collection: Collection = None,
    chroma_dir: ChromaDir = None,
    chroma_url: ChromaUrl = None,
    embeddings: Embeddings = None,
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
        collection = collection or default_collection()
        store = open_existing(
            persist_dir=chroma_dir or default_chroma_dir(),
            collection=collection,
            chroma_url=chroma_url or default_chroma_url(),
            embedder=embeddings or default_embeddings(),
        )
        chunks = collection_chunks(store)
        writer = None
        if chat_model_spec.strip().lower() != "none":
            model = chat_model(chat_model_spec, max_tokens=160)

            def writer(prompt: str) -> str:
                return str(model.invoke(prompt).content)

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
