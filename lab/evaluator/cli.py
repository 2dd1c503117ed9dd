"""`crag evaluator …`: build the training data, train, calibrate and evaluate the retrieval evaluator."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from crag.cli.common import fail, quiet_transformers
from crag.cli.evaluator import ModelOption, load_pairs
from crag.evaluator.checkpoint import EvaluatorError, Metadata
from crag.evaluator.compact import export_compact
from crag.evaluator.lexical import IDF_FILE, IdfTable, contrasts, fit_blend, overlap
from crag.evaluator.pairs import read_pairs, write_pairs
from crag.evaluator.training.calibration import calibrate, cap_discards, question_maxima
from crag.evaluator.training.evaluation import classification_metrics
from crag.evaluator.training.trainer import TrainConfig, train
from crag.models.base_model import PACKAGED_BASE
from lab.evaluator.cli_generate import generate_cmd, teacher_cmd
from lab.evaluator.data import Recipe, build_data
from lab.evaluator.faq import FAQ_FILES, build_faq_pairs

app = typer.Typer(help="Train, calibrate and evaluate the retrieval evaluator.", no_args_is_help=True)

DEFAULT_DATA_OUT = Path("artifacts/evaluator-data")


@app.command("build-data")
def build_data_cmd(
    data_dir: Annotated[
        Path | None, typer.Option(help="Shared data (default: $CRAG_DATA_DIR or ../shared/data).")
    ] = None,
    out: Annotated[Path, typer.Option(help="Where to write train/validation pairs.")] = DEFAULT_DATA_OUT,
    bm25_negatives: Annotated[int, typer.Option(min=0, help="BM25 hard negatives per question.")] = 4,
    generated: Annotated[
        Path | None,
        typer.Option(
            help="Generated questions (python -m lab evaluator generate-questions): their pairs join train and dev."
        ),
    ] = None,
    teacher_labels: Annotated[
        Path | None,
        typer.Option(
            help="The chat model's grades of training pairs (python -m lab evaluator teacher-labels): the teacher of the "
            "pairs they cover, in place of cosine's."
        ),
    ] = None,
) -> None:
    """Build question-disjoint train/validation pairs by the paper's recipe."""
    for given, what in ((generated, "generated questions"), (teacher_labels, "teacher labels")):
        if given is not None and not given.is_file():
            fail(f"{what} not found: {given}")
    recipe = Recipe(
        bm25_negatives=bm25_negatives,
        generated=str(generated) if generated else "",
        teacher_labels=str(teacher_labels) if teacher_labels else "",
    )
    try:
        manifest = build_data(data_dir, out, recipe)
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    for split, info in manifest["splits"].items():
        typer.echo(
            f"{split:<10} {info['pairs']:>6} pairs  {info['positives']:>5} relevant "
            f"({info['positive_rate']:.1%})  {info['questions']} questions  -> {out / info['files'][0]}"
        )
    if made := manifest.get("generated"):
        typer.echo(
            f"generated: {made['kept']} of {made['questions']} questions passed the round trip "
            f"({made['pages_rendered']} of {made['pages']} pages rendered here, {made['pool_chunks']} chunks)"
        )
    if teacher_labels is not None:
        typer.echo(f"teacher: the chat model's grade for {manifest['llm_teacher_pairs']} training pairs")


@app.command("build-faq")
def build_faq_cmd(
    out: Annotated[Path, typer.Option(help="Folder for faq.jsonl / faq.tsv and faq-manifest.json.")] = DEFAULT_DATA_OUT,
    faq: Annotated[
        list[Path] | None,
        typer.Option(help="A plain-text FAQ (.gz or not); repeat it (default: those on this machine)."),
    ] = None,
) -> None:
    """Documentation-domain dev pairs from FAQs: each question against the retriever's top 10 chunks
    of the FAQs' answers, labelled by answer span (lab/evaluator/faq.py). `blend` and
    `calibrate` use them beside the dev pairs."""
    try:
        pairs, manifest = build_faq_pairs(faq or FAQ_FILES, cache=out / "cache")
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    _, jsonl = write_pairs(pairs, out, "faq")
    (out / "faq-manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    typer.echo(
        f"{manifest['questions']} questions from {len(manifest['files'])} FAQs, {manifest['chunks']} chunks: "
        f"{manifest['pairs']} pairs, {manifest['positives']} relevant "
        f"({manifest['questions_with_a_relevant_chunk']} questions with one) -> {jsonl}"
    )


@app.command("train")
def train_cmd(
    out: Annotated[Path, typer.Option(help="Checkpoint folder to write.")],
    base: Annotated[
        str,
        typer.Option(
            help=f"Local checkpoint, config-only folder (random weights), random-t5-small/random-t5-tiny, or {PACKAGED_BASE}."
        ),
    ] = PACKAGED_BASE,
    data: Annotated[
        Path, typer.Option(help="Folder from build-data (train.jsonl / validation.jsonl or .tsv).")
    ] = DEFAULT_DATA_OUT,
    validation: Annotated[
        str,
        typer.Option(
            help="File in --data that picks the epoch and calibrates: dev (training questions held apart, as the graph sees them) or validation-popqa (the first recipe's split)."
        ),
    ] = "dev",
    epochs: Annotated[int, typer.Option(min=1)] = 3,
    batch_size: Annotated[int, typer.Option(min=1)] = 16,
    lr: Annotated[float | None, typer.Option(help="Learning rate (default by method).")] = None,
    max_length: Annotated[int, typer.Option(min=16, help="Tokens read per pair.")] = 128,
    layers: Annotated[int | None, typer.Option(min=1, help="Keep only the first N encoder layers.")] = None,
    lora_rank: Annotated[int, typer.Option(min=0, help="LoRA rank; 0 = full fine-tune.")] = 0,
    loss: Annotated[str, typer.Option(help="bce (default) or mse (the paper's ±1 regression).")] = "bce",
    use_title: Annotated[bool, typer.Option(help="Prefix passages with their title.")] = False,
    title_dropout: Annotated[
        float, typer.Option(min=0, max=1, help="With --use-title: share of training pairs shown without it.")
    ] = 0.5,
    seed: Annotated[int, typer.Option()] = 42,
    limit: Annotated[int | None, typer.Option(min=1, help="Train on a sample of N pairs.")] = None,
    teacher_weight: Annotated[
        float,
        typer.Option(
            min=0,
            max=1,
            help="Distillation: train towards (1-w)·label + w·(the base model's zero-shot probability), where build-data stored one.",
        ),
    ] = 0.0,
    read_long: Annotated[
        bool,
        typer.Option(
            help="Read a passage longer than --max-length as the scorer does: its start and the stretch with the most of the question's terms."
        ),
    ] = False,
) -> None:
    """Fine-tune an evaluator; keeps the best epoch and calibrates its thresholds."""
    quiet_transformers()
    suffix = ".jsonl" if (data / "train.jsonl").is_file() else ".tsv"
    train_file, val_file = data / f"train{suffix}", data / f"{validation}{suffix}"
    if not train_file.is_file() or not val_file.is_file():
        fail(f"no training data in {data}; run `python -m lab evaluator build-data --out {data}` first")
    config = TrainConfig(
        train=train_file,
        validation=val_file,
        out=out,
        base=base,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        max_length=max_length,
        num_layers=layers,
        lora_rank=lora_rank,
        loss=loss,
        use_title=use_title,
        title_dropout=title_dropout,
        seed=seed,
        limit=limit,
        teacher_weight=teacher_weight,
        read_long=read_long,
    )
    try:
        meta = train(config)
    except (EvaluatorError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    metrics = meta["validation_metrics"]
    typer.echo(
        f"saved {out}: validation accuracy {metrics['accuracy']:.4f}, ROC-AUC {metrics['roc_auc']:.4f}, "
        f"thresholds upper={meta['thresholds']['upper']} lower={meta['thresholds']['lower']}"
    )


@app.command("export")
def export_cmd(
    model: Annotated[
        Path, typer.Option("--model", help="A full fine-tune written by `python -m lab evaluator train`.")
    ],
    out: Annotated[Path, typer.Option(help="Folder for the compact checkpoint.")],
    base: Annotated[str, typer.Option(help="The base the fine-tune started from.")] = PACKAGED_BASE,
    max_length: Annotated[
        int | None, typer.Option(min=16, help="Tokens read per pair at inference (default: as trained).")
    ] = None,
) -> None:
    """Store a full fine-tune as int8 weights on top of its packaged base (a few MB).

    The thresholds are copied from the fine-tune; run `calibrate` afterwards to fit them to the
    exported model's own scores."""
    quiet_transformers()
    try:
        info = export_compact(model, out, base, max_length)
    except (EvaluatorError, OSError) as exc:
        fail(str(exc))
    typer.echo(f"wrote {out}: {info['parameters']:,} parameters in {info['bytes'] / 1e6:.1f} MB")


@app.command("blend")
def blend_cmd(
    pairs: Annotated[
        list[Path],
        typer.Option(
            help="Labelled pairs the blend is fitted on; repeat it for several sets, each weighing the same "
            "(the dev pairs and the documentation FAQ pairs; never a validation slice)."
        ),
    ],
    corpus: Annotated[
        Path, typer.Option(help="Pairs whose passages give the document frequencies (the training pairs).")
    ],
    model: ModelOption = None,
    contrast: Annotated[
        bool, typer.Option("--contrast/--no-contrast", help="Also weigh the contrast feature (lexical.py).")
    ] = False,
    batch_size: Annotated[int, typer.Option(min=1)] = 64,
) -> None:
    """Blend lexical evidence into the checkpoint's score (see crag/evaluator/lexical.py).

    Fits a logistic head over the model's logit, the IDF-weighted share of the question's terms found
    in the passage and (with `--contrast`) that share among the passages retrieved with it, on
    `--pairs`, and stores it with the document frequencies of `--corpus`'s passages. Run `calibrate`
    afterwards: the thresholds belong to the blended score."""
    scorer, fit_pairs, texts, groups = load_pairs(model, pairs)
    try:
        corpus_pairs = read_pairs(corpus)
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    keep = [i for i, (_, t) in enumerate(texts) if t.strip()]
    logits = scorer.model_logits([texts[i] for i in keep], batch_size=batch_size)
    table = IdfTable.from_corpus(sorted({scorer.passage_text(p.passage, p.title) for p in corpus_pairs}))
    overlaps = [overlap(table, *texts[i]) for i in keep]
    sets = contrasts(table, [texts[i] for i in keep], [groups[i] for i in keep]) if contrast else None
    labels = [fit_pairs[i].label for i in keep]
    sizes = Counter(groups[i][0] for i in keep)  # each file weighs the same in the fit
    weights = [len(keep) / (len(sizes) * sizes[groups[i][0]]) for i in keep]
    try:
        blend = fit_blend(logits, overlaps, labels, sets, weights)
    except ValueError as exc:
        fail(str(exc))
    table.save(scorer.path / IDF_FILE)
    meta = Metadata.read(scorer.path) or scorer.meta
    meta.blend = blend.as_dict()
    meta.calibrated = False  # the thresholds were chosen for the unblended score
    meta.validation_metrics = {
        **meta.validation_metrics,
        "blend": {
            "pairs": [str(f) for f in pairs],
            "corpus": str(corpus),
            "idf_terms": len(table.df),
            "idf_documents": table.n_docs,
            "roc_auc_model": classification_metrics(labels, logits, 0.0)["roc_auc"],
            "roc_auc_blend": classification_metrics(labels, blend.logits(logits, overlaps, sets), 0.0)["roc_auc"],
        },
    }
    meta.write(scorer.path)
    info = meta.validation_metrics["blend"]
    typer.echo(
        f"blend {blend.model:+.3f}·logit {blend.lexical:+.3f}·overlap "
        + (f"{blend.contrast:+.3f}·contrast " if contrast else "")
        + f"{blend.bias:+.3f} "
        f"(ROC-AUC on {len(labels)} pairs {info['roc_auc_model']:.4f} -> {info['roc_auc_blend']:.4f}; "
        f"IDF of {len(table.df):,} terms over {table.n_docs:,} passages) -> {scorer.path}; now run `calibrate`"
    )


@app.command("calibrate")
def calibrate_cmd(
    pairs: Annotated[
        list[Path], typer.Option(help="Labelled validation pairs (CRAG .tsv or .jsonl); repeat it for several sets.")
    ],
    model: ModelOption = None,
    false_relevant_cost: Annotated[float, typer.Option(min=0)] = 2.0,
    false_irrelevant_cost: Annotated[float, typer.Option(min=0)] = 1.0,
    max_discard: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=0.99,
            help="Lower the lower threshold until at most this share of the questions that have a relevant "
            "document go to Incorrect, in each --discard-pairs set (pairs grouped by question, as retrieved).",
        ),
    ] = None,
    discard_pairs: Annotated[
        list[Path] | None,
        typer.Option(help="Question-level sets for --max-discard (JSONL with groups); repeatable; default: --pairs."),
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1)] = 64,
) -> None:
    """Choose (upper, lower) on labelled pairs and store them with the checkpoint."""
    if discard_pairs and max_discard is None:
        fail("--discard-pairs needs --max-discard")
    checks = (discard_pairs or pairs) if max_discard is not None else []
    scorer, scored = None, {}
    for file in dict.fromkeys([*pairs, *checks]):  # each file scored once
        scorer, loaded, texts, groups = load_pairs(model, file)
        scored[file] = (loaded, scorer.score(texts, batch_size=batch_size, groups=groups))
    try:
        result = calibrate(
            [p.label for f in pairs for p in scored[f][0]],
            [s for f in pairs for s in scored[f][1]],
            false_relevant_cost=false_relevant_cost,
            false_irrelevant_cost=false_irrelevant_cost,
        )
        if max_discard is not None:
            result = cap_discards(result, [_questions(f, *scored[f]) for f in checks], max_discard)
    except ValueError as exc:
        fail(str(exc))
    meta = Metadata.read(scorer.path) or scorer.meta
    meta.thresholds = result.thresholds
    meta.calibrated = True
    meta.validation_metrics = {
        **meta.validation_metrics,
        "calibration": {
            **result.as_dict(),
            "pairs": [str(f) for f in pairs],
            **({"discard_pairs": [str(f) for f in checks]} if max_discard is not None else {}),
        },
    }
    meta.write(scorer.path)
    capped = "" if result.utility_lower is None else f" (the utility's lower {result.utility_lower}, capped)"
    typer.echo(
        f"upper={result.upper} lower={result.lower}{capped} (utility {result.utility:.4f} on {result.n} pairs) "
        f"-> {scorer.path}"
    )


def _questions(file: Path, pairs: list, scores: list[float]):
    """(relevant, best score) per question of one file: a question is the pairs that share a group, a
    question text and whether they carry titles (dev holds each retrieval with and without)."""
    if not any(p.group for p in pairs):
        fail(f"{file} has no groups: --max-discard needs each question's pairs marked ('group' in JSONL)")
    keys = [(p.group, p.question, bool(p.title)) for p in pairs]
    return question_maxima(keys, [p.label for p in pairs], scores)


app.command("generate-questions")(generate_cmd)
app.command("teacher-labels")(teacher_cmd)
