"""`RetrievalEvaluator`: the evaluator as a LangChain Runnable the graph (and any chain) can call."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from pydantic import ConfigDict, Field

from crag.evaluator.model import Scorer, load_scorer, validate_pairs
from crag.evaluator.onnx_engine import Engine, engine_from_env
from crag.passages import title_of
from crag.runtime.cache import ResourceCache
from crag.thresholds import Thresholds

DEFAULT_CHECKPOINT = Path(__file__).parent / "default"

EvaluatorInput = Mapping[str, Any] | Sequence[Sequence[str]]

_SCORERS: ResourceCache[tuple[str, bool | None, str], Scorer] = ResourceCache("evaluator")


def get_scorer(path: str | Path | None = None, dynamic_int8: bool | None = None, engine: str | None = None) -> Scorer:
    """The process-wide loaded model for a checkpoint (None: the shipped default) on `engine`."""
    key = (str(Path(path or DEFAULT_CHECKPOINT).expanduser().resolve()), dynamic_int8, engine_from_env(engine))
    return _SCORERS.get(key, lambda: load_scorer(key[0], dynamic_int8=dynamic_int8, engine=key[2]))


def _document_parts(doc: Any, index: int) -> tuple[str, str]:
    if isinstance(doc, Document):
        return doc.page_content, title_of(doc)
    if isinstance(doc, str):
        return doc, ""
    if isinstance(doc, Mapping):
        text = doc.get("text", doc.get("page_content"))
        if isinstance(text, str):
            return text, str(doc.get("title") or "")
    raise TypeError(f"document {index} must be a str, a Document or a mapping with 'text', got {type(doc).__name__}")


class RetrievalEvaluator(RunnableSerializable[EvaluatorInput, list[float]]):
    """Scores (question, document) relevance in [-1, 1] with a fine-tuned sequence classifier.

    Input: `{"question": str, "documents": [...]}` (strings, Documents or `{"text", "title"}` dicts) or a list
    of `(question, passage)` pairs; output: one score per document or pair. `batch` scores all inputs in
    shared mini-batches; loaded models are cached per process."""

    checkpoint: str | None = Field(default=None, description="Checkpoint folder; None = shipped default.")
    batch_size: int = Field(default=32, ge=1, description="Pairs per forward pass.")
    dynamic_int8: bool | None = Field(
        default=None, description="Quantize to int8 at load; None = as the checkpoint says."
    )
    engine: Engine | None = Field(
        default=None,
        description="What runs the forward pass: ONNX Runtime (the same scores, faster), torch, or 'auto' "
        "(ONNX Runtime when it can); None = $CRAG_EVALUATOR_ENGINE, default 'auto'.",
    )

    model_config = ConfigDict(arbitrary_types_allowed=True)

    @property
    def scorer(self) -> Scorer:
        return get_scorer(self.checkpoint, self.dynamic_int8, self.engine)

    @property
    def thresholds(self) -> Thresholds:
        """The checkpoint's calibrated (upper, lower) action thresholds."""
        return self.scorer.thresholds

    def _pairs(self, value: EvaluatorInput) -> list[tuple[str, str]]:
        if isinstance(value, Mapping):
            question, documents = value.get("question"), value.get("documents")
            if not isinstance(question, str):
                raise TypeError(f"'question' must be str, got {type(question).__name__}")
            if isinstance(documents, (str, bytes)) or not isinstance(documents, Sequence):
                raise TypeError("'documents' must be a list of documents")
            parts = [_document_parts(doc, i) for i, doc in enumerate(documents)]
            return [(question, self.scorer.passage_text(text, title)) for text, title in parts]
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise TypeError(
                "input must be {'question': ..., 'documents': [...]} or a list of (question, passage) pairs, "
                f"got {type(value).__name__}"
            )
        return [tuple(pair) if isinstance(pair, list) else pair for pair in value]  # type: ignore[misc]

    def _score_many(self, inputs: list[EvaluatorInput]) -> list[list[float] | Exception]:
        """Score the valid inputs in shared mini-batches; a bad input becomes its own error."""
        prepared: list[list[tuple[str, str]] | Exception] = []
        for value in inputs:
            try:
                pairs = self._pairs(value)
                validate_pairs(pairs)
                prepared.append(pairs)
            except (TypeError, ValueError) as exc:
                prepared.append(exc)
        flat = [pair for item in prepared if not isinstance(item, Exception) for pair in item]
        # each input is its own set of passages for the blend's contrast feature (model.Scorer.score)
        groups = [n for n, item in enumerate(prepared) if not isinstance(item, Exception) for _ in item]
        scores = self.scorer.score(flat, batch_size=self.batch_size, groups=groups) if flat else []
        out: list[list[float] | Exception] = []
        offset = 0
        for item in prepared:
            if isinstance(item, Exception):
                out.append(item)
            else:
                out.append(scores[offset : offset + len(item)])
                offset += len(item)
        return out

    def _score_one(self, value: EvaluatorInput) -> list[float]:
        result = self._score_many([value])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def invoke(self, input: EvaluatorInput, config: RunnableConfig | None = None, **kwargs: Any) -> list[float]:
        return self._call_with_config(self._score_one, input, config)

    def batch(
        self,
        inputs: list[EvaluatorInput],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[list[float]]:
        return self._batch_with_config(self._score_many, inputs, config, return_exceptions=return_exceptions)

    async def ainvoke(self, input: EvaluatorInput, config: RunnableConfig | None = None, **kwargs: Any) -> list[float]:
        return await asyncio.to_thread(self.invoke, input, config)

    async def abatch(
        self,
        inputs: list[EvaluatorInput],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[list[float]]:
        return await asyncio.to_thread(self.batch, inputs, config, return_exceptions=return_exceptions)

    def label(self, scores: Sequence[float]) -> list[str]:
        """Per-document labels by the checkpoint's thresholds: correct / ambiguous / incorrect."""
        thresholds = self.thresholds
        return [thresholds.label(s) for s in scores]


__all__ = ["DEFAULT_CHECKPOINT", "RetrievalEvaluator", "get_scorer"]  # what callers outside the package use
