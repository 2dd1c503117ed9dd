"""The settings of one run, each declared once: its name, type and range, default, help, environment
variable and whether a server request may set it.

The package: the kinds of value (`kinds`), the declaration (`declare`), `Context` (`context`) and the checks
(`checks`); everything is imported from here. `Context` is what LangGraph passes to the nodes (`graph.invoke(input, context=Context(...))`). Each field is
made by `setting()`, whose metadata everything else reads: the options of `crag ask` and `crag chat`
(`crag.cli.settings`), the per-request schema of `crag serve` (`crag.serve.service`), the table on the
configuration page (`docs/hooks.py`) and the checks (`crag.settings.checks`). A field's type may carry a range
(`Annotated[int, Field(ge=1)]`), which pydantic checks. Every plain setting can also come from the
environment as `CRAG_<NAME>`. Nothing here imports an implementation (LangChain's interfaces only, the types of
the objects a setting takes): the models, stores and searches are looked up by these values when a run needs
them (`crag.resources`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from crag.settings.checks import annotation_of, checked, settings_of
from crag.settings.context import (
    CHAT_MODEL_HELP,
    DEFAULT_CHROMA_DIR,
    DEFAULT_COLLECTION,
    DEFAULT_WIKIPEDIA_URL,
    EMBEDDINGS_HELP,
    Context,
)
from crag.settings.declare import GROUPS, about, env_name, setting
from crag.settings.kinds import (
    AnswerStyle,
    DocumentRetriever,
    DocumentScorer,
    FlareQuery,
    Gate,
    GeneratePrompt,
    MetadataFilter,
    Probability,
    RefineMode,
    Requery,
    RetryPrompt,
    Rewrite,
    Route,
    Score,
    Search,
    WebBackend,
    WebSearcher,
)


def settings() -> list[dataclasses.Field]:
    """Every setting, in declaration order."""
    return settings_of(Context)


def annotation(name: str) -> Any:
    """A setting's type as text gives it (the command line, a request, `CRAG_<NAME>`), ranges included
    (`Annotated[int, Field(ge=1)]`): without the ready objects it also takes; `NoneType` for one that only
    takes an object (`retriever`)."""
    return annotation_of(Context, name)


def check(name: str, value: Any) -> Any:
    """`value` as setting `name` holds it (text converted: "12" for a number), or a ValueError that names
    the setting and says what it takes."""
    return checked(Context, name, value)


__all__ = [
    "CHAT_MODEL_HELP",
    "DEFAULT_CHROMA_DIR",
    "DEFAULT_COLLECTION",
    "DEFAULT_WIKIPEDIA_URL",
    "EMBEDDINGS_HELP",
    "GROUPS",
    "AnswerStyle",
    "Context",
    "DocumentRetriever",
    "DocumentScorer",
    "FlareQuery",
    "Gate",
    "GeneratePrompt",
    "MetadataFilter",
    "Probability",
    "RefineMode",
    "Requery",
    "RetryPrompt",
    "Rewrite",
    "Route",
    "Score",
    "Search",
    "WebBackend",
    "WebSearcher",
    "about",
    "annotation",
    "check",
    "env_name",
    "setting",
    "settings",
]
