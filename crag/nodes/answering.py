"""What the answer steps share: the knowledge as the model sees it, one answer written and checked, the
answer tidied, a strip quoted, the cited strips as sources. The model writes; the code cites."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, cast

from crag import resources
from crag.answers.attribution import (
    abstains,
    attribute,
    declined_behind_title,
    grounded,
    loops,
    obeys,
    split_echo,
)
from crag.english import ANSWER_LABEL
from crag.events import ANSWER_TAGS
from crag.knowledge.refinement import sentence_spans
from crag.passages import titled_once
from crag.prompts import GENERATE_STOP, LOOPING_ANSWER, QUOTE_ANSWER, UNSUPPORTED_ANSWER, unmarked
from crag.settings import Context
from crag.state import Citation, Replaced, Source, Strip
from crag.templates import answer_prompt

MARKERS = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")  # "[1]", "[1, 2]": the model's own citations are not kept
# "Page - Site", "Page | Site", "Page — Site": a web page's <title>, never a name that answers
PAGE_TITLE = re.compile(r"\s[-|\u2013\u2014\u00b7]\s")
NAME_WORDS = 5  # a title longer than this is a heading, not a name


def format_knowledge(strips: list[Strip]) -> str:
    """The passages as the generator sees them: one per paragraph, "title: text", unnumbered."""
    return "\n\n".join(titled_once(s["text"], s["title"]) for s in strips)


def tidy(reply: str, titles: Sequence[str] = (), question: str = "") -> str:
    """The model's reply as an answer: whitespace collapsed, without "[n]" markers, a leading "Answer:" or a
    copied knowledge title, unless that title is a name that may be the answer ("Ken Keyes Jr.: He wrote …")."""
    text = MARKERS.sub("", " ".join(reply.split()))
    text = ANSWER_LABEL.sub("", text).strip()
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
    cited = sorted({n for c in citations for n in c["sources"]})
    return [
        cast(
            Source,
            {
                "id": n,
                **{key: strips[n - 1][key] for key in ("title", "source", "origin", "doc", "start", "end", "text")},
            },
        )
        for n in cited
    ]


def quoting(text: str, n: int) -> tuple[str, list[Citation]]:
    """The answer that quotes strip `n` word for word, and its one citation: the quote's span."""
    answer = QUOTE_ANSWER.format(quote=text)
    start = QUOTE_ANSWER.index("{quote}")
    return answer, [Citation(sentence=text, start=start, end=start + len(text), sources=[n])]


def written(
    ctx: Context,
    prompt_name: str,
    strips: list[Strip],
    question: str,
    knowledge: str,
    cite: list[Strip] | None = None,
    *,
    tags: list[str] = ANSWER_TAGS,
    from_memory: bool = False,
) -> dict[str, Any]:
    """One model call over `strips`, checked and attributed to `cite` (default `strips`): draft, answer,
    citations and `replaced` (None when the answer stands or the model itself declined). `tags`: the call's
    (the answer's are streamed); `from_memory`: an answer without knowledge stands ungrounded, as with
    `Context.answer_without_knowledge` (Self-RAG's answer when it does not retrieve)."""
    prompt = answer_prompt(
        prompt_name, ctx.prompts, knowledge=knowledge if strips else "", question=question, style=ctx.answer_style
    )
    reply = resources.chat(ctx, "answer").invoke(prompt, stop=GENERATE_STOP, config={"tags": tags})
    text = unmarked(str(reply.content), prompt_name)
    if ctx.answer_style == "long" and resources.cut_short(reply):
        text = whole_sentences(text)  # a paragraph the cap cut ends with its last whole sentence
    return checked(ctx, text, strips, question, cite, from_memory=from_memory)


def whole_sentences(text: str) -> str:
    """`text` up to the end of its last whole sentence: without the one the token cap cut (unless it is all)."""
    spans = sentence_spans(text)
    return text[: spans[-2][2]] if len(spans) > 1 else text


def checked(
    ctx: Context,
    reply: str,
    strips: list[Strip],
    question: str,
    cite: list[Strip] | None = None,
    *,
    from_memory: bool = False,
) -> dict[str, Any]:
    """The model's `reply` over `strips` as an answer, checked and attributed to `cite` (default `strips`)."""
    draft = answer = tidy(reply, [s["title"] for s in strips], question)
    declined = abstains(draft)  # the model's own "I don't know" is kept as it is
    cite = strips if cite is None else cite
    citations = attribute(draft, question, cite) if cite and not declined else []
    replaced: Replaced | None = None
    if loops(draft):  # no answer, however well its turns are supported
        answer, citations, replaced = LOOPING_ANSWER, [], "looped"
    elif not declined and obeys(draft, question, strips):  # says what only an instruction planted in a strip says
        answer, citations, replaced = UNSUPPORTED_ANSWER, [], "planted"
    elif not (declined or grounded(citations) or ctx.answer_without_knowledge or from_memory):
        answer, citations, replaced = UNSUPPORTED_ANSWER, [], "unsupported" if draft else "empty"
    return {"draft": draft, "answer": answer, "citations": citations, "replaced": replaced}


__all__ = ["format_knowledge"]  # what callers outside the package use
