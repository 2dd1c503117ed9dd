"""Self-Reasoning (Xia et al., AAAI 2025): before it answers, the reader judges whether its documents are
relevant, selects the sentences that are its evidence and analyses both; a node a step, each a turn of one
conversation (`reasoning`) that the next step's call sends again, so a local model reads the documents once.
Its documents are the system's knowledge (`final_knowledge`): RAG's documents whole, or CRAG's kept strips."""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime

from crag import resources
from crag.answers.evidence import verbatim_span
from crag.events import emit
from crag.knowledge.routing import final_knowledge
from crag.nodes.answering import checked
from crag.nodes.timing import timed
from crag.prompts import (
    DIRECT_ANSWER_PROMPT,
    EVIDENCE_PROMPT,
    NO_KNOWLEDGE_ANSWER,
    REASONING_FIRST_TURN,
    REASONING_SYSTEM,
    RELEVANCE_PROMPT,
    TRAJECTORY_PROMPT,
    UNSUPPORTED_ANSWER,
)
from crag.records import Evidence, Quote, Strip
from crag.settings import Context
from crag.state import State


def numbered(strips: list[Strip]) -> str:
    """The documents as the reader sees them, "[n] title" and the text below it (a quote of the text then
    does not take the title with it)."""
    return "\n\n".join(
        f"[{n}] {s['title']}\n{s['text']}" if s["title"] else f"[{n}] {s['text']}" for n, s in enumerate(strips, 1)
    )


def asking(state: State, instruction: str) -> tuple[list[dict[str, str]], dict]:
    """The next call's messages, the conversation so far and `instruction`, and the keys they set: the first
    turn also holds the documents and the question, and the documents are then the `knowledge` read."""
    so_far = state.get("reasoning") or []
    if so_far:
        return [*so_far, {"role": "user", "content": instruction}], {}
    documents = numbered(final_knowledge(state))
    first = REASONING_FIRST_TURN.format(documents=documents, question=state["question"], instruction=instruction)
    opening = [{"role": "system", "content": REASONING_SYSTEM}, {"role": "user", "content": first}]
    return opening, {"knowledge": documents}


def replied(messages: list[dict[str, str]], reply: str) -> list[dict[str, str]]:
    return [*messages, {"role": "assistant", "content": reply}]


@timed("relevance")
def relevance_aware(state: State, runtime: Runtime[Context]) -> dict:
    """Step 1, the relevance-aware process: are the documents relevant to the question, and why. The verdict is
    the reader's P(yes) (from its first reply token, when local); its reply is the reason."""
    if not final_knowledge(state):
        return {"relevance": -1.0, "relevance_reason": "there are no documents to judge"}
    messages, opened = asking(state, RELEVANCE_PROMPT)
    score, reply = resources.relevance_verdict(resources.context_of(runtime), messages)
    score = round(score, 4)
    emit(runtime, "relevance_aware", relevance=score, reason=reply)
    return {**opened, "reasoning": replied(messages, reply), "relevance": score, "relevance_reason": reply}


def verified(quotes: list[Quote], strips: list[Strip]) -> tuple[list[Evidence], list[Quote]]:
    """The quotes whose document (by its number) says them word for word, each once and spelled as it says
    them; and the quotes no document of that number says (invented, altered or misnumbered)."""
    kept: list[Evidence] = []
    dropped: list[Quote] = []
    for quote in quotes:
        number = quote["document"]
        span = verbatim_span(quote["sentence"], strips[number - 1]["text"]) if 0 < number <= len(strips) else None
        if span is None:
            dropped.append(quote)
        elif all((e["number"], e["start"]) != (number, span[0]) for e in kept):
            sentence = strips[number - 1]["text"][span[0] : span[1]]
            kept.append(Evidence(number=number, sentence=sentence, reason=quote["reason"], start=span[0], end=span[1]))
    return kept, dropped


@timed("evidence")
def evidence_aware(state: State, runtime: Runtime[Context]) -> dict:
    """Step 2, the evidence-aware selective process: the key sentences of the relevant documents, each with the
    reason it is selected (structured output). One its document does not say word for word is dropped and
    counted: the answer is cited from these sentences alone."""
    strips = final_knowledge(state)
    if not strips:
        return {}
    messages, opened = asking(state, EVIDENCE_PROMPT)
    quotes, reply = resources.evidence_selection(resources.context_of(runtime), messages)
    kept, dropped = verified(quotes, strips)
    emit(runtime, "evidence_aware", kept=len(kept), dropped=len(dropped))
    return {**opened, "reasoning": replied(messages, reply), "evidence": kept, "evidence_dropped": dropped}


def in_document(evidence: Evidence, strip: Strip, documents: list) -> tuple[int, int]:
    """The sentence's span in its document's text. A strip whose text is its span of the document, character for
    character, adds its start; a refined strip's text has its whitespace collapsed, so the sentence is found in the
    retrieved document's own text; a web strip's paragraph is not kept, so there the strip's own span stands."""
    start, end = strip["start"], strip["end"]
    if end - start == len(strip["text"]):
        return start + evidence["start"], start + evidence["end"]
    if strip["origin"] == "internal" and strip["doc"] < len(documents):
        found = verbatim_span(evidence["sentence"], documents[strip["doc"]].page_content[start:end])
        if found is not None:
            return start + found[0], start + found[1]
    return start, end


def evidence_strips(evidence: list[Evidence], strips: list[Strip], documents: list) -> list[Strip]:
    """Each kept sentence as a strip of its document: the document's title, source and score, and the sentence's
    span in the document (`in_document`)."""
    cut = []
    for e in evidence:
        strip = strips[e["number"] - 1]
        start, end = in_document(e, strip, documents)
        cut.append(Strip(**{**strip, "text": e["sentence"], "start": start, "end": end}))
    return cut


def _answered(state: State, ctx: Context, reply: str) -> dict:
    """The answer checked as every system's is, cited from the kept evidence (without the evidence step, from
    the documents)."""
    strips = final_knowledge(state)
    cite = evidence_strips(state.get("evidence") or [], strips, state.get("documents") or []) or strips
    return {"given": cite, **checked(ctx, reply, strips, state["question"], cite)}


@timed("trajectory")
def trajectory_analysis(state: State, runtime: Runtime[Context]) -> dict:
    """Step 3, the trajectory analysis: a short analysis of the steps before, then the answer (structured
    output; a reply that does not parse gives no answer, withheld as empty)."""
    ctx = resources.context_of(runtime)
    messages, opened = asking(state, TRAJECTORY_PROMPT)
    analysed, reply = resources.trajectory_analysis(ctx, messages)
    analysis, answer = (analysed["analysis"], analysed["answer"]) if analysed else ("", "")
    emit(runtime, "trajectory_analysis", analysis=analysis)
    return {**opened, "reasoning": replied(messages, reply), "analysis": analysis, **_answered(state, ctx, answer)}


@timed("answer")
def direct_answer(state: State, runtime: Runtime[Context]) -> dict:
    """Without the trajectory analysis (its ablation): the answer alone, as the conversation's next turn."""
    ctx = resources.context_of(runtime)
    messages, opened = asking(state, DIRECT_ANSWER_PROMPT)
    reply = resources.reasoned_answer(ctx, messages)
    return {**opened, "reasoning": replied(messages, reply), **_answered(state, ctx, reply)}


def decline(state: State) -> dict:
    """No answer is asked for: the reader found nothing relevant (step 1), or its documents say none of the
    sentences it selected (step 2), so nothing it could say would be cited."""
    judged = state.get("relevance")
    nothing_relevant = not final_knowledge(state) or (judged is not None and judged <= 0)
    return {"answer": NO_KNOWLEDGE_ANSWER if nothing_relevant else UNSUPPORTED_ANSWER}


def after_relevance(state: State) -> Literal["relevant", "nothing relevant"]:
    return "relevant" if (state.get("relevance") or 0.0) > 0 else "nothing relevant"


def after_evidence(state: State) -> Literal["evidence kept", "none verbatim"]:
    return "evidence kept" if state.get("evidence") else "none verbatim"
