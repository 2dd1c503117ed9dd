"""`Context` settings turned into the models and stores the nodes use (cached, loaded on first use).
The nodes' one way to the backends (an import-linter contract), so a node can be tested with fakes."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel

from crag.evaluator.runnable import RetrievalEvaluator
from crag.events import REASONING_TAGS
from crag.models.chat import LocalChatModel, chat_model
from crag.models.embeddings import shared_embeddings
from crag.models.judge import JUDGE_TOKENS, decoded
from crag.models.judge import answers as chat_answers
from crag.models.judge import choose as chat_choose
from crag.models.judge import critique as chat_critique
from crag.models.judge import grades as chat_model_grades
from crag.models.judge import relevance as chat_relevance
from crag.models.providers import cut_short as cut_short  # re-exported: a node checks its replies with it
from crag.models.reasoning import Analysis, Selection, structured, verdict
from crag.models.structured import PassageReply, QuestionReply, RequeryReply, SearchQueryReply, written
from crag.models.token_probs import Cut, Decoded
from crag.passages import distinct, title_of
from crag.prompts import CRITIQUES, GENERATE_STOP, critique_messages
from crag.records import Quote
from crag.search.fetch import cap_paragraphs, fetch_all
from crag.search.hybrid import filtered_search
from crag.search.store import OVERFETCH, open_existing
from crag.search.store import retrieve as search_store
from crag.search.user_web import is_user_backend, search_custom
from crag.search.web import WebSearchError as WebSearchError  # re-exported: nodes catch it from here
from crag.search.web import prefer_wikipedia, search_web
from crag.search.wikipedia import WikipediaSearch
from crag.settings import Context
from crag.templates import filled, replaced
from crag.thresholds import PRESETS, Thresholds

if TYPE_CHECKING:
    from langchain_chroma import Chroma


def context_of(runtime: Any) -> Context:
    """The run's context; LangGraph passes None when the caller gave none."""
    context = getattr(runtime, "context", None)
    return context if context is not None else Context()


def check(ctx: Context) -> None:
    """Load the chat models and the evaluator a run needs, so a missing one fails the run at once."""
    for spec in (ctx.chat_model, ctx.rewrite_model):
        if isinstance(spec, str):
            chat_model(spec)
    calibrated(evaluator(ctx))


def evaluator(ctx: Context):
    if ctx.evaluator is not None and hasattr(ctx.evaluator, "invoke"):
        return ctx.evaluator

    return RetrievalEvaluator(checkpoint=ctx.evaluator or None)


def calibrated(scorer: Any) -> Thresholds:
    """The evaluator's calibrated (upper, lower), or the paper's PopQA pair for one without."""
    pair = getattr(scorer, "thresholds", None)
    return PRESETS["popqa"] if pair is None else Thresholds.of(pair)


def thresholds(ctx: Context, scorer: Any) -> Thresholds:
    """The run's (upper, lower): the context's choice, else the evaluator's calibrated pair."""
    return ctx.thresholds(calibrated(scorer))


def quote_threshold(ctx: Context) -> float:
    """The score a strip needs to be quoted instead of declining (`Context.quote_from`)."""
    return ctx.quote_from(calibrated(evaluator(ctx)))


def retrieve(ctx: Context, question: str) -> list[Document]:
    """The context's `k` distinct documents for `question` matching its `filter`, from its retriever, else its
    Chroma collection (`filtered_search` says how each kind is filtered)."""
    if ctx.retriever is not None:
        found = filtered_search(ctx.retriever, question, OVERFETCH * ctx.k, ctx.filter)
        return distinct(list(found))[: ctx.k]
    return search_store(knowledge_store(ctx), question, k=ctx.k, search=ctx.search, wanted=ctx.filter)


def knowledge_store(ctx: Context) -> Chroma:
    """The context's Chroma collection (`StoreError` unless it exists and holds chunks)."""
    return open_existing(
        persist_dir=ctx.chroma_dir,
        collection=ctx.collection,
        chroma_url=ctx.chroma_url,
        embedder=ctx.embeddings,
        timeout=ctx.chroma_timeout,
    )


def strip_embedder(ctx: Context) -> Callable[[list[str]], list[list[float]]] | None:
    """The knowledge base's embeddings, to rank strips within their set; None when `strip_set_weight` is 0."""
    return shared_embeddings(ctx.embeddings).embed_documents if ctx.strip_set_weight else None


def web_search(ctx: Context, query: str) -> list[Document]:
    """The web's passages for `query` (`crag.passages`), Wikipedia first; raises `WebSearchError`."""
    if is_user_backend(ctx.web_backend):
        return prefer_wikipedia(search_custom(ctx.web_backend, query, ctx.web_k, ctx.web_timeout))
    return search_web(
        query,
        backend=cast(str, ctx.web_backend),  # a name: an object of the user's was searched above
        k=ctx.web_k,
        local_index=ctx.web_index,
        timeout=ctx.web_timeout,
        wikipedia_url=ctx.wikipedia_url,
        searxng_url=ctx.searxng_url,
    )


def fetch_pages(ctx: Context, results: list[Document]) -> tuple[list[Document], list[str]]:
    """The web results' pages as titled paragraphs, at most `MAX_PARAGRAPHS` of them (`cap_paragraphs`), and
    "URL: why" errors; a failed page's snippet stands in."""
    if ctx.web_backend == "wikipedia":
        passages, errors = WikipediaSearch(ctx.wikipedia_url, timeout=ctx.web_timeout).pages(results)
    else:
        passages, errors = fetch_all(results, timeout=ctx.web_timeout, allow_private=ctx.allow_private_fetch)
    passages, dropped = cap_paragraphs(passages)  # each is scored, and maybe embedded, next
    return passages, [*errors, dropped] if dropped else errors


# the longest reply each use of the chat model needs: a query is a few words, a "hyde" passage three sentences
_REPLY_TOKENS = {"rewrite": 24, "hyde": 96, "questions": 48}
# the uses whose prompts a local model reads in a llama.cpp context of their own (`LocalChatModel.lane`)
_LANES = frozenset({"condense"})


def condense_tokens(question: str) -> int:
    """The token budget to rewrite the follow-up `question`: its length (3 characters a token) and room to spare."""
    return 32 + len(question) // 3


def chat(ctx: Context, purpose: str = "answer", *, reply_tokens: int | None = None) -> BaseChatModel:
    """The chat model for "answer", or `rewrite_model` (when set) for "rewrite", "requery", "hyde" and "condense"."""
    if purpose == "answer":
        return chat_model(ctx.chat_model, max_tokens=ctx.answer_tokens)
    spec = ctx.rewrite_model if ctx.rewrite_model is not None else ctx.chat_model
    tokens = reply_tokens or _REPLY_TOKENS.get(purpose, 24)
    return chat_model(spec, max_tokens=tokens, lane=purpose if purpose in _LANES else None)


# what a provider returns, held to a schema, for each short text the chat model writes; the local model writes
# it as the prompt's few-shot form asks
_WRITES: dict[str, type[BaseModel]] = {
    "rewrite": SearchQueryReply,
    "requery": RequeryReply,
    "hyde": PassageReply,
    "condense": QuestionReply,
    "questions": QuestionReply,  # FLARE's question about an unsure term
}


def write(ctx: Context, kind: str, prompt: Any, *, config: Any, reply_tokens: int | None = None) -> tuple[str, Any]:
    """(the text of `kind`, "rewrite" (the web query), "requery", "hyde", "condense" or "questions", that the rewrite model
    writes for `prompt`; its reply): a provider's by structured output (`crag.models.structured.written`)."""
    purpose = "rewrite" if kind == "requery" else kind
    return written(chat(ctx, purpose, reply_tokens=reply_tokens), prompt, _WRITES[kind], config)


# FLARE's drafts and sentences share a lane of the local model: each call finds the answer so far in its context
FLARE_LANE = "flare"
LOOKAHEAD_TOKENS = 64  # the longest sentence FLARE drafts (its official code's look-ahead)


def with_probabilities(ctx: Context, messages: list[dict[str, str]], *, prefix: str, cut: Cut) -> Decoded:
    """The chat model's next words after `prefix` (the answer so far), each token with its probability, up to
    where `cut` ends them (FLARE's next sentence); the answer's stop strings end them too."""
    model = chat_model(ctx.chat_model, max_tokens=LOOKAHEAD_TOKENS, lane=FLARE_LANE)
    return decoded(model, messages, prefix=prefix, stop=GENERATE_STOP, cut=cut)


# the longest document text the chat model grades: a default chunk whole, a larger one cut
RECHECK_CHARS = 3000


def rechecks(ctx: Context) -> bool:
    """Whether an Incorrect grade gets the chat model's second opinion: on, and a model that grades above chance."""
    return ctx.rechecks and chat_model_grades(ctx.chat_model)


def relevance(ctx: Context, question: str, documents: list[Document]) -> list[float]:
    """The chat model's grade of each document, in [-1, 1]."""
    model = chat_model(ctx.chat_model, max_tokens=JUDGE_TOKENS)
    # the title on a line of its own, not `titled`'s "Title: text": the recheck threshold was chosen on this form
    texts = [f"{title_of(d)}\n{d.page_content}" if title_of(d) else d.page_content for d in documents]
    return [chat_relevance(model, question, text[:RECHECK_CHARS], _grade(ctx, question, text)) for text in texts]


def _grade(ctx: Context, question: str, text: str) -> list | None:
    """The user's grade prompt filled in; None for the tutorial's, which each model fills in its own way."""
    if not replaced("grade", ctx.prompts):
        return None
    return filled("grade", ctx.prompts, document=text[:RECHECK_CHARS], question=question).to_messages()


def answers(ctx: Context, question: str, passage: str) -> float:
    """The chat model's P(yes) that `passage` answers `question`, in [-1, 1] (`crag.models.judge.answers`)."""
    return chat_answers(chat_model(ctx.chat_model, max_tokens=JUDGE_TOKENS), question, passage[:RECHECK_CHARS])


def choose(ctx: Context, question: str, passages: list[str]) -> list[float]:
    """How likely the chat model is to name each passage as the one that answers (`crag.models.judge.choose`)."""
    return chat_choose(chat_model(ctx.chat_model, max_tokens=JUDGE_TOKENS), question, passages)


# Self-Reasoning's steps share a lane of the local model: each step's call finds the turns before it in its context
REASONING_LANE = "self_reasoning"
# the longest reply of a step that is not the answer: a verdict's reason, three quotes and their reasons, an analysis
_REASONING_TOKENS = {"relevance": 48, "evidence": 384, "analysis": 128}
_REASONING: RunnableConfig = {"tags": REASONING_TAGS}


def _reasoner(ctx: Context, tokens: int) -> BaseChatModel:
    return chat_model(ctx.chat_model, max_tokens=tokens, lane=REASONING_LANE)


def relevance_verdict(ctx: Context, messages: list[dict[str, str]]) -> tuple[float, str]:
    """Self-Reasoning's step 1: the reader's P(yes), in [-1, 1], that its documents are relevant, and its reply."""
    return verdict(_reasoner(ctx, _REASONING_TOKENS["relevance"]), messages, _REASONING)


def evidence_selection(ctx: Context, messages: list[dict[str, str]]) -> tuple[list[Quote], str]:
    """Step 2: the sentences the reader selects, each {document, sentence, reason}, and its reply; none when
    the reply does not parse."""
    selection, text = structured(_reasoner(ctx, _REASONING_TOKENS["evidence"]), messages, Selection, _REASONING)
    quotes = (
        [Quote(document=q.document, sentence=q.sentence, reason=q.reason) for q in selection.evidence]
        if selection
        else []
    )
    return quotes, text


def trajectory_analysis(ctx: Context, messages: list[dict[str, str]]) -> tuple[dict[str, str] | None, str]:
    """Step 3: the reader's {analysis, answer}, and its reply; None when the reply does not parse."""
    tokens = _REASONING_TOKENS["analysis"] + ctx.answer_tokens
    analysis, text = structured(_reasoner(ctx, tokens), messages, Analysis, _REASONING)
    return (analysis.model_dump() if analysis else None), text


def reasoned_answer(ctx: Context, messages: list[dict[str, str]]) -> str:
    """The reader's answer as the conversation's next turn, in its own words (no analysis before it)."""
    reply = _reasoner(ctx, ctx.answer_tokens).invoke(messages, stop=GENERATE_STOP, config=_REASONING)
    return str(reply.content)


def critique(
    ctx: Context, kinds: Sequence[str], question: str, passage: str | None = None, answer: str | None = None
) -> dict[str, list[float]]:
    """The chat model's probabilities over the labels of each critique of `kinds` (`crag.prompts.CRITIQUES`:
    Self-RAG's reflection tokens as prompts), all about one question, passage and answer."""
    model = chat_model(ctx.chat_model, max_tokens=JUDGE_TOKENS)
    cut = passage[:RECHECK_CHARS] if passage is not None else None
    asks = [(critique_messages(kind, question, cut, answer), CRITIQUES[kind].labels) for kind in kinds]
    return dict(zip(kinds, chat_critique(model, asks), strict=True))


def warm_chat(ctx: Context) -> None:
    """Load the local chat model and fill its follow-up lane with the rewrite prompt's fixed start."""
    model = chat(ctx, "answer")
    if isinstance(model, LocalChatModel):
        model.invoke("Hi", max_tokens=1)
    condenser = chat(ctx, "condense")
    if isinstance(condenser, LocalChatModel):
        warm = filled(
            "condense",
            ctx.prompts,
            question="warm-up",
            history=[{"asked": "warm-up", "question": "warm-up", "answer": "warm-up"}],
        )
        condenser.invoke(warm, max_tokens=1)


def warm_up(ctx: Context) -> None:
    """Load every model and store the graph uses, so the first question does not pay for it."""
    scorer = evaluator(ctx)
    scorer.invoke({"question": "warm-up", "documents": ["a warm-up passage"]})
    retrieve(ctx, "warm-up")
    warm_chat(ctx)
    if ctx.web_backend == "local":
        web_search(ctx, "warm-up")


def ingest(ctx: Context, documents: Sequence[Document]) -> dict[str, Any]:
    """Chunk `documents` into the context's store (its retriever when a vector store, else its Chroma
    collection) through LangChain's Indexing API; the `IngestReport` as a dict."""
    # here: the answering graphs, which import this module, need none of ingestion's readers and record managers
    from crag.indexing.api import ingest as ingest_into  # noqa: PLC0415

    return dataclasses.asdict(ingest_into(list(documents), context=ctx))


__all__ = ["warm_chat"]  # what callers outside the package use
