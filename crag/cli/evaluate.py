"""`crag eval`: run and robustness, over your own questions and documents or the project's sets."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any

import typer

from crag.cli.common import fail, quiet_transformers
from crag.evaluation.audit import agreement
from crag.evaluation.longform import score_facts, write_audit
from crag.evaluation.runner import RunSettings, run
from crag.evaluation.systems import SYSTEMS, parse_systems
from crag.indexing.pipeline import check_chunking
from crag.models.chat import CHAT_MODEL_HELP
from crag.settings import Context, about, check

app = typer.Typer(help="Evaluate CRAG against RAG and its ablations on your questions.", no_args_is_help=True)

Questions = Annotated[Path, typer.Option("--questions", help="JSONL {question, answers[], id?}.", show_default=False)]
KB = Annotated[Path, typer.Option("--kb", help="Knowledge base, JSONL {title, text, id?}.", show_default=False)]
Web = Annotated[
    Path, typer.Option("--web", help="Local web-search index, JSONL {title, text, url?}.", show_default=False)
]
Out = Annotated[
    Path, typer.Option("--out", help="Output folder (predictions, results, report, plots).", show_default=False)
]
Limit = Annotated[int | None, typer.Option("--limit", help="Only the first N questions.")]
K = Annotated[int, typer.Option("--k", min=1, help="Documents retrieved per question (every system).")]
SearchOption = Annotated[
    str, typer.Option("--search", help="hybrid (embeddings and BM25, fused) or dense (embeddings alone); every system.")
]
ChromaDir = Annotated[Path, typer.Option("--chroma-dir", help="Where the knowledge base's Chroma collections live.")]
ChunkSize = Annotated[int, typer.Option("--chunk-size", min=1, help="Characters per knowledge-base chunk.")]
ChunkOverlap = Annotated[int, typer.Option("--chunk-overlap", min=0, help="Characters shared by neighbouring chunks.")]
ChatModel = Annotated[str, typer.Option("--chat-model", help=f"Generator: {CHAT_MODEL_HELP}.")]
Evaluator = Annotated[Path | None, typer.Option("--evaluator", help="Evaluator checkpoint (default: the shipped one).")]
Seed = Annotated[int, typer.Option("--seed", help="Seed of --drop-gold's, --shuffle-docs' and --noise's choices.")]
Progress = Annotated[bool, typer.Option("--progress/--no-progress", help="Show progress bars.")]
AnswerStyle = Annotated[
    str, typer.Option("--answer-style", help=about(Context.__dataclass_fields__["answer_style"])["help"])
]
LongAnswerTokens = Annotated[
    int,
    typer.Option(
        "--long-answer-tokens", min=32, help=about(Context.__dataclass_fields__["long_answer_tokens"])["help"]
    ),
]


# the run's defaults are RunSettings'; the options show them
DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(RunSettings)}


def _settings(options: dict[str, Any], **overrides: Any) -> RunSettings:
    """The run's settings from a command's options (its parameters, by name), checked."""
    given = {**options, **overrides}
    check_chunking(given["chunk_size"], given["chunk_overlap"])
    for what in ("questions", "kb", "web"):
        if not given[what].is_file():
            raise FileNotFoundError(f"{'knowledge-base' if what == 'kb' else what} file {given[what]} does not exist")
    if not 0.0 <= given["drop_gold"] <= 1.0:
        raise ValueError(f"--drop-gold must be between 0 and 1, got {given['drop_gold']}")
    given["systems"] = parse_systems(given["systems"])
    if "answer_style" in given:
        given["answer_style"] = check("answer_style", given["answer_style"])
    given["evaluator"] = str(given["evaluator"]) if given["evaluator"] else None
    return RunSettings(**{name: given[name] for name in DEFAULTS if name in given})


@contextmanager
def _reported(out: Path) -> Iterator[None]:
    """Bad input is a one-line error; Ctrl-C says where the answers so far are (a rerun continues)."""
    try:
        yield
    except KeyboardInterrupt:
        typer.secho(
            f"\ninterrupted: the answers so far are in {out / 'predictions.jsonl'}; "
            "run the same command again to continue",
            fg=typer.colors.YELLOW,
            err=True,
        )
        raise typer.Exit(code=130) from None
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc))


@app.callback()
def evaluate() -> None:
    """Evaluate CRAG against RAG and its ablations on your questions (`crag eval run`)."""


@app.command("run")
def run_cmd(
    questions: Questions,
    kb: KB,
    web: Web,
    out: Out,
    systems: Annotated[
        str, typer.Option("--systems", help=f"Comma-separated, from: {', '.join(SYSTEMS)}.")
    ] = "rag,crag",
    limit: Limit = None,
    drop_gold: Annotated[
        float, typer.Option("--drop-gold", help="Fraction (0-1) of answer-bearing passages to remove.")
    ] = DEFAULTS["drop_gold"],
    shuffle_docs: Annotated[
        bool, typer.Option("--shuffle-docs", help="The retrieved documents in a random order (every system the same).")
    ] = DEFAULTS["shuffle_docs"],
    noise: Annotated[
        int, typer.Option("--noise", min=0, help="Retrieved documents replaced by random chunks of the knowledge base.")
    ] = DEFAULTS["noise"],
    seed: Seed = DEFAULTS["seed"],
    k: K = DEFAULTS["k"],
    search: SearchOption = DEFAULTS["search"],
    chroma_dir: ChromaDir = DEFAULTS["chroma_dir"],
    chunk_size: ChunkSize = DEFAULTS["chunk_size"],
    chunk_overlap: ChunkOverlap = DEFAULTS["chunk_overlap"],
    chat_model: ChatModel = DEFAULTS["chat_model"],
    answer_style: AnswerStyle = DEFAULTS["answer_style"],
    long_answer_tokens: LongAnswerTokens = DEFAULTS["long_answer_tokens"],
    evaluator: Evaluator = None,
    progress: Progress = True,
) -> None:
    """Answer the questions with each system; write predictions.jsonl, results.json and report.md."""
    options = dict(locals())
    quiet_transformers()
    with _reported(out):
        results = run(_settings(options))
    for name, r in results.items():
        typer.echo(
            f"{name:<18} accuracy {r['accuracy'] * 100:5.1f}%  knowledge tokens {r['knowledge_tokens']:6.0f}  "
            f"{r['latency']['per_question']:.2f} s/question  (n={r['n']})"
        )
    typer.echo(f"report: {out / 'report.md'}")


RunDir = Annotated[Path, typer.Argument(help="A `crag eval run` output folder.", show_default=False)]
RunQuestions = Annotated[
    Path | None, typer.Option("--questions", help="The run's questions (default: those run.json names).")
]


@app.command("facts")
def facts_cmd(
    run_dir: RunDir,
    questions: RunQuestions = None,
    chat_model: Annotated[
        str | None, typer.Option("--chat-model", help="Splitter and judge (default: the run's generator).")
    ] = None,
    progress: Progress = True,
) -> None:
    """Judge a run's long answers fact by fact (FActScore's way) and rewrite its report with the fact scores."""
    quiet_transformers()
    with _reported(run_dir):
        results = score_facts(run_dir, questions, chat_model, progress=progress)
    for name, r in results.items():
        f = r.get("facts")
        if f:
            typer.echo(
                f"{name:<18} supported {f['supported'] * 100:5.1f}%  {f['facts_per_answer']:.1f} facts/answer  "
                f"abstained {f['abstained'] * 100:.1f}%  (answers with facts: {f['answers_with_facts']})"
            )
    typer.echo(f"report: {run_dir / 'report.md'}")


@app.command("audit")
def audit_cmd(
    run_dir: RunDir,
    out: Annotated[Path, typer.Option("--out", help="The CSV to label (a markdown page of evidence beside it).")],
    questions: RunQuestions = None,
    n: Annotated[int, typer.Option("--n", min=1, help="Facts to sample.")] = 60,
    seed: Seed = 0,
) -> None:
    """Sample judged facts with their verdicts into a CSV for a person to label yes or no."""
    with _reported(run_dir):
        page = write_audit(run_dir, out, questions, n=n, seed=seed)
    typer.echo(f"label the 'label' column of {out} (yes/no), reading the evidence in {page}")


@app.command("agreement")
def agreement_cmd(
    labelled: Annotated[Path, typer.Argument(help="An audit CSV with its label column filled in.")],
) -> None:
    """How often the fact judge's verdicts agree with a person's labels."""
    with _reported(labelled.parent):
        result = agreement(labelled)
    typer.echo(f"{result['labelled']} labelled facts, {result['human_supported'] * 100:.1f}% supported by the person")
    for verdict in ("supported", "lexical", "judge"):
        typer.echo(f"{verdict:<10} agreement {result[verdict] * 100:5.1f}%  kappa {result[f'{verdict}_kappa']:.2f}")


if __name__ == "__main__":
    app()
