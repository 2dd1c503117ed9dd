"""FLARE's search for a sentence (`crag.graphs.flare`): `query` (what to search with); then a branch per query,
CRAG's own steps over its search (beyond the FLARE paper: retrieve → grade → refine | rewrite_and_search, so a
search that finds nothing relevant goes to the web as configured) or its documents whole, which `keep` hands
back; `gather` combines the branches' knowledge for the sentence."""

from __future__ import annotations

import itertools

from langgraph.runtime import Runtime

from crag import resources
from crag.answers.lookahead import masked, unsure_terms
from crag.events import FLARE_TAGS, emit
from crag.knowledge.routing import final_knowledge
from crag.nodes.timing import timed
from crag.passages import distinct, title_of
from crag.prompts import FLARE_QUESTION_PROMPT
from crag.settings import Context
from crag.state import Retrieval, Search, State, Strip

# the most strips a sentence is written over, taken from each search in turn: a small model's context
MAX_STRIPS = 10


def question_for(ctx: Context, context: str, term: str) -> str | None:
    """The rewrite model's question whose answer is `term` of the passage `context`; None when it writes none."""
    try:
        prompt = FLARE_QUESTION_PROMPT.format(context=context, term=term)
        text, _ = resources.write(ctx, "questions", prompt, config={"tags": FLARE_TAGS})
    except Exception:  # a failing question writer must not stop the answer: the masked sentence stands in
        return None
    lines = [line.strip().strip("\"'") for line in text.splitlines() if line.strip()]
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


def keep(state: State) -> dict:
    """A branch's search handed back: the record of it, what it found and what it kept, as `generate` combines
    knowledge (no action: the documents whole, as `use_documents` read them)."""
    documents = state.get("documents") or []
    strips = final_knowledge(state)
    retrieval = Retrieval(
        query=state["question"],
        documents=[title_of(d) for d in documents],
        action=state.get("action"),
        scores=state.get("scores") or [],
        kept=len(strips),
    )
    return {"searches": [Search(n=state["query_n"], retrieval=retrieval, documents=documents, strips=strips)]}


@timed("gather")
def gather(state: State, runtime: Runtime[Context]) -> dict:
    """The sentence's searches combined: at most `MAX_STRIPS` strips taken from each in turn are what the next
    sentence is written over; every strip kept joins `given`, which the answer is cited against."""
    searches = state.get("searches") or []
    knowledge = taken_in_turn([s["strips"] for s in searches], MAX_STRIPS)
    retrievals = [s["retrieval"] for s in searches]
    given = list(state.get("given") or [])
    given += [s for s in knowledge if not any(same(s, g) for g in given)]
    emit(runtime, "gather", kept=len(knowledge), actions=[r["action"] for r in retrievals])
    return {
        "documents": distinct([d for s in searches for d in s["documents"]]),
        "retrievals": [*(state.get("retrievals") or []), *retrievals],
        "internal_knowledge": [s for s in knowledge if s["origin"] == "internal"],
        "external_knowledge": [s for s in knowledge if s["origin"] == "external"],
        "given": given,
        "searches": [],  # read: emptied for the next sentence's
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
