"""`index_docs`: the `index` graph's one step: the documents given chunked into the knowledge base."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langgraph.runtime import Runtime
from pydantic import ValidationError

from crag import resources
from crag.settings import Context
from crag.state import IndexState


def as_document(item: Any, number: int) -> Document:
    """A Document, or one from its JSON (what a LangGraph server hands over); ValueError for anything else."""
    if isinstance(item, Document):
        return item
    if not isinstance(item, dict):
        raise ValueError(
            f'docs[{number}]: expected a document {{"page_content": ..., "metadata": {{"source": ...}}}}, '
            f"got {type(item).__name__}"
        )
    try:
        return Document.model_validate(item)
    except (ValidationError, TypeError) as exc:  # TypeError: no page_content (Document's own __init__ needs it)
        raise ValueError(f"docs[{number}] is not a document: {exc}") from exc


def index_docs(state: IndexState, runtime: Runtime[Context]) -> dict:
    documents = [as_document(item, n) for n, item in enumerate(state.get("docs") or [])]
    return {"report": resources.ingest(resources.context_of(runtime), documents)}
