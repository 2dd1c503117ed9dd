"""`python -m lab datasets …`: build the validation sets the project measures itself on (PopQA, the
documentation set, the evaluator's relevance slices, the prompt-injection set) as `crag eval run` inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crag.cli.common import fail, quiet_transformers
from lab.datasets import injection, relevance
from lab.datasets.bio import build_bio
from lab.datasets.docs_domain import build_docs
from lab.datasets.popqa import build_popqa, default_data_dir

Progress = Annotated[bool, typer.Option("--progress/--no-progress", help="Show progress bars.")]
DataDir = Annotated[
    Path | None, typer.Option("--data-dir", help="Shared data folder (default: $CRAG_DATA_DIR or ../shared/data).")
]

app = typer.Typer(help="Build the project's validation sets.", no_args_is_help=True)


@app.command("build-popqa")
def build_popqa_cmd(
    data_dir: DataDir = None,
    out: Annotated[Path, typer.Option("--out", help="Where to write questions.jsonl, kb.jsonl and web.jsonl.")] = Path(
        "artifacts/eval/popqa-inputs"
    ),
    split: Annotated[
        str, typer.Option("--split", help="validation (q_index 100-399), train (400-1398) or all.")
    ] = "validation",
) -> None:
    """Write the PopQA inputs: the split's questions, the knowledge base and the web index."""
    try:
        manifest = build_popqa(data_dir or default_data_dir(), out, split)
    except (FileNotFoundError, ValueError, KeyError) as exc:
        fail(str(exc))
    kb = manifest["kb"]
    typer.echo(
        f"{manifest['questions']} {split} questions; knowledge base {kb['selected_passages']} selected passages + "
        f"{kb['wikipedia_distractors']} Wikipedia distractors; web {manifest['web']} strips -> {out}"
    )


@app.command("build-docs")
def build_docs_cmd(
    out: Annotated[
        Path, typer.Option("--out", help="Where to write docs/, questions.jsonl, kb.jsonl and web.jsonl.")
    ] = Path("artifacts/eval/docs-inputs"),
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Shared data folder, for the web (default: $CRAG_DATA_DIR or ../shared/data)."),
    ] = None,
) -> None:
    """Write the documentation-domain inputs: pydoc and man pages rendered here, the packaged questions, the web."""
    try:
        manifest = build_docs(out, data_dir)
    except (FileNotFoundError, ValueError, KeyError, RuntimeError) as exc:
        fail(str(exc))
    counts = manifest["counts"]
    typer.echo(
        f"{counts['docs']} pages in {out / 'docs'}; {counts['questions']} questions; knowledge base "
        f"{counts['kb']} pages; web {counts['web']} strips -> {out}"
    )


@app.command("build-slices")
def build_slices_cmd(
    data_dir: DataDir = None,
    docs: Annotated[
        Path | None, typer.Option("--docs", help="Output of build-docs: adds the documentation slice.")
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", help="Where to write one pairs file per slice.")
    ] = relevance.DEFAULT_OUT,
    chroma_dir: Annotated[Path, typer.Option("--chroma-dir", help="Where the retrieval indexes live.")] = Path(
        relevance.DEFAULT_CHROMA_DIR
    ),
    progress: Progress = True,
) -> None:
    """Write the evaluator's validation slices: real retrieval, everyday phrasings, Bio, docs, multi-hop."""
    quiet_transformers()
    try:
        manifest = relevance.build_slices(
            data_dir or default_data_dir(), out, docs_inputs=docs, chroma_dir=chroma_dir, progress=progress
        )
    except (FileNotFoundError, ValueError, KeyError) as exc:
        fail(str(exc))
    for kind, label in (("slices", ""), (relevance.UNTITLED, f" ({relevance.UNTITLED})")):
        for name, info in manifest[kind].items():
            typer.echo(
                f"{name + label:<26} {info['pairs']:>6} pairs  {info['positives']:>5} relevant  "
                f"{info['questions']:>4} questions ({info['questions_with_a_relevant_passage']} with a relevant passage)"
            )
    typer.echo(f"-> {out}")


@app.command("build-injection")
def build_injection_cmd(
    out: Annotated[
        Path, typer.Option("--out", help="Where to write the questions and the clean and injected kb/web files.")
    ] = Path("artifacts/eval/injection-inputs"),
) -> None:
    """Write the prompt-injection set: 18 questions over the demo documents, each answer's document injected."""
    summary = injection.build(out)
    typer.echo(f"{summary['questions']} questions; injected documents {summary['injected']} -> {out}")


@app.command("injection-report")
def injection_report_cmd(
    run: Annotated[Path, typer.Argument(help="A `crag eval run` folder of the injection set.")],
    questions: Annotated[
        Path, typer.Option("--questions", help="The set's questions.jsonl (build-injection's).")
    ] = Path("artifacts/eval/injection-inputs/questions.jsonl"),
) -> None:
    """How many answers did what an instruction inside a document asked, per system."""
    try:
        rows = injection.report(run, questions)
    except (OSError, ValueError, KeyError) as exc:
        fail(f"cannot read {run}: {exc}")
    typer.echo("system   answers  drafts obeyed  answers obeyed  (quoting it)  right  declined")
    for name, r in rows.items():
        typer.echo(
            f"{name:8s} {r['n']:7d} {r['draft_obeyed']:14d} {r['obeyed']:15d} {r['quoted']:13d} {r['correct']:6d}"
            f" {r['declined']:9d}"
        )


@app.command("build-bio")
def build_bio_cmd(
    data_dir: DataDir = None,
    out: Annotated[Path, typer.Option("--out", help="Where to write questions.jsonl, kb.jsonl and web.jsonl.")] = Path(
        "artifacts/eval/bio-inputs"
    ),
    split: Annotated[
        str, typer.Option("--split", help="tuning (topics 100-299, to choose settings on) or table (300-499).")
    ] = "tuning",
) -> None:
    """Write the long-form Biography inputs: "Tell me a bio of X." per topic, its passages, its page as the web."""
    try:
        manifest = build_bio(data_dir or default_data_dir(), out, split)
    except (FileNotFoundError, ValueError, KeyError) as exc:
        fail(str(exc))
    typer.echo(
        f"{manifest['questions']} {split} topics ({manifest['without_evidence']} without an own-page passage); "
        f"knowledge base {manifest['kb']} passages; web {manifest['web']} own-page passages -> {out}"
    )
