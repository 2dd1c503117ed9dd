"""Turn `Context` settings into the objects the nodes use. Names resolve to process-wide cached
models and stores (loaded on first use, never at import); objects injected in `Context` pass
through unchanged.

This is the nodes' one way to the backends and the evaluator (an import-linter contract), so that
a node can be tested with fakes in `Context` and a backend can change without touching the graph.
That includes the web's error type: `WebSearchError` is re-exported here for the nodes to catch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.vectorstores import VectorStore

from crag.evaluator.runnable import RetrievalEvaluator
from crag.models.chat import LocalChatModel, chat_model
from crag.models.chat import cut_short as cut_short  # re-exported: a node checks its replies with it
from crag.models.chat import grades as chat_model_grades
from crag.models.chat import relevance as chat_relevance
from crag.models.embeddings import shared_embeddings
from crag.passages import distinct, title_of
from crag.prompts import condense_prompt
from crag.search.fetch import fetch_all
from crag.search.store import OVERFETCH, open_existing
from crag.search.store import retrieve as search_store
from crag.search.user_web import is_user_backend, search_custom
from crag.search.web import WebSearchError as WebSearchError  # re-exported: nodes catch it from here
from crag.search.web import prefer_wikipedia, search_web
from crag.search.wikipedia import WikipediaSearch
from crag.settings import Context
from crag.thresholds import PRESETS, Thresholds


def context_of(runtime: Any) -> Context:
    """The run's context; LangGraph passes None when the caller gave none."""
    context = getattr(runtime, "context", None)
    return context if context is not None else Context()


def check(ctx: Context) -> None:
    """What a run will need, checked when it starts, whatever the question: the chat models it names (an
    unknown local model, a missing GGUF file, a provider without its package or key) and the evaluator's
    checkpoint (loaded once per process), so that a missing model fails the run at once, not some later answer."""
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
    """The context's `k` documents for `question`, each text once (`distinct`): from its own retriever
    or vector store if it has one, else from the Chroma collection it names (which must exist and
    hold chunks)."""
    if isinstance(ctx.retriever, VectorStore):
        return distinct(ctx.retriever.similarity_search(question, k=OVERFETCH * ctx.k))[: ctx.k]
    if ctx.retriever is not None:
        return distinct(list(ctx.retriever.invoke(question)))[: ctx.k]
    return search_store(knowledge_store(ctx), question, k=ctx.k, search=ctx.search)


def knowledge_store(ctx: Context) -> VectorStore:
    """The context's Chroma collection (`StoreError` unless it exists and holds chunks)."""
    return open_existing(
        persist_dir=ctx.chroma_dir,
        collection=ctx.collection,
        chroma_url=ctx.chroma_url,
        embedder=ctx.embeddings,
        timeout=ctx.chroma_timeout,
    )


def strip_embedder(ctx: Context) -> Callable[[list[str]], list[list[float]]] | None:
    """What refinement embeds strips with (and `CRAGCompressor` documents) to rank them within their
    set: the knowledge base's own embeddings (loaded once per process; the retriever has them loaded
    already), or None when `strip_set_weight` is 0."""
    return shared_embeddings(ctx.embeddings).embed_documents if ctx.strip_set_weight else None


def web_search(ctx: Context, query: str) -> list[Document]:
    """The web's passages for `query` (`crag.passages`), Wikipedia first; raises `WebSearchError`."""
    if is_user_backend(ctx.web_backend):
        return prefer_wikipedia(search_custom(ctx.web_backend, query, ctx.web_k, ctx.web_timeout))
    return search_web(
        query,
        backend=ctx.web_backend,
        k=ctx.web_k,
        local_index=ctx.web_index,
        timeout=ctx.web_timeout,
        wikipedia_url=ctx.wikipedia_url,
        searxng_url=ctx.searxng_url,
    )


def fetch_pages(ctx: Context, results: list[Document]) -> tuple[list[Document], list[str]]:
    """The web results' pages as titled paragraphs, within the context's time and address limits: (passages,
    "URL: why" errors); a failed page's snippet stands in. The wikipedia backend's hits are read through the
    wiki's API (`WikipediaSearch.pages`), every other backend's through the page fetcher."""
    if ctx.web_backend == "wikipedia":
        return WikipediaSearch(ctx.wikipedia_url, timeout=ctx.web_timeout).pages(results)
    return fetch_all(results, timeout=ctx.web_timeout, allow_private=ctx.allow_private_fetch)


# the longest reply each use of the chat model needs: a query (the web's, or requery's "rewrite") is a few
# words, requery's "hyde" passage three sentences; a follow-up's rewrite, `condense_tokens`
_REPLY_TOKENS = {"rewrite": 24, "hyde": 96}
# the uses whose prompts a local model reads in a llama.cpp context of their own (`LocalChatModel.lane`)
_LANES = frozenset({"condense"})


def condense_tokens(question: str) -> int:
    """The longest rewrite of the follow-up `question`: the question itself (about three characters a token,
    as code and names spell) and what it refers to; a fixed budget would cut long questions or let short ones
    run on. A rewrite its budget still cuts is not used (`cut_short`)."""
    return 32 + len(question) // 3


def chat(ctx: Context, purpose: str = "answer", *, reply_tokens: int | None = None) -> BaseChatModel:
    """The chat model for `purpose`: "answer" (the generator), or a search query's ("rewrite", "requery",
    "hyde") and a follow-up's ("condense"), written by `rewrite_model` when it is set; `reply_tokens` for a
    reply whose length depends on the request (`condense_tokens`)."""
    if purpose == "answer":
        return chat_model(ctx.chat_model, max_tokens=ctx.max_answer_tokens)
    spec = ctx.rewrite_model if ctx.rewrite_model is not None else ctx.chat_model
    tokens = reply_tokens or _REPLY_TOKENS.get(purpose, 24)
    return chat_model(spec, max_tokens=tokens, lane=purpose if purpose in _LANES else None)


# the longest document text the chat model reads for its grade: a chunk of the default size whole, a
# user's larger chunk cut, so that each grade stays quick
RECHECK_CHARS = 3000


def rechecks(ctx: Context) -> bool:
    """Whether an Incorrect grade gets the chat model's second opinion: on (`Context.recheck_threshold`) and a
    chat model whose grade is worth asking (not a packaged model that grades at chance)."""
    return ctx.rechecks and chat_model_grades(ctx.chat_model)


def relevance(ctx: Context, question: str, documents: list[Document]) -> list[float]:
    """The chat model's grade of each retrieved document (`Context.recheck_threshold`), in [-1, 1], one
    model for all of them (a provider's model is a new client each time it is made)."""
    model = chat_model(ctx.chat_model, max_tokens=3)
    # the title on a line of its own, not `titled`'s "Title: text": the recheck threshold was chosen on this form
    texts = [f"{title_of(d)}\n{d.page_content}" if title_of(d) else d.page_content for d in documents]
    return [chat_relevance(model, question, text[:RECHECK_CHARS]) for text in texts]


def answers(ctx: Context, question: str, passage: str) -> float | None:
    """The chat model's P(yes) that `passage` answers `question`, in [-1, 1]; None for a model whose token
    probabilities are not at hand (only the local model's are)."""
    model = chat_model(ctx.chat_model, max_tokens=3)
    return model.answers(question, passage[:RECHECK_CHARS]) if isinstance(model, LocalChatModel) else None


def choose(ctx: Context, question: str, passages: list[str]) -> list[float] | None:
    """How likely the chat model is to name each passage as the one that answers (`LocalChatModel.choose`);
    None for a model whose token probabilities are not at hand."""
    model = chat_model(ctx.chat_model, max_tokens=3)
    return model.choose(question, passages) if isinstance(model, LocalChatModel) else None


def warm_chat(ctx: Context) -> None:
    """Load the local chat model and fill its follow-up lane with the rewrite prompt's fixed start, so the
    first follow-up reads only its own words (a provider's model has nothing to load)."""
    model = chat(ctx, "answer")
    if isinstance(model, LocalChatModel):
        model.invoke("Hi", max_tokens=1)
    condenser = chat(ctx, "condense")
    if isinstance(condenser, LocalChatModel):  # its context holds the prompt's fixed start for the first follow-up
        condenser.invoke(condense_prompt("warm-up", [{"question": "warm-up", "answer": "warm-up"}]), max_tokens=1)


def warm_up(ctx: Context) -> None:
    """Load every model and store the graph uses now (the server before its first request, `crag chat`
    before its first prompt), so the first question does not pay for it; raises what a run would."""
    scorer = evaluator(ctx)
    scorer.invoke({"question": "warm-up", "documents": ["a warm-up passage"]})
    retrieve(ctx, "warm-up")
    warm_chat(ctx)
    if ctx.web_backend == "local":
        web_search(ctx, "warm-up")


__all__ = ["warm_chat"]  # what callers outside the package use
