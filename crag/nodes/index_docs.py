"""`index_docs`: the `index` graph's one step: the documents given chunked into the knowledge base."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
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


# the permission a run with a user needs to write (the LangGraph Agent Server's auth grants it: crag.serve.agent_auth)
INDEX_PERMISSION = "crag:index"


def check_permission(config: RunnableConfig) -> None:
    """PermissionError when the run is a server's for an authenticated user who may not write documents; a run
    with no user (Python, the CLI, `crag serve`'s own ingest) may."""
    configurable = config.get("configurable") or {}
    user = configurable.get("langgraph_auth_user_id")
    if user and INDEX_PERMISSION not in (configurable.get("langgraph_auth_permissions") or []):
        raise PermissionError(f"user {user!r} may not add documents: the server's $CRAG_INDEX_USERS does not name them")


def index_docs(state: IndexState, runtime: Runtime[Context]) -> dict:
    check_permission(get_config())
    documents = [as_document(item, n) for n, item in enumerate(state.get("docs") or [])]
    return {"report": resources.ingest(resources.context_of(runtime), documents)}
