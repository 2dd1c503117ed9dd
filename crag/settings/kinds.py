"""The kinds of value a setting takes: its choices (Literal), its ranges, and the protocols of the ready
objects some settings take instead of a name."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from langchain_core.documents import Document
from pydantic import BeforeValidator, Field

from crag.search.filters import check_filter

WebBackend = Literal["local", "tavily", "wikipedia", "searxng", "none"]
Route = Literal["auto", "correct", "incorrect", "ambiguous"]
Search = Literal["hybrid", "dense"]
RefineMode = Literal["fixed_num", "excerption", "selection"]
Rewrite = Literal["keywords", "model", "off"]
Requery = Literal["off", "rewrite", "hyde"]
GeneratePrompt = Literal[
    "compact", "paper", "marked"
]  # the keys of crag.prompts.GENERATE_PROMPTS (a test keeps them equal)
RetryPrompt = Literal["compact", "paper", "marked", "off"]  # "off": ask once
FlareQuery = Literal["masked", "questions", "previous"]
AnswerStyle = Literal["short", "long"]
Probability = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]

Score = Annotated[
    float, Field(ge=-1.5, le=1.5, allow_inf_nan=False)
]  # the evaluator's [-1, 1], and a margin to force a route
Gate = Annotated[float, Field(ge=-1.5, le=2.0, allow_inf_nan=False)]  # above 1: never reached
# a metadata filter (`crag.search.filters`): checked, and parsed from JSON text (the command line, the environment)
MetadataFilter = Annotated[dict[str, Any] | None, BeforeValidator(check_filter)]


# The ready objects a setting also takes are marked `SkipJsonSchema[...]`: pydantic leaves them out of the
# schemas (LangGraph Studio's, the server's), which show what text can give; `annotation()` drops them too.
@runtime_checkable  # pydantic checks an object given as one with isinstance
class DocumentScorer(Protocol):
    """An evaluator: `invoke({"question": ..., "documents": [...]})` scores each document (a text or a
    `Document`) in [-1, 1]. `RetrievalEvaluator` is one; a `thresholds` (upper, lower) pair is optional."""

    def invoke(self, input: Any, /) -> Sequence[float]: ...


@runtime_checkable
class DocumentRetriever(Protocol):
    """A retriever: `invoke(question)` returns documents for it. A LangChain `BaseRetriever` is one; a
    `VectorStore` is searched with `similarity_search` instead."""

    def invoke(self, input: str, /) -> Iterable[Document]: ...


@runtime_checkable
class WebSearcher(Protocol):
    """A web backend of one's own: `.search(query, k)` returns hits (`Document`s, or mappings or objects with
    title/text/url, `crag.search.user_web.to_result`)."""

    def search(self, query: str, k: int) -> Iterable[Any]: ...
