"""How a run is shown on the terminal, alike for `crag ask` (local or `--server`) and `crag chat`: the
plain view, the JSON view, and the streamed view (each step, then the answer token by token). Every line
passes `crag.cli.terminal`: no escape sequence or control or bidirectional character of a page reaches it."""

from __future__ import annotations

import json
from typing import Any, Literal

import typer

from crag.answers.attribution import abstains
from crag.cli.terminal import echo, escaped, secho
from crag.knowledge.refinement import judged
from crag.passages import source_of, title_of, titled_once
from crag.state import OUTPUT_KEYS

View = Literal["plain", "json", "stream"]


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """The JSON view of a run: every key of the graph's output, its documents as plain records."""
    scores, labels = result.get("scores", []), result.get("labels", [])
    out = {key: result.get(key) for key in sorted(OUTPUT_KEYS)}
    out["documents"] = [
        {
            "id": d.id or d.metadata.get("id"),
            "rank": i + 1,
            "title": title_of(d),
            "source": source_of(d),
            "score": scores[i] if i < len(scores) else None,
            "label": labels[i] if i < len(labels) else None,
            "text": d.page_content,
        }
        for i, d in enumerate(result.get("documents", []))
    ]
    out["web_results"] = [{"title": title_of(r), "url": source_of(r)} for r in result.get("web_results", [])]
    return out


def print_run(result: dict[str, Any]) -> None:
    """The plain view: the details, the answer and its sources."""
    print_details(result)
    secho("answer:", bold=True)
    echo(f"  {result.get('answer', '')}")
    first = short(result.get("first_draft", ""), 160) or "nothing"
    if result.get("read_further"):
        secho(f'  (read further: over the kept strips the model said "{first}")', dim=True)
    if result.get("asked_again"):  # the streamed view has shown both replies and the line between them
        secho(f'  (asked again: the first answer, "{first}", did not stand)', dim=True)
    print_grounding(result)


def print_details(result: dict[str, Any]) -> None:
    """What the answer was made from: the action and why, each document's score, the web, the knowledge."""
    titles = [title_of(d) for d in result.get("documents", [])] or [""] * len(result.get("scores", []))
    if result.get("retrieve_probability") is not None:  # Self-RAG's [Retrieve]
        echo(f"documents would help: P(yes) {result['retrieve_probability']:.2f}")
    if result.get("action"):  # None in a system that does not grade
        secho(f"action: {result['action'].upper()}", bold=True)
        if result.get("reason"):
            echo(f"  ({result['reason']})")
    scores = result.get("scores", [])
    # the chat model's grade beside the evaluator's, for the first `recheck_k` documents (blanks for the rest)
    grades = result.get("recheck_scores") or []
    blank = " " * len("chat model +0.00  ") if grades else ""
    seconds = [f"chat model {g:+.2f}  " for g in grades] + [blank] * len(scores)
    for title, score, label, second in zip(titles, scores, result.get("labels", []), seconds):
        echo(f"  {score:+.3f}  {label:<9}  {second}{title}")
    if grades and result.get("action") == "incorrect":
        which = "none of them" if len(grades) >= len(scores) else f"none of the first {len(grades)}"
        echo(f"  (the chat model, asked for a second opinion, judged {which} relevant: Incorrect stands)")
    elif result.get("recheck_error"):  # asked and failed: the reason alone would read as if it was never asked
        secho(
            f"  (the chat model could not give a second opinion: {result['recheck_error']}; Incorrect stands)",
            fg=typer.colors.YELLOW,
        )
    _print_web(result)
    _print_reasoning(result)
    _print_candidates(result)
    secho("knowledge:", bold=True)
    strips = result.get("given") or []  # numbered as the generator was given them
    if not strips:
        echo("  (none)")
    # each strip with the score it was kept (and a quote chosen) by
    for n, strip in enumerate(strips, 1):
        echo(f"  [{n}] {judged(strip):+.2f} {short(titled_once(strip['text'], strip['title']), 160)}")


def _print_candidates(result: dict[str, Any]) -> None:
    """Self-RAG's candidates: each one's critiques and segment score, the chosen one marked."""
    candidates = result.get("candidates") or []
    if not candidates:
        return
    secho("candidates (ISREL P(relevant), ISSUP P(fully/partially/no), ISUSE expected 1-5):", bold=True)
    chosen = result.get("given") or []
    for c in candidates:
        support = "/".join(f"{p:.2f}" for p in c["support"])
        use = f"{sum(i * p for i, p in enumerate(c['usefulness'], 1)):.1f}" if c["usefulness"] else "-"
        mark = "*" if c["strips"] == chosen else " "
        echo(
            f" {mark}[{c['n']}] {c['score']:+.2f}  rel {c['relevant']:.2f}  sup {support}  use {use}  "
            f"{short(c['draft'], 80)}"
        )


def show(result: dict[str, Any], view: View) -> None:
    """A finished run in `view`; the streamed view has shown all but the grounding already."""
    if view == "json":
        typer.echo(escaped(json.dumps(summary(result), ensure_ascii=False)))
    elif view == "stream":
        print_grounding(result, replacement_shown=True)
    else:
        print_run(result)


def short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _print_reasoning(result: dict[str, Any]) -> None:
    """Self-Reasoning's steps: the reader's verdict on its documents and why, its evidence, its analysis."""
    if not result.get("reasoning"):
        return
    secho("self-reasoning:", bold=True)
    if result.get("relevance") is not None:
        verdict = "relevant" if result["relevance"] > 0 else "not relevant"
        echo(f"  documents {verdict} ({result['relevance']:+.2f}): {short(result.get('relevance_reason', ''), 160)}")
    for evidence in result.get("evidence") or []:
        echo(f'  evidence from [{evidence["number"]}]: "{short(evidence["sentence"], 100)}"')
        secho(f"    ({short(evidence['reason'], 120)})", dim=True)
    for quote in result.get("evidence_dropped") or []:  # invented, altered, or in no document of its number
        secho(
            f'  dropped, not word for word in [{quote["document"]}]: "{short(quote["sentence"], 100)}"',
            fg=typer.colors.YELLOW,
        )
    if result.get("analysis"):
        echo(f"  analysis: {short(result['analysis'], 240)}")


def _print_web(result: dict[str, Any]) -> None:
    if result.get("web_status") == "not configured":
        secho(
            # where the graph runs: this process, or the server `crag ask --server` talks to
            "web search: not configured (set --web-backend, or CRAG_WEB_INDEX for a local corpus, where the "
            "graph runs: here, or on the server)",
            fg=typer.colors.YELLOW,
        )
    if result.get("rewritten_query"):
        echo(f"web query: {result['rewritten_query']}")
    if result.get("web_error"):
        secho(f"web search: {result['web_error']}", fg=typer.colors.YELLOW)


# why the model's words do not stand: (after the streamed view showed them, after quoting them)
FAULTS = {
    "looped": ("these words go round in circles", "goes round in circles"),
    "unsupported": ("no source supports these words", "no source supports"),
    "planted": (
        "these words do what an instruction planted in a document asks",
        "an instruction planted in a document asks for",
    ),
    "empty": ("the model wrote nothing", ""),
    "declined": ("the model said it does not know", ""),
}


def replacement(result: dict[str, Any], *, draft_shown: bool = False) -> str | None:
    """Why the answer is not the model's own words (withheld, or a strip quoted instead), or None."""
    why = result.get("replaced")
    if why not in FAULTS:
        return None
    shown, which = FAULTS[why]
    said = (
        shown if draft_shown or not which else f'the model wrote "{short(result.get("draft", ""), 160)}", which {which}'
    )
    if result.get("quoted"):
        return f"({said}: quoting the kept passage judged most relevant)"
    return f"({said}: withheld)" if why in ("looped", "unsupported", "planted") else None


def print_grounding(result: dict[str, Any], *, replacement_shown: bool = False) -> None:
    """Which sentence rests on which strip, or that the answer rests on none (and why it is not the model's)."""
    answer, note = result.get("answer", ""), replacement(result)
    if note:
        if not replacement_shown:
            secho(f"  {note}", fg=typer.colors.YELLOW)
    elif not result.get("grounded") and not abstains(answer):
        secho("  UNGROUNDED: no source supports this answer", fg=typer.colors.YELLOW)
    if not result.get("sources"):
        return
    secho("sources:", bold=True)
    for citation in result.get("citations", []):
        cited = "".join(f"[{n}]" for n in citation["sources"]) or "(no supporting source)"
        echo(f'  "{short(citation["sentence"], 80)}" {cited}')
    for source in result["sources"]:
        where = f"{source['origin']} document {source['doc'] + 1}, characters {source['start']}-{source['end']}"
        where = f"{source['source']}; {where}" if source["source"] else where
        echo(f"  [{source['id']}] {source['title']} ({where})")


def counted(n: int, noun: str) -> str:
    """ "1 document", "2 documents"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def event_line(event: dict[str, Any]) -> str:
    """One readable line per custom stream event."""
    node = event.get("node")
    if node == "contextualize":
        return f"follow-up read as: {event['question']}"
    if node == "retrieve":
        return f"retrieved {counted(len(event['documents']), 'document')}"
    if node == "grade" and "rechecking" in event:
        return f"every document below the lower threshold: the chat model grades {counted(event['rechecking'], 'document')}"
    if node == "grade" and "recheck_error" in event:
        return f"the chat model could not grade: {event['recheck_error']}; INCORRECT stands"
    if node == "grade" and "recheck_scores" in event:
        grades = ", ".join(f"{s:+.2f}" for s in event["recheck_scores"])
        return f"the chat model graded: {event['action'].upper()} ({grades})"
    if node == "grade":
        return f"graded: {event['action'].upper()} (" + ", ".join(f"{s:+.2f}" for s in event["scores"]) + ")"
    if node == "requery":
        if "requery_error" in event:
            return f"searched again: failed ({event['requery_error']})"
        if not event.get("requery_query"):
            return "searched again: the model wrote no new query"
        return (
            f"searched again with: {short(event['requery_query'], 80)}; "
            f"{counted(event['added'], 'new document')} kept: {event['action'].upper()}"
        )
    if event.get("web_status") == "not configured":
        return "web search: not configured"
    if "rewritten_query" in event:
        return f"web query: {event['rewritten_query']}"
    if "web_error" in event:
        return f"web search failed: {event['web_error']}"
    if "results" in event:
        return f"web: {counted(len(event['results']), 'result')}, {counted(len(event['strips']), 'strip')} kept"
    if node == "refine":
        return f"refined: {counted(len(event['strips']), 'strip')} kept"
    if node == "decide_retrieval":
        if "error" in event:
            return f"the chat model could not judge whether to retrieve ({event['error']}): retrieving"
        then = "retrieving" if event["retrieve"] else "answering from memory"
        return f"documents would help: P(yes) {event['probability']:.2f}, threshold {event['threshold']}: {then}"
    if node == "passages":
        return f"candidates over {event['internal']} internal and {event['external']} external strips"
    if node == "candidate":
        return f"candidate {event['n']}: {event['score']:+.2f} {short(event['draft'], 80)}"
    if node == "select":
        return f"chose candidate {event['n']} of {len(event['scores'])}"
    if node == "draft_sentence":
        unsure = f", unsure of {', '.join(repr(t.strip()) for t in event['unsure'])}" if event["unsure"] else ""
        return (
            f"sentence {event['n']} drafted (lowest p {event['confidence']:.2f}{unsure}): {short(event['draft'], 80)}"
        )
    if node == "query":
        return "searching with: " + "; ".join(short(q, 80) for q in event["queries"])
    if node == "gather":
        actions = ", ".join(a.upper() for a in event["actions"] if a)
        return f"kept {counted(event['kept'], 'strip')}" + (f" ({actions})" if actions else "")
    if node == "sentence":
        how = "written again" if event["rewritten"] else "kept"
        return f"sentence {event['n']} {how}: {event['sentence']}"
    if node == "read_further":
        return f"the model does not know from the kept strips: reading {counted(event['further'], 'more strip')}"
    if node == "ask_again":
        return f"the first answer does not stand: asking again with the {event['retry_prompt']} prompt"
    if node == "relevance_aware":
        verdict = "relevant" if event["relevance"] > 0 else "not relevant"
        return f"the reader judged its documents {verdict} ({event['relevance']:+.2f})"
    if node == "evidence_aware":
        selected = counted(event["kept"] + event["dropped"], "sentence")
        return f"the reader selected {selected} as evidence: {event['kept']} word for word, {event['dropped']} dropped"
    if node == "trajectory_analysis":
        return f"the reader's analysis: {short(event['analysis'], 120)}"
    return json.dumps(event, ensure_ascii=False)[:200]


class StreamPrinter:
    """The streamed view, fed by the local graph's stream or a server's events. `finish` makes sure the
    last answer on the screen is the final one (the streamed words may have been withheld or replaced)."""

    def __init__(self) -> None:
        self.answering = False

    def event(self, event: dict[str, Any]) -> None:
        if self.answering:  # an answer streamed before the event (the first of two) ends its line
            echo()
            self.answering = False
        secho(f"· {event_line(event)}", dim=True)

    def token(self, text: str) -> None:
        if not text:
            return
        if not self.answering:
            secho("answer: ", bold=True, nl=False)
            self.answering = True
        echo(text, nl=False)

    def finish(self, state: dict[str, Any]) -> None:
        note = replacement(state, draft_shown=self.answering)
        if self.answering:
            echo()
            if not note:
                return
            secho(f"  {note}", fg=typer.colors.YELLOW)
        secho("answer: ", bold=True, nl=False)
        echo(state.get("answer", ""))


def stream_run(graph, question: str, context, config: dict | None) -> dict[str, Any]:
    """Run the graph printing its progress events, then the answer token by token; return the final state."""
    printer = StreamPrinter()
    state: dict[str, Any] = {}
    modes = ["custom", "messages", "updates"]
    # `subgraphs`: the events of a subgraph's steps too (FLARE's searches); the state is the graph's own updates
    stream = graph.stream({"question": question}, config=config, context=context, stream_mode=modes, subgraphs=True)
    for namespace, mode, chunk in stream:
        if mode == "custom":
            printer.event(chunk)
        elif mode == "messages":
            message, metadata = chunk
            if "crag:answer" in (metadata.get("tags") or []):
                printer.token(message.content)
        elif not namespace:
            for update in chunk.values():
                state.update(update or {})
    if config:
        state = dict(graph.get_state(config).values)
    printer.finish(state)
    return state
