"""The `crag` command line: `ask`, `chat`, `ingest`, `serve`, `models`, `eval …` and `evaluator …`."""

from __future__ import annotations

import contextlib
from typing import Annotated, Any

import typer

from crag import __version__
from crag.cli.chat import chat_cmd
from crag.cli.common import error_line, fail, quiet_transformers
from crag.cli.evaluate import app as eval_app
from crag.cli.evaluator import app as evaluator_app
from crag.cli.ingest import ingest_cmd
from crag.cli.models import models_cmd
from crag.cli.render import StreamPrinter, View, show, stream_run
from crag.cli.serve import serve_cmd
from crag.cli.settings import RUN_ERRORS, AsJson, System, Thread, ThreadsDb, flag, option_of, with_settings
from crag.graphs import compiled
from crag.runtime.extras import MissingExtra
from crag.serve.client import DEFAULT_TIMEOUT, CragClient, ServerError
from crag.serve.service import SAFE_SETTINGS
from crag.settings import Context
from crag.threads import thread_config, thread_turn, threaded_graph

app = typer.Typer(help="Corrective Retrieval-Augmented Generation (CRAG) on LangGraph.", no_args_is_help=True)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"crag-langgraph {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    pass


app.add_typer(evaluator_app, name="evaluator")
app.add_typer(eval_app, name="eval")
app.command("ingest")(ingest_cmd)
app.command("serve")(serve_cmd)
app.command("chat")(chat_cmd)
app.command("models")(models_cmd)


@app.command("ask")
@with_settings
def ask_cmd(
    question: Annotated[str, typer.Argument(help="The question to answer.")],
    as_json: AsJson = False,
    stream: Annotated[
        bool, typer.Option("--stream", help="Show each step as it happens and the answer as it is written.")
    ] = False,
    thread: Thread = None,
    threads_db: ThreadsDb = None,
    system: System = "crag",
    server: Annotated[
        str | None,
        typer.Option(
            help="Answer through a running `crag serve` at this URL (e.g. http://127.0.0.1:8000): no model loads "
            "here. Sends $CRAG_API_KEY if set."
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option(min=0.1, help="With --server: seconds to wait for the server to connect and to answer.")
    ] = DEFAULT_TIMEOUT,
    *,
    settings: dict[str, Any],
) -> None:
    """Answer a question with CRAG (or --system) and show the action, scores, knowledge, sources and answer."""
    view: View = "json" if as_json else "stream" if stream else "plain"
    if server is not None:
        result = _ask_server(server, timeout, question, settings, thread, threads_db, view, system)
    else:
        result = _ask_here(question, settings, thread, threads_db, view, system)
    show(result, view)


def _ask_here(
    question: str, options: dict[str, Any], thread: str | None, threads_db: str | None, view: View, system: str
) -> dict[str, Any]:
    """One run in this process, on the thread if one is named."""
    quiet_transformers()
    try:
        context = Context(**options)
        config = thread_config(thread) if thread is not None else None
        with contextlib.ExitStack() as stack:
            if config and thread is not None:
                stack.enter_context(
                    thread_turn(
                        thread,
                        threads_db,
                        on_wait=lambda: typer.secho(
                            f"waiting for the other turn on thread {thread!r} to finish ...",
                            err=True,
                            fg=typer.colors.YELLOW,
                        ),
                    )
                )
                graph = stack.enter_context(threaded_graph(threads_db, system))
            else:
                graph = compiled(system)
            if view == "stream":
                return stream_run(graph, question, context, config)
            return graph.invoke({"question": question}, config=config, context=context)
    except RUN_ERRORS as exc:
        fail(str(exc))


def _ask_server(
    url: str,
    timeout: float,
    question: str,
    options: dict[str, Any],
    thread: str | None,
    threads_db: str | None,
    view: View,
    system: str,
) -> dict[str, Any]:
    """One run on a `crag serve` (its endpoint for `system`), which takes only `SAFE_SETTINGS` per request."""
    fixed = sorted(flag(option_of(field)) for field in options if field not in SAFE_SETTINGS)
    if threads_db is not None:
        fixed.append("--threads-db")
    if fixed:
        fail(
            f"{', '.join(fixed)} cannot be used with --server: the server's models, knowledge base, web index "
            "and threads database are set when it starts (give them to crag serve)"
        )
    configurable = {**options, **({"thread_id": thread} if thread is not None else {})}
    try:
        client = CragClient(url, timeout=timeout, system=system)
        if view != "stream":
            return client.invoke(question, configurable)
        printer, result = StreamPrinter(), {}
        for kind, value in client.stream(question, configurable):
            if kind == "event":
                printer.event(value)
            elif kind == "token":
                printer.token(value)
            else:  # the last: the run's output
                result = value
    except ServerError as exc:
        fail(str(exc))
    printer.finish(result)
    return result


def main() -> None:  # entry point of the `crag` script
    try:
        app()
    except MissingExtra as exc:  # an optional package a command needs (the local model, OpenAI, …)
        error_line(str(exc))
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
