"""CRAG's parts as LangChain components: a reranker (`CRAGCompressor`), a correcting retriever
(`CRAGRetriever`), and the graph as a Runnable or an agent's tool (`bound_graph`, `crag_tool`). All take
a `Context`, so the CLI's and the server's settings apply."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun, Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import ConfigDict, Field

from crag import resources
from crag.graphs.crag import graph, knowledge_graph
from crag.knowledge.refinement import selection_scores
from crag.knowledge.routing import final_knowledge
from crag.passages import passage, title_of, titled
from crag.prompts import TOOL_DESCRIPTION
from crag.questions.messages import ABOUT_ANSWER
from crag.settings import Context
from crag.thresholds import Action

# how good a document must be to be kept, by the label its score earns
KEEP: dict[str, tuple[Action, ...]] = {
    "correct": ("correct",),
    "ambiguous": ("correct", "ambiguous"),
    "all": ("correct", "ambiguous", "incorrect"),
}


class CRAGCompressor(BaseDocumentCompressor):
    """The retrieval evaluator as a document compressor (reranker).

    Each document gets `relevance_score` (in [-1, 1]), `crag_label` and `selection_score` in its
    metadata, and comes best first by selection score. `keep="ambiguous"` (the default) drops what
    CRAG would call Incorrect, `"correct"` keeps only Correct, `"all"` only reorders; `top_n` caps
    the count. A `strip_set_weight` of 0 orders by the evaluator's score alone."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    context: Context = Field(default_factory=Context)
    keep: Literal["correct", "ambiguous", "all"] = "ambiguous"
    top_n: int | None = Field(default=None, ge=1)

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        if not documents:
            return []
        evaluator = resources.evaluator(self.context)
        scores = [float(s) for s in evaluator.invoke({"question": query, "documents": list(documents)})]
        thresholds = resources.thresholds(self.context, evaluator)
        # the standing orders but does not label: it says which document answers, not whether any does
        selection = selection_scores(
            query,
            [titled(doc.page_content, title_of(doc)) for doc in documents],
            scores,
            resources.strip_embedder(self.context),
            self.context.strip_set_weight,
        )
        scored = [
            Document(
                page_content=doc.page_content,
                metadata={
                    **doc.metadata,
                    "relevance_score": score,
                    "crag_label": thresholds.label(score),
                    "selection_score": chosen,
                },
                id=doc.id,
            )
            for doc, score, chosen in zip(documents, scores, selection, strict=True)
        ]
        kept = [doc for doc in scored if doc.metadata["crag_label"] in KEEP[self.keep]]
        kept.sort(key=lambda doc: doc.metadata["selection_score"], reverse=True)
        return kept[: self.top_n] if self.top_n else kept


class CRAGRetriever(BaseRetriever):
    """Any retriever with CRAG's correction; returns the knowledge strips CRAG would answer from.

    Each strip's metadata holds `title`, `source`, `relevance_score`, `origin` ("internal" or
    "external", the web's) and the run's `crag_action`. With no web backend, an Incorrect grade
    returns no documents. `k` (at construction or per call, `invoke(query, k=3)`) caps the strips;
    default: the context's `top_k_strips`, twice that on Ambiguous."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: Any = None  # the base retriever (any Runnable from a query to Documents); None: the context's store
    context: Context = Field(default_factory=Context)
    k: int | None = Field(default=None, ge=1, description="Strips returned at most; None: the context's own.")

    def _run_options(self, k: int | None, run_manager: Any) -> dict[str, Any]:
        """The knowledge graph's context (this retriever, `k` strips) and callbacks for one call."""
        changes: dict[str, Any] = {}
        if self.retriever is not None:
            changes["retriever"] = self.retriever
        if k is not None:
            changes["top_k_strips"] = k
        context = dataclasses.replace(self.context, **changes) if changes else self.context
        return {"context": context, "config": {"callbacks": run_manager.get_child()}}

    def _documents(self, state: dict[str, Any], k: int | None) -> list[Document]:
        action = state.get("action")
        strips = final_knowledge(state)
        return [
            passage(
                strip["text"],
                title=strip["title"],
                source=strip["source"],
                relevance_score=strip["score"],
                origin=strip["origin"],
                crag_action=action,
            )
            for strip in (strips[:k] if k is not None else strips)
        ]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = k if k is not None else self.k
        state = knowledge_graph.invoke({"question": query}, **self._run_options(k, run_manager))
        return self._documents(state, k)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = k if k is not None else self.k
        state = await knowledge_graph.ainvoke({"question": query}, **self._run_options(k, run_manager))
        return self._documents(state, k)


def bound_graph(context: Context | None = None) -> Runnable:
    """The CRAG graph with `context` fixed for every call (invoke, stream, batch, async forms)."""
    return graph.bind(context=context or Context())


def tool_answer(result: dict[str, Any]) -> str:
    """A run's answer as an agent reads it: the answer, then one line per cited source."""
    lines = [str(result.get("answer") or "")]
    lines += [f"[{s['id']}] {s['title']} ({s['source']})" for s in result.get("sources") or []]
    return "\n".join(lines)


ARTIFACT_KEYS = ("answer", *ABOUT_ANSWER)  # what the conversation's AI message says of its answer, and the answer


def tool_artifact(result: dict[str, Any]) -> dict[str, Any]:
    """What the tool's ToolMessage carries beside its text, for the application rather than the model: the
    answer, the question as answered, the action, whether it is grounded, its sources and citations."""
    return {key: result.get(key) for key in ARTIFACT_KEYS}


def crag_tool(context: Context | None = None, *, name: str = "crag", description: str = TOOL_DESCRIPTION) -> BaseTool:
    """The graph as an agent's tool taking one `question`; name and describe it after the knowledge base.

    Its `response_format` is "content_and_artifact": the agent's model reads the answer and its sources as
    text (`tool_answer`); the ToolMessage of a tool call also carries `tool_artifact`'s dict as its
    `artifact`, which is not sent to the model. Invoked with the arguments alone it returns the text."""
    runnable = bound_graph(context)

    def answer(question: str) -> tuple[str, dict[str, Any]]:
        result = runnable.invoke({"question": question})
        return tool_answer(result), tool_artifact(result)

    async def aanswer(question: str) -> tuple[str, dict[str, Any]]:
        result = await runnable.ainvoke({"question": question})
        return tool_answer(result), tool_artifact(result)

    return StructuredTool.from_function(
        func=answer,
        coroutine=aanswer,
        name=name,
        description=description,
        response_format="content_and_artifact",
    )
