"""The `crag` command line: `ask`, `ingest` and `evaluator …`."""

from __future__ import annotations

import json
import os
from typing import Annotated, Any, Optional

import typer

from crag.evaluator_model.cli import _quiet_transformers
from crag.evaluator_model.cli import app as evaluator_app
from crag.ingest import ingest_cmd

app = typer.Typer(help="Corrective Retrieval-Augmented Generation (CRAG) on LangGraph.", no_args_is_help=True)
app.add_typer(evaluator_app, name="evaluator")
app.command("ingest")(ingest_cmd)


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=2)


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    """The JSON view of a run: what a script needs, without LangChain objects."""
    return {
        "question": result.get("question"),
        "action": result.get("action"),
        "documents": [
            {"title": d.metadata.get("title", ""), "source": d.metadata.get("source", ""), "score": score, "label": label}
            for d, score, label in zip(result.get("documents", []), result.get("scores", []), result.get("labels", []))
        ],
        "rewritten_query": result.get("rewritten_query") or None,
        "knowledge": result.get("knowledge", ""),
        "sources": result.get("sources", []),
        "answer": result.get("answer", ""),
        "web_error": result.get("web_error"),
    }


def _print_run(result: dict[str, Any], titles: list[str]) -> None:
    typer.secho(f"action: {result['action'].upper()}", bold=True)
    for title, score, label in zip(titles, result.get("scores", []), result.get("labels", [])):
        typer.echo(f"  {score:+.3f}  {label:<9}  {title}")
    if result.get("rewritten_query"):
        typer.echo(f"web query: {result['rewritten_query']}")
    if result.get("web_error"):
        typer.secho(f"web search: {result['web_error']}", fg=typer.colors.YELLOW)
    typer.secho("knowledge:", bold=True)
    typer.echo("  " + (result.get("knowledge") or "(none)").replace("\n", "\n  "))
    typer.secho("sources:", bold=True)
    for source in result.get("sources", []):
        typer.echo(f"  [{source['id']}] {source['title']} ({source['origin']}: {source['source']})")
    typer.secho("answer:", bold=True)
    typer.echo(f"  {result.get('answer', '')}")


def _stream(question: str, context) -> dict[str, Any]:
    """Run the graph, printing each node's events as it finishes; return the final state."""
    from crag.graph import graph

    state: dict[str, Any] = {}
    for mode, chunk in graph.stream({"question": question}, context=context, stream_mode=["updates", "custom"]):
        if mode == "custom":
            shown = {k: v for k, v in chunk.items() if k != "node"}
            typer.secho(f"· {chunk.get('node')}: {json.dumps(shown, ensure_ascii=False)[:300]}", dim=True)
        else:
            for node, update in chunk.items():
                typer.secho(f"✓ {node}", fg=typer.colors.GREEN)
                state.update(update or {})
    return state


@app.command("ask")
def ask_cmd(
    question: Annotated[str, typer.Argument(help="The question to answer.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    stream: Annotated[bool, typer.Option("--stream", help="Show each node as it finishes.")] = False,
    k: Annotated[int, typer.Option(min=1, help="Documents to retrieve.")] = 10,
    preset: Annotated[Optional[str], typer.Option(help="Paper thresholds: popqa, pubhealth, arc, biography.")] = None,
    upper: Annotated[Optional[float], typer.Option(help="Upper threshold (default: calibrated).")] = None,
    lower: Annotated[Optional[float], typer.Option(help="Lower threshold (default: calibrated).")] = None,
    refine_mode: Annotated[str, typer.Option(help="fixed_num, excerption or selection.")] = "excerption",
    chat_model: Annotated[str, typer.Option(help="'local' or 'openai:<model>'.")] = os.environ.get("CRAG_CHAT_MODEL", "local"),
    web_backend: Annotated[str, typer.Option(help="'local' or 'tavily'.")] = os.environ.get("CRAG_WEB_BACKEND", "local"),
    web_index: Annotated[Optional[str], typer.Option(help="JSONL corpus of the local web backend.")] = None,
    chroma_dir: Annotated[Optional[str], typer.Option(help="Embedded Chroma folder.")] = None,
    chroma_url: Annotated[Optional[str], typer.Option(help="Chroma server URL.")] = None,
    collection: Annotated[str, typer.Option(help="Chroma collection.")] = "crag",
    evaluator: Annotated[Optional[str], typer.Option(help="Evaluator checkpoint (default: shipped).")] = None,
) -> None:
    """Answer a question with CRAG and show the action, scores, knowledge, sources and answer."""
    from crag.context import Context
    from crag.evaluator_model.model import EvaluatorError
    from crag.graph import graph
    from crag.nodes.retrieve import InvalidQuestion

    _quiet_transformers()
    options: dict[str, Any] = dict(
        k=k, preset=preset, upper_threshold=upper, lower_threshold=lower, refine_mode=refine_mode,
        chat_model=chat_model, web_backend=web_backend, collection=collection, evaluator=evaluator,
    )
    options.update({name: value for name, value in (("web_index", web_index), ("chroma_dir", chroma_dir),
                                                    ("chroma_url", chroma_url)) if value})
    try:
        context = Context(**options)
        if stream and not as_json:
            result = _stream(question, context)
        else:
            result = graph.invoke({"question": question}, context=context)
    except (InvalidQuestion, EvaluatorError, ValueError) as exc:
        _fail(str(exc))
    if as_json:
        typer.echo(json.dumps(_summary(result), ensure_ascii=False))
        return
    titles = [d.metadata.get("title", "") for d in result.get("documents", [])] or [""] * len(result.get("scores", []))
    _print_run(result, titles)


def main() -> None:  # entry point of the `crag` script
    app()


if __name__ == "__main__":
    main()
