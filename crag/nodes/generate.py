"""`generate`: the reader's first answer over the final knowledge, the paper's knowledge combination (Correct:
the refined internal knowledge; Incorrect: the external; Ambiguous: both). With no knowledge at all the model
is not asked, and the answer says the sources hold nothing relevant. What follows an answer that does not
stand (reading further, a quote, asking again) is in the graph's edges (`crag.nodes.answer_path`)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.knowledge.routing import final_knowledge
from crag.nodes.answering import format_knowledge, written
from crag.nodes.timing import timed
from crag.prompts import NO_KNOWLEDGE_ANSWER
from crag.settings import Context
from crag.state import State


@timed("generate")
def generate(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    strips = final_knowledge(state)
    knowledge = format_knowledge(strips)
    if not strips and not ctx.answer_without_knowledge:
        return {"given": [], "knowledge": knowledge, "answer": NO_KNOWLEDGE_ANSWER}
    return {
        "given": strips,
        "knowledge": knowledge,
        **written(ctx, ctx.generate_prompt, strips, state["question"], knowledge),
    }
