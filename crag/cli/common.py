"""What the `crag` commands share: how a failure is reported (one line on stderr, exit code 2,
the code argparse and typer use for bad usage, so scripts can tell a refused input from a crash),
and the options `ask` and `serve` both take to choose the knowledge base and models. Each option
defaults to unset: `Context` fills in what the user did not give."""

from __future__ import annotations

from typing import Annotated, NoReturn

import typer


def fail(message: str) -> NoReturn:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=2)


ChromaDir = Annotated[
    str | None, typer.Option(help="Embedded Chroma folder (default $CRAG_CHROMA_DIR or .crag/chroma).")
]
ChromaUrl = Annotated[str | None, typer.Option(help="Chroma server URL instead of a folder.")]
Collection = Annotated[str | None, typer.Option(help="Chroma collection (default $CRAG_COLLECTION or crag).")]
Evaluator = Annotated[str | None, typer.Option(help="Evaluator checkpoint (default: shipped).")]
ChatModel = Annotated[str | None, typer.Option(help="'local' or 'openai:<model>' (default $CRAG_CHAT_MODEL or local).")]
WebBackend = Annotated[
    str | None,
    typer.Option(
        help="'local' (needs --web-index), 'tavily' or 'none' (default $CRAG_WEB_BACKEND; else local if a web "
        "index is set, else none)."
    ),
]
WebIndex = Annotated[str | None, typer.Option(help="JSONL corpus of the local web backend (default $CRAG_WEB_INDEX).")]
