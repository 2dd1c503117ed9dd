"""FLARE's writing steps (`crag.graphs.flare`): `draft_sentence` (the look-ahead: the model's next sentence over
the knowledge found last, each token with its probability), `accept_sentence` (a sure draft joins the answer),
`rewrite_sentence` (an unsure one is written again over what its search found) and `cite_answer` (the whole
answer checked and cited once it ends). The answer grows in `answer` a sentence at a time; the edges after each
step are here too."""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime

from crag import resources
from crag.answers.lookahead import confidence, sentence_end, unsure
from crag.events import emit
from crag.nodes.answering import checked, format_knowledge
from crag.nodes.timing import timed
from crag.prompts import FLARE_NO_KNOWLEDGE_PROMPT, FLARE_PROMPT, flare_prompt
from crag.settings import Context
from crag.state import Sentence, State


def messages_for(state: State, style: str = "short") -> list[dict[str, str]]:
    """The prompt a sentence is written with: the question over the knowledge the last search kept."""
    strips = [*(state.get("internal_knowledge") or []), *(state.get("external_knowledge") or [])]
    if not strips:
        prompt = flare_prompt(FLARE_NO_KNOWLEDGE_PROMPT, style).format(question=state["question"])
        return [{"role": "user", "content": prompt}]
    prompt = flare_prompt(FLARE_PROMPT, style).format(knowledge=format_knowledge(strips), question=state["question"])
    return [{"role": "user", "content": prompt}]


def written(state: State, ctx: Context) -> resources.Decoded:
    """The model's next sentence after the answer so far, each token with its probability."""
    return resources.with_probabilities(
        ctx, messages_for(state, ctx.answer_style), prefix=state.get("answer") or "", cut=sentence_end
    )


@timed("draft_sentence")
def draft_sentence(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    draft = written(state, ctx)
    low = unsure(draft.tokens, ctx.flare_threshold)
    emit(
        runtime,
        "draft_sentence",
        n=len(state.get("sentences") or []) + 1,
        draft=draft.text.strip(),
        confidence=confidence(draft.tokens),
        unsure=[t["text"] for t in low],
    )
    return {"lookahead": draft.text.strip(), "lookahead_tokens": draft.tokens, "lookahead_finish": draft.finish}


def added(state: State, runtime: Runtime[Context], sentence: str, *, rewritten: bool, tokens: int) -> dict:
    """The state update that adds `sentence` to the answer with the record of how it was written; the draft and
    the searches for it are cleared for the next sentence (the record keeps them)."""
    sentences = state.get("sentences") or []
    draft_tokens = state.get("lookahead_tokens") or []
    record = Sentence(
        n=len(sentences) + 1,
        lookahead=state.get("lookahead") or "",
        confidence=confidence(draft_tokens),
        unsure=unsure(draft_tokens, resources.context_of(runtime).flare_threshold),
        queries=[r["query"] for r in state.get("retrievals") or []],
        retrievals=list(state.get("retrievals") or []),
        sentence=sentence,
        rewritten=rewritten,
        tokens=tokens,
    )
    answer = " ".join(part for part in (state.get("answer") or "", sentence) if part)
    emit(runtime, "sentence", n=record["n"], sentence=sentence, rewritten=rewritten)
    return {
        "sentences": [*sentences, record],
        "answer": answer,
        "lookahead": "",
        "lookahead_tokens": [],
        "queries": [],
        "retrievals": [],
    }


@timed("accept_sentence")
def accept_sentence(state: State, runtime: Runtime[Context]) -> dict:
    return added(state, runtime, state["lookahead"], rewritten=False, tokens=len(state.get("lookahead_tokens") or []))


@timed("rewrite_sentence")
def rewrite_sentence(state: State, runtime: Runtime[Context]) -> dict:
    again = written(state, resources.context_of(runtime))
    update = added(state, runtime, again.text.strip(), rewritten=True, tokens=len(again.tokens))
    return {**update, "lookahead_finish": again.finish}


@timed("cite_answer")
def cite_answer(state: State, runtime: Runtime[Context]) -> dict:
    """The answer checked and attributed to every strip a search kept; it stands ungrounded, as an answer from
    the model's memory does (FLARE writes from both), unless it loops or is empty."""
    ctx = resources.context_of(runtime)
    answer, given = state.get("answer") or "", state.get("given") or []
    result = checked(ctx, answer, given, state["question"], from_memory=bool(answer.strip()))
    return {**result, "knowledge": format_knowledge(given)}


def after_draft(state: State, runtime: Runtime[Context]) -> Literal["answer ended", "unsure: search", "sure"]:
    """A search when a token of the draft is below θ (never in 'previous' mode: the search came before it)."""
    ctx = resources.context_of(runtime)
    if not state.get("lookahead"):
        return "answer ended"
    if ctx.flare_query != "previous" and unsure(state.get("lookahead_tokens") or [], ctx.flare_threshold):
        return "unsure: search"
    return "sure"


def after_sentence(
    state: State, runtime: Runtime[Context]
) -> Literal["next sentence", "search before the next", "answer ended"]:
    """The answer ends with the model's reply, an empty or repeated sentence, `flare_sentences` sentences or
    `Context.answer_tokens` tokens; in 'previous' mode each next sentence is searched for first."""
    ctx = resources.context_of(runtime)
    sentences = state.get("sentences") or []
    last = sentences[-1]["sentence"] if sentences else ""
    if (
        state.get("lookahead_finish") == "stop"
        or not last
        or last in (s["sentence"] for s in sentences[:-1])
        or len(sentences) >= ctx.flare_sentences
        or sum(s["tokens"] for s in sentences) >= ctx.answer_tokens
    ):
        return "answer ended"
    return "search before the next" if ctx.flare_query == "previous" else "next sentence"


def after_search(state: State) -> Literal["write it again", "draft the next sentence"]:
    """A draft not yet in the answer was unsure: it is written again over what was found. Without one (before
    the first sentence, or in 'previous' mode) the next sentence is drafted over it."""
    return "write it again" if state.get("lookahead") else "draft the next sentence"
