"""The one passage type: a LangChain `Document` with `metadata["title"]` and `metadata["source"]`.
`titled` is the one way a title is joined to a text ("Title: text"), as the evaluator is trained."""

from __future__ import annotations

import datetime
import json
from typing import Any

from langchain_core.documents import Document

from crag.text import folded

# metadata keys the pipeline writes itself; a record's own `id`, `source`… are kept as `doc_id`, `doc_source`…
RESERVED_KEYS = ("source", "chunk", "id", "rank")


def passage(text: str, title: str = "", source: str = "", **metadata: Any) -> Document:
    """A passage: `text` with its title and source (file path or URL) and any further metadata."""
    return Document(page_content=text, metadata={"title": title, "source": source, **metadata})


def title_of(doc: Document) -> str:
    return str(doc.metadata.get("title") or "")


def source_of(doc: Document) -> str:
    return str(doc.metadata.get("source") or "")


def titled(text: str, title: str | None) -> str:
    """ "Title: text", or the text alone when there is no title."""
    return f"{title}: {text}" if title else text


def titled_once(text: str, title: str | None) -> str:
    """`titled(text, title)`, unless the text already starts with its title (fetched web paragraphs)."""
    return text if title and text.startswith(f"{title}:") else titled(text, title)


def distinct(documents: list[Document]) -> list[Document]:
    """The documents in order without later copies of a text (case and spacing aside): one file
    copied into several folders would otherwise fill several of the k places."""
    seen: set[str] = set()
    kept = []
    for document in documents:
        key = folded(document.page_content)
        if key not in seen:
            seen.add(key)
            kept.append(document)
    return kept


def metadata_value(value: Any) -> Any:
    """A value Chroma can store (str, int, float, bool): a date as ISO text, anything else as JSON."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, datetime.date):
        return value.isoformat()
    return json.dumps(value, ensure_ascii=False, default=lambda v: v.isoformat() if hasattr(v, "isoformat") else str(v))


def record_fields(record: dict[str, Any]) -> dict[str, Any]:
    """A record's fields as chunk metadata, without `title` and `text`; reserved keys become `doc_<key>`."""
    fields = {}
    for key, value in record.items():
        value = metadata_value(value)
        if key not in ("title", "text") and value is not None:
            fields[f"doc_{key}" if key in RESERVED_KEYS else key] = value
    return fields


__all__ = ["passage", "source_of", "title_of", "titled"]  # what callers outside the package use
