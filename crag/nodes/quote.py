"""`quote`: the model declined or its answer was withheld; the best kept strip about the question's subject
that scores as relevant (`Context.quote_threshold`) is quoted word for word instead, and with
`Context.judge_quotes` only when the chat model judges that it answers. A strip is quoted as an answer's
evidence is read, `heard`: without the sentences planted in it, which are never shown as what the sources say."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.answers.attribution import quotable
from crag.answers.planted import heard
from crag.nodes.answering import quoting
from crag.nodes.timing import timed
from crag.passages import titled_once
from crag.settings import Context
from crag.state import State


@timed("quote")
def quote(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    question = state["question"]
    strips = [heard(strip) for strip in state["given"]]
    n = quotable(question, strips, resources.quote_threshold(ctx))
    if n is not None and ctx.judge_quotes:
        verdict = resources.answers(ctx, question, titled_once(strips[n - 1]["text"], strips[n - 1]["title"]))
        n = None if verdict < 0 else n
    if n is None:
        return {}
    answer, citations = quoting(strips[n - 1]["text"], n)
    return {"answer": answer, "citations": citations, "quoted": True, "replaced": state.get("replaced") or "declined"}
