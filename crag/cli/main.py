"""The `crag` command line: `ask`, `ingest`, `serve`, `eval …` and `evaluator …`."""

from __future__ import annotations

import contextlib
import json
from typing import Annotated, Any

import typer

from crag.backends.retrieval import StoreError
from crag.cli.common import (
    ChatModel,
    ChromaDir,
    ChromaUrl,
    Collection,
    Embeddings,
    Evaluator,
    SearxngUrl,
    WebBackend,
    WebIndex,
    WikipediaUrl,
    error_line,
    fail,
    quiet_transformers,
)
from crag.cli.evaluator import app as evaluator_app
from crag.cli.experiments import app as eval_app
from crag.cli.ingest import ingest_cmd
from crag.cli.serve import serve_cmd
from crag.context import Context
from crag.core.extras import MissingExtra
from crag.core.passages import source_of, title_of, titled_once
from crag.evaluator_model.checkpoint import EvaluatorError
from crag.graph import graph as crag_graph
from crag.methods.attribution import abstains
from crag.methods.question import InvalidQuestion
from crag.methods.routing import final_knowledge
from crag.threads import InvalidThreadId, ThreadsError, thread_config, thread_turn, threaded_graph

app = typer.Typer(help="Corrective Retrieval-Augmented Generation (CRAG) on LangGraph.", no_args_is_help=True)
app.add_typer(evaluator_app, name="evaluator")
app.add_typer(eval_app, name="eval")
app.command("ingest")(ingest_cmd)
app.command("serve")(serve_cmd)


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    """The JSON view of a run: what happened and why, without LangChain objects."""
    documents = result.get("documents", [])
    scores, labels = result.get("scores", []), result.get("labels", [])
    return {
        "question": result.get("question"),
        "history": result.get("history", []),
        "action": result.get("action"),
        "reason": result.get("reason", ""),
        "thresholds": result.get("thresholds", {}),
        "documents": [
            {
                "id": d.id or d.metadata.get("id"),
                "rank": i + 1,
                "title": title_of(d),
                "source": source_of(d),
                "score": scores[i] if i < len(scores) else None,
                "label": labels[i] if i < len(labels) else None,
                "text": d.page_content,
            }
            for i, d in enumerate(documents)
        ],
        "rewritten_query": result.get("rewritten_query") or None,
        "web_status": result.get("web_status") or None,
        "web_error": result.get("web_error"),
        "web_results": [{"title": title_of(r), "url": source_of(r)} for r in result.get("web_results", [])],
        "internal_knowledge": result.get("internal_knowledge", []),
        "external_knowledge": result.get("external_knowledge", []),
        "knowledge": result.get("knowledge", ""),
        "answer": result.get("answer", ""),
        "grounded": bool(result.get("grounded")),
        "draft": result.get("draft", ""),
        "citations": result.get("citations", []),
        "sources": result.get("sources", []),
        "timings": result.get("timings", {}),
    }


def _print_run(result: dict[str, Any], titles: list[str]) -> None:
    typer.secho(f"action: {result['action'].upper()}", bold=True)
    if result.get("reason"):
        typer.echo(f"  ({result['reason']})")
    for title, score, label in zip(titles, result.get("scores", []), result.get("labels", [])):
        typer.echo(f"  {score:+.3f}  {label:<9}  {title}")
    _print_web(result)
    typer.secho("knowledge:", bold=True)
    strips = final_knowledge(result)  # numbered as the generator was given them
    if not strips:
        typer.echo("  (none)")
    for n, strip in enumerate(strips, 1):
        typer.echo(f"  [{n}] {strip['score']:+.2f} {_short(titled_once(strip['text'], strip['title']), 160)}")
    typer.secho("answer:", bold=True)
    typer.echo(f"  {result.get('answer', '')}")
    _print_grounding(result)


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _print_web(result: dict[str, Any]) -> None:
    if result.get("web_status") == "not configured":
        typer.secho(
            "web search: not configured (set --web-backend, or CRAG_WEB_INDEX for a local corpus)",
            fg=typer.colors.YELLOW,
        )
    if result.get("rewritten_query"):
        typer.echo(f"web query: {result['rewritten_query']}")
    if result.get("web_error"):
        typer.secho(f"web search: {result['web_error']}", fg=typer.colors.YELLOW)


def _print_grounding(result: dict[str, Any]) -> None:
    """Which sentence rests on which strip, or that the answer rests on none."""
    answer, draft = result.get("answer", ""), result.get("draft", "")
    if draft and draft != answer:
        typer.secho(
            f'  (the model wrote "{_short(draft, 160)}", which no source supports: withheld)', fg=typer.colors.YELLOW
        )
    elif not result.get("grounded") and not abstains(answer):
        typer.secho("  UNGROUNDED: no source supports this answer", fg=typer.colors.YELLOW)
    if not result.get("sources"):
        return
    typer.secho("sources:", bold=True)
    for citation in result.get("citations", []):
        cited = "".join(f"[{n}]" for n in citation["sources"]) or "(no supporting source)"
        typer.echo(f'  "{_short(citation["sentence"], 80)}" {cited}')
    for source in result["sources"]:
        where = f"{source['origin']} document {source['doc'] + 1}, characters {source['start']}-{source['end']}"
        typer.echo(
            f"  [{source['id']}] {source['title']} ({source['source']}; {where})"
            if source["source"]
            else f"  [{source['id']}] {source['title']} ({where})"
        )


def _event_line(event: dict[str, Any]) -> str:
    """One readable line per custom stream event."""
    node = event.get("node")
    if node == "contextualize":
        return f"follow-up read as: {event['question']}"
    if node == "retrieve":
        return f"retrieved {len(event['documents'])} documents"
    if node == "grade":
        return f"graded: {event['action'].upper()} (" + ", ".join(f"{s:+.2f}" for s in event["scores"]) + ")"
    if event.get("web_status") == "not configured":
        return "web search: not configured"
    if "rewritten_query" in event:
        return f"web query: {event['rewritten_query']}"
    if "web_error" in event:
        return f"web search failed: {event['web_error']}"
    if "results" in event:
        return f"web: {len(event['results'])} results, {len(event['strips'])} strips kept"
    if node == "refine":
        return f"refined: {len(event['strips'])} strips kept"
    return json.dumps(event, ensure_ascii=False)[:200]


def _stream(graph, question: str, context, config: dict | None) -> dict[str, Any]:
    """Run the graph printing its progress events, then the answer token by token; return the final state."""
    state: dict[str, Any] = {}
    answering = False
    modes = ["custom", "messages", "updates"]
    for mode, chunk in graph.stream({"question": question}, config=config, context=context, stream_mode=modes):
        if mode == "custom":
            typer.secho(f"· {_event_line(chunk)}", dim=True)
        elif mode == "messages":
            message, metadata = chunk
            if "crag:answer" in (metadata.get("tags") or []) and message.content:
                if not answering:
                    typer.secho("answer: ", bold=True, nl=False)
                    answering = True
                typer.echo(message.content, nl=False)
        else:
            for update in chunk.values():
                state.update(update or {})
    if answering:
        typer.echo()
    if config:
        state = dict(graph.get_state(config).values)
    if not answering:  # nothing was generated (no knowledge): the answer is CRAG's own
        typer.secho("answer: ", bold=True, nl=False)
        typer.echo(state.get("answer", ""))
    return state


@app.command("ask")
def ask_cmd(
    question: Annotated[str, typer.Argument(help="The question to answer.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    stream: Annotated[
        bool, typer.Option("--stream", help="Show each step as it happens and the answer as it is written.")
    ] = False,
    thread: Annotated[
        str | None, typer.Option(help="Thread id: keep the conversation (follow-up questions) across runs.")
    ] = None,
    threads_db: Annotated[
        str | None, typer.Option(help="SQLite file of the threads (default $CRAG_THREADS_DB or .crag/threads.sqlite).")
    ] = None,
    k: Annotated[
        int | None, typer.Option(min=1, help=f"Documents to retrieve (default {Context.default('k')}).")
    ] = None,
    preset: Annotated[str | None, typer.Option(help="Paper thresholds: popqa, pubhealth, arc, biography.")] = None,
    upper: Annotated[float | None, typer.Option(help="Upper threshold (default: calibrated).")] = None,
    lower: Annotated[float | None, typer.Option(help="Lower threshold (default: calibrated).")] = None,
    refine_mode: Annotated[
        str | None, typer.Option(help=f"fixed_num, excerption or selection (default {Context.default('refine_mode')}).")
    ] = None,
    chat_model: ChatModel = None,
    web_backend: WebBackend = None,
    web_index: WebIndex = None,
    wikipedia_url: WikipediaUrl = None,
    searxng_url: SearxngUrl = None,
    answer_without_knowledge: Annotated[
        bool | None,
        typer.Option(
            help="With nothing relevant found, answer from the model's memory, marked ungrounded, instead of saying so (default: off)."
        ),
    ] = None,
    prompt: Annotated[
        str | None, typer.Option(help="Generation prompt: compact (default) or paper (the CRAG paper's).")
    ] = None,
    chroma_dir: ChromaDir = None,
    chroma_url: ChromaUrl = None,
    collection: Collection = None,
    embeddings: Embeddings = None,
    evaluator: Evaluator = None,
) -> None:
    """Answer a question with CRAG and show the action, scores, knowledge, sources and answer."""
    quiet_transformers()
    given = {
        "k": k,
        "preset": preset,
        "upper_threshold": upper,
        "lower_threshold": lower,
        "refine_mode": refine_mode,
        "chat_model": chat_model,
        "evaluator": evaluator,
        "answer_without_knowledge": answer_without_knowledge,
        "web_backend": web_backend,
        "web_index": web_index,
        "wikipedia_url": wikipedia_url,
        "searxng_url": searxng_url,
        "chroma_dir": chroma_dir,
        "chroma_url": chroma_url,
        "collection": collection,
        "embeddings": embeddings,
        "generate_prompt": prompt,
    }
    options = {name: value for name, value in given.items() if value is not None}  # the rest: Context's defaults
    try:
        context = Context(**options)
        config = thread_config(thread) if thread is not None else None
        with contextlib.ExitStack() as stack:
            if config:
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
                graph = stack.enter_context(threaded_graph(threads_db))
            else:
                graph = crag_graph
            if stream and not as_json:
                result = _stream(graph, question, context, config)
            else:
                result = graph.invoke({"question": question}, config=config, context=context)
    except (InvalidQuestion, InvalidThreadId, EvaluatorError, ValueError, StoreError, ThreadsError) as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(_summary(result), ensure_ascii=False))
    elif stream:
        _print_grounding(result)
    else:
        titles = [title_of(d) for d in result.get("documents", [])] or [""] * len(result.get("scores", []))
        _print_run(result, titles)


def main() -> None:  # entry point of the `crag` script
    try:
        app()
    except MissingExtra as exc:  # an optional package a command needs (the local model, OpenAI, …)
        error_line(str(exc))
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
