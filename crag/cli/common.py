"""What the `crag` commands share: how a failure is reported (one line on stderr, exit code 2,
the code argparse and typer use for bad usage, so scripts can tell a refused input from a crash),
and the options that choose the knowledge base and the models, which `ask`, `serve`, `ingest` and
`evaluator adapt` take alike. Each option defaults to unset: `Context` (or the backend's own
`default_chroma_dir()`/`default_collection()`, read at call time) fills in what the user did not give."""

from __future__ import annotations

from typing import Annotated, NoReturn

import typer

from crag.models.chat import CHAT_MODEL_HELP
from crag.models.embeddings import EMBEDDINGS_HELP
from crag.search.store import DEFAULT_CHROMA_DIR, DEFAULT_COLLECTION
from crag.search.wikipedia import DEFAULT_API_URL as DEFAULT_WIKIPEDIA_URL


def error_line(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)


def fail(message: str) -> NoReturn:
    error_line(message)
    raise typer.Exit(code=2)


ChromaDir = Annotated[
    str | None, typer.Option(help=f"Embedded Chroma folder (default $CRAG_CHROMA_DIR or {DEFAULT_CHROMA_DIR}).")
]
ChromaUrl = Annotated[
    str | None,
    typer.Option(help="Chroma server, e.g. http://127.0.0.1:8000, instead of a folder (default $CRAG_CHROMA_URL)."),
]
Collection = Annotated[
    str | None, typer.Option(help=f"Chroma collection (default $CRAG_COLLECTION or {DEFAULT_COLLECTION}).")
]
Embeddings = Annotated[
    str | None,
    typer.Option(help=f"The collection's embeddings: {EMBEDDINGS_HELP} (default $CRAG_EMBEDDINGS or local)."),
]
Evaluator = Annotated[str | None, typer.Option(help="Evaluator checkpoint (default: shipped).")]
ChatModel = Annotated[str | None, typer.Option(help=f"{CHAT_MODEL_HELP} (default $CRAG_CHAT_MODEL or local).")]
WebBackend = Annotated[
    str | None,
    typer.Option(
        help="'local' (needs --web-index), 'tavily', 'wikipedia', 'searxng' (needs --searxng-url) or 'none' "
        "(default $CRAG_WEB_BACKEND; else local if a web index is set, else none)."
    ),
]
WebIndex = Annotated[str | None, typer.Option(help="JSONL corpus of the local web backend (default $CRAG_WEB_INDEX).")]
WikipediaUrl = Annotated[
    str | None,
    typer.Option(
        help=f"MediaWiki API of the wikipedia web backend (default $CRAG_WIKIPEDIA_URL or {DEFAULT_WIKIPEDIA_URL})."
    ),
]
SearxngUrl = Annotated[
    str | None,
    typer.Option(
        help="SearxNG instance of the searxng web backend, e.g. http://127.0.0.1:8888 (default $CRAG_SEARXNG_URL)."
    ),
]


def quiet_transformers() -> None:
    """Keep the output to our own lines: no load reports or weight-loading progress bars."""
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
