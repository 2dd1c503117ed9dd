"""`generate`: answer from the final knowledge, then link each answer sentence to the strips that
support it, or say plainly that the sources hold nothing that answers the question.

Correct uses the refined internal knowledge, Incorrect the external, Ambiguous both (the paper's
knowledge combination). The knowledge is given strip by strip, unnumbered (a small model copies "[1]"
where the fact belongs); the citations number the strips, so one points at a passage a reader can check,
not at a whole file. The model only writes the answer; `crag.answers.attribution` does
the citing, and an answer none of whose sentences any strip supports is not grounded. Ungrounded
answers are withheld (replaced by `UNSUPPORTED_ANSWER`, the model's words kept in `draft`) unless
`answer_without_knowledge` is set; with no knowledge at all the model is not even asked. When the model
itself says it does not know, it is shown the next strips of refinement's ranking once
(`Context.further_strips`), and that answer is kept if it stands: on the documentation set the next five
strips held the answer for 7 of the 12 questions whose kept strips missed one that the retrieved
documents held (docs/reports/2026-11-29-reading-further.md).
When the model's answer is withheld or it declines, but a kept strip about the question's subject scores as
relevant (`Context.quote_threshold`), the answer quotes that strip instead (`quoted`). When no strip can
be quoted either, the model is asked once more with `Context.retry_prompt` (the paper's prompt, which
offers no way out) and that answer is judged as the first was: the compact prompt's "I don't know"
declined answers that the strips held (docs/reports/2026-11-28-ask-again.md). A supported answer
stands as the model wrote it, whichever kept strip supports it: with the 1.5B reader, replacing answers that
rested on a strip judged less relevant than the best cost 5.2 points on the documentation set
(docs/reports/2026-11-27-local-models.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langgraph.runtime import Runtime

from crag import resources
from crag.answers.attribution import (
    abstains,
    attribute,
    declined_behind_title,
    grounded,
    loops,
    quotable,
    split_echo,
)
from crag.events import ANSWER_TAGS, emit
from crag.knowledge.routing import final_knowledge, unread_knowledge
from crag.nodes.timing import timed
from crag.passages import titled_once
from crag.prompts import (
    GENERATE_NO_KNOWLEDGE_PROMPT,
    GENERATE_STOP,
    LOOPING_ANSWER,
    MARKED_PROMPTS,
    NO_KNOWLEDGE_ANSWER,
    QUOTE_ANSWER,
    UNSUPPORTED_ANSWER,
    generation_prompt,
    unmarked,
)
from crag.settings import Context
from crag.state import Citation, Replaced, Source, State, Strip, Turn

MARKERS = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")  # "[1]", "[1, 2]": the model's own citations are not kept


def format_knowledge(strips: list[Strip]) -> str:
    """The passages as the generator sees them: one per paragraph, "title: text", unnumbered (web
    paragraphs already start with their title, `crag.search.fetch`)."""
    return "\n\n".join(titled_once(s["text"], s["title"]) for s in strips)


# "Page - Site", "Page | Site", "Page — Site": a web page's <title>, never a name that answers
PAGE_TITLE = re.compile(r"\s[-|\u2013\u2014\u00b7]\s")
NAME_WORDS = 5  # a title longer than this is a heading, not a name


def tidy(reply: str, titles: Sequence[str] = (), question: str = "") -> str:
    """The model's reply as an answer: whitespace collapsed, its own "[n]" markers, a leading
    "Answer:" and a leading copy of a knowledge title dropped ("Django Reinhardt: Django Reinhardt was
    …"). A copied title is kept when it may be the answer: a name (a few words, not a page title of
    the "Page - Site" form) that neither the rest nor the question names ("Ken Keyes Jr.: He wrote …"
    for "Who is the author of Facing the Future?"). The Rust book's pages gave answers that began
    "Transfer Data Between Threads with Message Passing - The Rust Programming Language: …"."""
    text = MARKERS.sub("", " ".join(reply.split()))
    text = re.sub(r"^(answer|a)\s*:\s*", "", text, flags=re.IGNORECASE).strip()
    declined = declined_behind_title(text, titles)
    if declined:
        return declined
    title, rest = split_echo(text, titles)
    if not (title and rest):
        return text
    named = title.lower() in rest.lower() or title.lower() in question.lower()
    a_name = len(title.split()) <= NAME_WORDS and not PAGE_TITLE.search(title)
    return rest if named or not a_name else text


def sources_of(citations: list, strips: list[Strip]) -> list[Source]:
    """The cited strips, by number, without their refinement score."""
    cited = sorted({n for c in citations for n in c["sources"]})
    return [
        Source(
            id=n, **{key: strips[n - 1][key] for key in ("title", "source", "origin", "doc", "start", "end", "text")}
        )
        for n in cited
    ]


def quoting(text: str, n: int) -> tuple[str, list[Citation]]:
    """The answer that quotes strip `n` word for word, and its one citation: the quote's span."""
    answer = QUOTE_ANSWER.format(quote=text)
    start = QUOTE_ANSWER.index("{quote}")
    return answer, [Citation(sentence=text, start=start, end=start + len(text), sources=[n])]


def _answer(
    ctx: Context, prompt_name: str, strips: list[Strip], question: str, knowledge: str, cite: list[Strip] | None = None
):
    """One model call over `strips` and the rules on its reply, its sentences attributed to the strips of
    `cite` (default `strips`): (draft, answer, citations, why it was replaced or None)."""
    prompt = (
        generation_prompt(prompt_name, knowledge=knowledge, question=question)
        if strips
        else GENERATE_NO_KNOWLEDGE_PROMPT.format(question=question)
    )
    reply = resources.chat(ctx, "answer").invoke(prompt, stop=GENERATE_STOP, config={"tags": ANSWER_TAGS})
    draft = answer = tidy(unmarked(str(reply.content), prompt_name), [s["title"] for s in strips], question)
    declined = abstains(draft)  # the model's own "I don't know" is kept as it is
    cite = strips if cite is None else cite
    citations = attribute(draft, question, cite) if cite and not declined else []
    replaced: Replaced | None = None
    if loops(draft):  # no answer, however well its turns are supported
        answer, citations, replaced = LOOPING_ANSWER, [], "looped"
    elif not (declined or grounded(citations) or ctx.answer_without_knowledge):
        answer, citations, replaced = UNSUPPORTED_ANSWER, [], "unsupported" if draft else "empty"
    return draft, answer, citations, replaced


@timed("generate")
def generate(state: State, runtime: Runtime[Context]) -> dict:
    ctx = resources.context_of(runtime)
    strips = final_knowledge(state)
    question = state["question"]
    knowledge = format_knowledge(strips)
    replaced: Replaced | None = None  # why the model's answer does not stand, when it does not
    asked_again, first_draft = False, ""  # and the first prompt's draft, when it was
    if not strips and not ctx.answer_without_knowledge:
        draft, answer, citations = "", NO_KNOWLEDGE_ANSWER, []
    else:
        draft, answer, citations, replaced = _answer(ctx, ctx.generate_prompt, strips, question, knowledge)
    # the model said it does not know over the kept strips: once, the next-best strips of the retrieved
    # documents, whose answer stands if the rules let it (numbered after the kept ones, which it may cite too)
    further = unread_knowledge(state) if strips and abstains(draft) else []
    further_draft, read_further = "", False
    if further:
        emit(runtime, "generate", further=len(further), first_draft=draft)
        more = format_knowledge(further)
        given = strips + further
        further_draft, further_answer, further_citations, why = _answer(
            ctx, ctx.generate_prompt, further, question, more, cite=given
        )
        if not abstains(further_answer):
            first_draft, read_further, strips, knowledge = draft, True, given, f"{knowledge}\n\n{more}"
            draft, answer, citations, replaced = further_draft, further_answer, further_citations, why
    # the best strip about the subject that the evaluator calls relevant, quoted when the model
    # declined or was withheld (None when no strip is quotable)
    quote = quotable(question, strips, resources.quote_threshold(ctx)) if strips and abstains(answer) else None
    if quote is not None and ctx.judge_quotes:  # shown only when the reader judges that it answers
        verdict = resources.answers(ctx, question, titled_once(strips[quote - 1]["text"], strips[quote - 1]["title"]))
        quote = None if verdict is not None and verdict < 0 else quote
    # knowledge was found, the model declined or its answer does not stand, and no strip can be quoted
    # instead: once more with a prompt that has no way out, the grounding check judging that answer as
    # it judged the first (asked before a quote, the second answers replaced right quotes with wrong ones)
    retry = ctx.retry_prompt
    # never an unmarked second ask after a datamarked first one: `marked` is chosen against planted
    # instructions, and the paper's prompt over RAG's injected documents obeyed 17 of 18 of them
    unmarking = ctx.generate_prompt in MARKED_PROMPTS and retry not in MARKED_PROMPTS
    if quote is None and strips and abstains(answer) and retry and retry != ctx.generate_prompt and not unmarking:
        asked_again, first_draft = True, draft
        emit(runtime, "generate", retry_prompt=retry, first_draft=first_draft)
        draft, answer, citations, replaced = _answer(ctx, retry, strips, question, knowledge)
    if quote is not None:
        answer, citations = quoting(strips[quote - 1]["text"], quote)
        replaced = replaced or "declined"
    turn = Turn(asked=state.get("asked") or question, question=question, answer=answer)
    return {
        "knowledge": knowledge,
        "draft": draft,
        "answer": answer,
        "quoted": quote is not None,
        "further_draft": further_draft,
        "read_further": read_further,
        "asked_again": asked_again,
        "first_draft": first_draft,
        "replaced": replaced,
        "grounded": grounded(citations),
        "citations": citations,
        "sources": sources_of(citations, strips),
        "history": [turn],
    }
