"""Metadata filters: one portable form, checked, and said in each store's own words.

A filter is an equality mapping `{"field": value, ...}`: a document matches when, for every field, its
metadata holds that value, or one of the values of a list (`{"lang": ["en", "de"]}`). Values are text,
whole numbers, numbers or true/false; a value matches only a value of its kind (1 matches 1 and 1.0, never
true). It becomes a Chroma `where` (`$and` of `$eq`/`$in`), a Qdrant `models.Filter` (`FieldCondition` on
`metadata.<field>`), `filter=` as given for any other vector store, and a check of each document's metadata
for a plain retriever (`matches`: it can only drop what it returned) and for LangChain's
`InMemoryVectorStore` (whose `filter=` is such a check).

Filters arrive from requests (untrusted): `check_filter` refuses anything else with a message saying what a
filter takes, and keeps field names to letters, digits, `_` and `-` so that a field is never read as a store's
operator (`$or`) or a nested path (`a.b`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

Value = str | int | float | bool
Filter = dict[str, Value | list[Value]]

MAX_FIELDS = 16
MAX_VALUES = 32  # in one field's list (the largest filter, 16 x 32 x 256 characters, fits a request body)
MAX_TEXT = 256  # characters of a text value
FIELD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")
FILTER_HELP = (
    'a JSON object of metadata fields and the value each must have, a list meaning any of them: {"lang": "en", '
    f'"year": [2023, 2024]}} (at most {MAX_FIELDS} fields; names of letters, digits, _ and -, up to 64; values '
    f"text up to {MAX_TEXT} characters, numbers or true/false, lists of 1-{MAX_VALUES} of them)"
)


class Contradiction(ValueError):
    """Two filters that no document can match together (`combine`)."""


def _value(field: str, value: Any) -> Value:
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise ValueError(f"filter field {field!r}: a text value has at most {MAX_TEXT} characters")
        return value
    if isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"filter field {field!r}: a number must be finite, got {value!r}")
        return value
    raise ValueError(f"filter field {field!r}: a value is text, a number or true/false, got {type(value).__name__}")


def check_filter(value: Any) -> Filter | None:
    """The filter as a checked dict (JSON text parsed first: the command line's and the environment's form);
    None for none or an empty one; ValueError saying what a filter takes otherwise."""
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(f"filter is not JSON: give {FILTER_HELP}") from None
    if not isinstance(value, Mapping):
        raise ValueError(f"filter must be {FILTER_HELP}; got {type(value).__name__}")
    if len(value) > MAX_FIELDS:
        raise ValueError(f"filter has {len(value)} fields; at most {MAX_FIELDS}")
    checked: Filter = {}
    for field, wanted in value.items():
        if not isinstance(field, str) or not FIELD.fullmatch(field):
            raise ValueError(
                f"filter field {str(field)[:70]!r}: a name is 1-64 letters, digits, _ or -, not starting with -"
            )
        if isinstance(wanted, list | tuple):
            if not 1 <= len(wanted) <= MAX_VALUES:
                raise ValueError(f"filter field {field!r}: a list holds 1-{MAX_VALUES} values, got {len(wanted)}")
            checked[field] = [_value(field, one) for one in wanted]
        else:
            checked[field] = _value(field, wanted)
    return checked or None


def _same(a: Any, b: Value) -> bool:
    """Equal and of one kind: text to text, true/false to true/false, numbers to numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return isinstance(a, int | float) and a == b


def matches(metadata: Mapping[str, Any] | None, wanted: Filter | None) -> bool:
    """Whether a document's metadata satisfies the filter (every field; a list: any of its values)."""
    if not wanted:
        return True
    metadata = metadata or {}
    for field, value in wanted.items():
        if field not in metadata:
            return False
        choices = value if isinstance(value, list) else [value]
        if not any(_same(metadata[field], choice) for choice in choices):
            return False
    return True


def _choices(value: Value | list[Value]) -> list[Value]:
    return value if isinstance(value, list) else [value]


def combine(first: Filter | None, second: Filter | None) -> Filter | None:
    """A filter matching what both match: their fields together, a field of both narrowed to the values both
    admit; `Contradiction` naming the field when none is (such a filter matches nothing)."""
    combined: Filter = dict(first or {})
    for field, value in (second or {}).items():
        if field not in combined:
            combined[field] = value
            continue
        both: list[Value] = []
        for a in _choices(combined[field]):
            if any(_same(a, b) for b in _choices(value)) and not any(_same(a, kept) for kept in both):
                both.append(a)
        if not both:
            raise Contradiction(f"filter field {field!r}: no value is both {combined[field]!r} and {value!r}")
        combined[field] = both[0] if len(both) == 1 else both
    return combined or None


def restrict(wanted: Filter | None, field: str, value: str) -> Filter:
    """`wanted` ANDed with `{field: value}` (the server's per-user scope): a request's own condition on `field`
    must admit `value`, and is narrowed to it; ValueError when it does not."""
    try:
        return combine(wanted, {field: value}) or {field: value}
    except Contradiction:
        raise ValueError(
            f"filter field {field!r} is set by the server to your user name: leave it out of your filter"
        ) from None


def chroma_where(wanted: Filter | None) -> dict | None:
    """The filter as a Chroma `where`: `{"f": {"$eq": v}}`, `{"f": {"$in": [...]}}`, several under `$and`."""
    if not wanted:
        return None
    clauses = [
        {field: {"$in": value} if isinstance(value, list) else {"$eq": value}} for field, value in wanted.items()
    ]
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def qdrant_filter(wanted: Filter | None, payload_key: str = "metadata"):
    """The filter as a Qdrant `models.Filter` on `<payload_key>.<field>` (LangChain's Qdrant keeps the metadata
    there): a text, whole number or true/false by `MatchValue`, a number by an exact `Range`, a list by any of
    its values (`MatchAny` when all are text or all whole numbers)."""
    from qdrant_client import models

    if not wanted:
        return None

    def one(key: str, value: Value):
        if isinstance(value, float):  # Qdrant matches only text, whole numbers and booleans exactly
            return models.FieldCondition(key=key, range=models.Range(gte=value, lte=value))
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))

    must = []
    for field, value in wanted.items():
        key = f"{payload_key}.{field}" if payload_key else field
        if not isinstance(value, list):
            must.append(one(key, value))
        elif all(isinstance(v, str) for v in value):
            must.append(models.FieldCondition(key=key, match=models.MatchAny(any=[str(v) for v in value])))
        elif all(type(v) is int for v in value):  # not true/false, which are ints to Python
            must.append(models.FieldCondition(key=key, match=models.MatchAny(any=[int(v) for v in value])))
        else:
            must.append(models.Filter(should=[one(key, v) for v in value]))
    return models.Filter(must=must)


__all__ = [
    "FILTER_HELP",
    "Contradiction",
    "check_filter",
    "chroma_where",
    "combine",
    "matches",
    "qdrant_filter",
    "restrict",
]
