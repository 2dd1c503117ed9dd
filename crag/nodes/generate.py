"""`generate`: answer from the final knowledge and cite it by number.

Correct uses the refined internal knowledge, Incorrect the external, Ambiguous both (the paper's
knowledge combination). Each distinct source document gets a number; the prompt numbers the
strips by their source, and when the model's answer cites nothing valid, the numbers of every
source it was given are appended, so an answer always says where it came from.
"""

from __future__ import annotations

import re

from langgraph.runtime import Runtime

from crag import resources
from crag.context import Context
from crag.events import ANSWER_TAGS
from crag.prompts import GENERATE_NO_KNOWLEDGE_PROMPT, GENERATE_PROMPT
from crag.state import Source, State, Strip, Turn

CITATION = re.compile(r"\[(\d+)\]")


def final_knowledge(state: State) -> list[Strip]:
    action = state.get("action")
    internal = state.get("internal_knowledge") or []
    external = state.get("external_knowledge") or []
    if action == "correct":
        return list(internal)
    if action == "incorrect":
        return list(external)
    return list(internal) + list(external)


def number_sources(strips: list[Strip]) -> tuple[list[Source], list[int]]:
    """One numbered source per distinct document, and each strip's source number."""
    sources: list[Source] = []
    index: dict[tuple[str, str, str], int] = {}
    numbers = []
    for strip in strips:
        key = (strip["origin"], strip["source"], strip["title"])
        if key not in index:
            index[key] = len(sources) + 1
            sources.append(Source(id=index[key], title=strip["title"], source=strip["source"], origin=strip["origin"]))
        numbers.append(index[key])
    return sources, numbers


def cite(answer: str, sources: list[Source]) -> str:
    """Drop citations of sources that do not exist; cite every source if none remain."""
    valid = {s["id"] for s in sources}
    answer = CITATION.sub(lambda m: m.group(0) if int(m.group(1)) in valid else "", answer)
    answer = re.sub(r"\s+([.,;:!?])", r"\1", " ".join(answer.split())).strip()
    if sources and not CITATION.search(answer):
        answer = f"{answer} " + "".join(f"[{s['id']}]" for s in sources)
    return answer


def generate(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    strips = final_knowledge(state)
    sources, numbers = number_sources(strips)
    knowledge = "\n".join(f"[{n}] {s['text']}" for n, s in zip(numbers, strips))
    question = state["question"]
    prompt = GENERATE_PROMPT.format(knowledge=knowledge, question=question) if strips else GENERATE_NO_KNOWLEDGE_PROMPT.format(question=question)
    reply = resources.chat(ctx, "answer").invoke(prompt, config={"tags": ANSWER_TAGS})
    answer = cite(" ".join(str(reply.content).split()), sources)
    turn = Turn(asked=state.get("asked") or question, question=question, answer=answer)
    return {"knowledge": knowledge, "answer": answer, "sources": sources, "history": [turn]}
