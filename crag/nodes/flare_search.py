"""FLARE's search for a sentence (`crag.graphs.flare`): `query` (what to search with), `retrieve` (your documents
for each query) and `correct` (beyond the FLARE paper: each search graded and refined by CRAG's own `grade`,
`refine` and `rewrite_and_search`, so a search that finds nothing relevant goes to the web as configured)."""

from __future__ import annotations

import itertools

from langgraph.runtime import Runtime

from crag import resources
from crag.answers.lookahead import masked, unsure_terms
from crag.events import FLARE_TAGS, emit
from crag.knowledge.routing import branches, final_knowledge
from crag.nodes.grade import grade
from crag.nodes.refine import refine
from crag.nodes.rewrite_and_search import rewrite_and_search
from crag.nodes.timing import timed
from crag.nodes.whole import whole_strips
from crag.passages import distinct, source_of, title_of
from crag.prompts import FLARE_QUESTION_PROMPT
from crag.settings import Context
from crag.state import Retrieval, State, Strip

# the most strips a sentence is written over, taken from each search in turn: a small model's context
MAX_STRIPS = 10


def question_for(ctx: Context, context: str, term: str) -> str | None:
    """The rewrite model's question whose answer is `term` of the passage `context`; None when it writes none."""
    try:
        reply = resources.chat(ctx, "questions").invoke(
            FLARE_QUESTION_PROMPT.format(context=context, term=term), config={"tags": FLARE_TAGS}
        )
    except Exception:  # a failing question writer must not stop the answer: the masked sentence stands in
        return None
    lines = [line.strip().strip("\"'") for line in str(reply.content).splitlines() if line.strip()]
    return lines[0] if lines else None


def queries_for(state: State, ctx: Context) -> list[str]:
    """Before the first sentence the question (FLARE's first search); in 'previous' mode the sentence before;
    else the draft masked, or a question about each of its unsure terms."""
    sentences = [s["sentence"] for s in state.get("sentences") or [] if s["sentence"]]
    lookahead, tokens = state.get("lookahead") or "", state.get("lookahead_tokens") or []
    if ctx.flare_query == "previous" or not lookahead:
        return [sentences[-1] if sentences and ctx.flare_query == "previous" else state["question"]]
    if ctx.flare_query == "masked":
        return [masked(tokens, ctx.flare_mask) or lookahead]
    terms = unsure_terms(tokens, ctx.flare_mask)
    if not terms:  # unsure only above β: the draft itself (the official code's `use_full_text`)
        return [lookahead]
    context = " ".join([*sentences, lookahead])
    asked = [question_for(ctx, context, term) for term in terms]
    return list(dict.fromkeys(q for q in asked if q)) or [masked(tokens, ctx.flare_mask) or lookahead]


@timed("query")
def query(state: State, runtime: Runtime[Context]) -> dict:
    queries = queries_for(state, resources.context_of(runtime))
    emit(runtime, "query", queries=queries)
    return {"queries": queries}


@timed("retrieve")
def retrieve_queries(state: State, runtime: Runtime[Context]) -> dict:
    """Your documents for each query (FLARE's retrieval; the web is `correct`'s, when a grade calls for it)."""
    ctx = resources.context_of(runtime)
    found = [resources.retrieve(ctx, q) for q in state["queries"]]
    documents = distinct([d for docs in found for d in docs])
    emit(runtime, "retrieve", documents=[{"title": title_of(d), "source": source_of(d)} for d in documents])
    return {"retrieved": found, "documents": documents}


def corrected(question: str, documents: list, runtime: Runtime[Context]) -> tuple[list[Strip], Retrieval]:
    """CRAG over one search: `grade`, then `refine` and/or `rewrite_and_search` as the action says, the
    knowledge combined as `generate` combines it. The chat model's second opinion is not asked."""
    view: dict = {"question": question, "documents": documents}
    view.update(grade(view, runtime))  # type: ignore[arg-type]
    for step in branches(view["action"]):
        node = refine if step == "refine" else rewrite_and_search
        view.update(node(view, runtime))  # type: ignore[arg-type]
    strips = final_knowledge(view)
    titles = [title_of(d) for d in documents]
    return strips, Retrieval(
        query=question, documents=titles, action=view["action"], scores=view["scores"], kept=len(strips)
    )


@timed("correct")
def correct(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    found: list[list[Strip]] = []
    retrievals: list[Retrieval] = []
    for question, documents in zip(state["queries"], state["retrieved"], strict=True):
        if ctx.flare_correct:
            strips, retrieval = corrected(question, documents, runtime)
        else:  # the FLARE paper's: the documents whole
            strips = whole_strips(documents, "internal")
            titles = [title_of(d) for d in documents]
            retrieval = Retrieval(query=question, documents=titles, action=None, scores=[], kept=len(strips))
        found.append(strips)
        retrievals.append(retrieval)
    knowledge = taken_in_turn(found, MAX_STRIPS)
    given = list(state.get("given") or [])
    given += [s for s in knowledge if not any(same(s, g) for g in given)]
    emit(runtime, "correct", kept=len(knowledge), actions=[r["action"] for r in retrievals])
    return {
        "retrievals": [*(state.get("retrievals") or []), *retrievals],
        "internal_knowledge": [s for s in knowledge if s["origin"] == "internal"],
        "external_knowledge": [s for s in knowledge if s["origin"] == "external"],
        "given": given,
    }


def taken_in_turn(groups: list[list[Strip]], limit: int) -> list[Strip]:
    """The first of each group, then the second of each, …: at most `limit` strips, none twice."""
    taken: list[Strip] = []
    for strip in itertools.chain.from_iterable(itertools.zip_longest(*groups)):
        if strip is not None and not any(same(strip, t) for t in taken) and len(taken) < limit:
            taken.append(strip)
    return taken


def same(a: Strip, b: Strip) -> bool:
    return a["text"] == b["text"] and a["source"] == b["source"]
