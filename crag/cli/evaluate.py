"""`crag eval`: run and robustness, over your own questions and documents or the project's sets."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any

import typer

from crag.cli.common import fail, quiet_transformers
from crag.evaluation.runner import RunSettings, run
from crag.evaluation.systems import SYSTEMS, parse_systems
from crag.ingest.pipeline import check_chunking
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
DEFAULTS = {f.name: f.default for f in fields(RunSettings)}


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


if __name__ == "__main__":
    app()
