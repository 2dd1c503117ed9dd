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
    """What one candidate's branch is sent: the question and one passage, numbered from 1."""

    question: str
    n: int
    strip: Strip


def branches(state: State) -> list[Branch]:
    """A branch per passage of the final knowledge: Self-RAG's documents whole, Self-CRAG's kept strips by
    its action (`final_knowledge`)."""
    return [Branch(question=state["question"], n=n, strip=s) for n, s in enumerate(final_knowledge(state), 1)]


def _written(ctx: Context, branch: Branch) -> dict[str, Any]:
    strip = branch["strip"]
    return written(
        ctx, ctx.generate_prompt, [strip], branch["question"], format_knowledge([strip]), tags=CANDIDATE_TAGS
    )


def _candidate(
    runtime: Runtime[Context], branch: Branch, reply: dict[str, Any], relevant: float, support: list, usefulness: list
) -> dict:
    scored = Candidate(
        n=branch["n"],
        strip=branch["strip"],
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
    strip = branch["strip"]
    said = resources.critique(
        ctx, ["isrel", "issup", "isuse"], branch["question"], titled_once(strip["text"], strip["title"]), reply["draft"]
    )
    return _candidate(runtime, branch, reply, said["isrel"][0], said["issup"], said["isuse"])


@timed("candidate")
def candidate_by_evaluator(branch: Branch, runtime: Runtime[Context]) -> dict:
    """The answer over the branch's passage, judged by the evaluator (ISREL: its score as a probability) and
    the grounding check (ISSUP: whether the passage supports every sentence, some or none); no ISUSE."""
    ctx = resources.context_of(runtime)
    reply = _written(ctx, branch)
    strip = branch["strip"]
    document = passage(strip["text"], title=strip["title"], source=strip["source"])
    score = float(resources.evaluator(ctx).invoke({"question": branch["question"], "documents": [document]})[0])
    return _candidate(runtime, branch, reply, relevance_of(score), support_of(reply["citations"]), [])


def passages(state: State, runtime: Runtime[Context]) -> dict:
    """Where Self-CRAG's branches meet (Ambiguous runs both) before the candidates fan out: the knowledge they
    are written over, announced; the state is unchanged."""
    origins = [s["origin"] for s in final_knowledge(state)]
    emit(runtime, "passages", internal=origins.count("internal"), external=origins.count("external"))
    return {}
