"""The one passage type, from retrieval through web search, fetching, refinement and scoring.

A passage is a LangChain `Document`: `page_content` is its text, `metadata["title"]` its title
("" when unknown) and `metadata["source"]` where it came from (a file path or a URL); retrieval
adds `rank`. One type means a retrieved chunk, a web hit and a fetched paragraph go through the
same refinement and scoring code, and a user's retriever or web backend can hand in Documents
as they are.

`titled` is the one way a title is joined to a text ("Title: text"). The evaluator is trained on
passages written that way and scores them the same way, and the page loader writes fetched
paragraphs so, as the paper's does: if two places wrote it differently, the evaluator would
score passages in a form it never saw in training.
"""

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
    """The passage's title, "" when it has none."""
    return str(doc.metadata.get("title") or "")


def source_of(doc: Document) -> str:
    """Where the passage came from (file path or URL), "" when unknown."""
    return str(doc.metadata.get("source") or "")


def titled(text: str, title: str | None) -> str:
    """A text with its title as the evaluator is trained and scores it: "Title: text", or the text
    alone when there is no title."""
    return f"{title}: {text}" if title else text


def titled_once(text: str, title: str | None) -> str:
    """`titled(text, title)`, unless the text already starts with its title: fetched web paragraphs
    are stored titled (`crag.search.fetch`), and "Title: Title: text" is how they were shown."""
    return text if title and text.startswith(f"{title}:") else titled(text, title)


def distinct(documents: list[Document]) -> list[Document]:
    """The documents in their order, each text once: a later document whose text equals an earlier
    one's (case and spacing aside) is dropped. The same file copied into several folders (a licence,
    a README, an edition of a book) would otherwise fill several of the k places with one passage,
    which the evaluator grades, refinement keeps and the generator reads twice. Only equal texts go:
    two chunks that differ in a word may differ in the answer (a set's method and a map's)."""
    seen: set[str] = set()
    kept = []
    for document in documents:
        key = folded(document.page_content)
        if key not in seen:
            seen.add(key)
            kept.append(document)
    return kept


def metadata_value(value: Any) -> Any:
    """Chroma stores only str, int, float and bool; a date (YAML front matter has them) is kept as its
    ISO form, anything else as its JSON text."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, datetime.date):
        return value.isoformat()
    return json.dumps(value, ensure_ascii=False, default=lambda v: v.isoformat() if hasattr(v, "isoformat") else str(v))


def record_fields(record: dict[str, Any]) -> dict[str, Any]:
    """A record's own fields as chunk metadata (a JSONL record's, a Markdown file's front matter): its
    `title` and `text` are the passage's own; keys the pipeline writes are kept as `doc_<key>`."""
    fields = {}
    for key, value in record.items():
        value = metadata_value(value)
        if key not in ("title", "text") and value is not None:
            fields[f"doc_{key}" if key in RESERVED_KEYS else key] = value
    return fields


__all__ = ["passage", "source_of", "title_of", "titled"]  # what callers outside the package use
