"""Self-RAG's candidates: one answer per passage, written over that passage alone (a branch each, sent by the
graph with LangGraph's `Send`), and the critiques that score it (`crag.answers.critiques`): the reader's ISREL,
ISSUP and ISUSE read from its first-token probabilities (`candidate`), or the retrieval evaluator's score and
the grounding check in their place, without asking the reader (`candidate_by_evaluator`)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from crag import resources
from crag.answers.critiques import relevance_of, segment_score, support_of
from crag.events import CANDIDATE_TAGS, emit
from crag.knowledge.routing import final_knowledge
from crag.nodes.answering import format_knowledge, written
from crag.nodes.timing import timed
from crag.passages import passage, titled_once
from crag.settings import Context
from crag.state import Candidate, State, Strip


class Branch(TypedDict):
    """What one candidate's branch is sent: the question and one passage (its strips), numbered from 1."""

    question: str
    n: int
    strips: list[Strip]


def branches(state: State) -> list[Branch]:
    """Self-RAG: a branch per document of the final knowledge, whole."""
    return [Branch(question=state["question"], n=n, strips=[s]) for n, s in enumerate(final_knowledge(state), 1)]


def knowledge_sets(state: State) -> list[Branch]:
    """Self-CRAG as the CRAG authors built it (their `data_process.py`): a branch per knowledge set, whatever
    the action: the kept strips of your documents (Correct's), the web's (Incorrect's) and both (Ambiguous's);
    an empty set, or one the same as another, is left out."""
    internal, external = state.get("internal_knowledge") or [], state.get("external_knowledge") or []
    sets = [s for s in (internal, external, internal + external) if s]
    distinct = [s for i, s in enumerate(sets) if s not in sets[:i]]
    return [Branch(question=state["question"], n=n, strips=list(s)) for n, s in enumerate(distinct, 1)]


def _text(strips: list[Strip]) -> str:
    return "\n\n".join(titled_once(s["text"], s["title"]) for s in strips)


def _written(ctx: Context, branch: Branch) -> dict[str, Any]:
    strips = branch["strips"]
    return written(ctx, ctx.generate_prompt, strips, branch["question"], format_knowledge(strips), tags=CANDIDATE_TAGS)


def _candidate(
    runtime: Runtime[Context], branch: Branch, reply: dict[str, Any], relevant: float, support: list, usefulness: list
) -> dict:
    scored = Candidate(
        n=branch["n"],
        strips=branch["strips"],
        draft=reply["draft"],
        answer=reply["answer"],
        citations=reply["citations"],
        replaced=reply["replaced"],
        relevant=round(relevant, 4),
        support=[round(p, 4) for p in support],
        usefulness=[round(p, 4) for p in usefulness],
        score=round(segment_score(relevant, support, usefulness), 4),
    )
    emit(runtime, "candidate", n=scored["n"], draft=scored["draft"], score=scored["score"])
    return {"candidates": [scored]}


@timed("candidate")
def candidate(branch: Branch, runtime: Runtime[Context]) -> dict:
    """The answer over the branch's passage, then the reader's critiques of it, in one context."""
    ctx = resources.context_of(runtime)
    reply = _written(ctx, branch)
    said = resources.critique(
        ctx, ["isrel", "issup", "isuse"], branch["question"], _text(branch["strips"]), reply["draft"]
    )
    return _candidate(runtime, branch, reply, said["isrel"][0], said["issup"], said["isuse"])


@timed("candidate")
def candidate_by_evaluator(branch: Branch, runtime: Runtime[Context]) -> dict:
    """The answer over the branch's passage, judged by the evaluator (ISREL: its score as a probability) and
    the grounding check (ISSUP: whether the passage supports every sentence, some or none); no ISUSE."""
    ctx = resources.context_of(runtime)
    reply = _written(ctx, branch)
    strips, first = branch["strips"], branch["strips"][0]
    text = first["text"] if len(strips) == 1 else _text(strips)  # one strip: its title as the evaluator reads titles
    document = passage(text, title=first["title"], source=first["source"])
    score = float(resources.evaluator(ctx).invoke({"question": branch["question"], "documents": [document]})[0])
    return _candidate(runtime, branch, reply, relevance_of(score), support_of(reply["citations"]), [])


def passages(state: State, runtime: Runtime[Context]) -> dict:
    """Where Self-CRAG's two branches meet before the candidates fan out: the knowledge sets they are written
    over, announced; the state is unchanged."""
    internal, external = state.get("internal_knowledge") or [], state.get("external_knowledge") or []
    emit(runtime, "passages", internal=len(internal), external=len(external))
    return {}
