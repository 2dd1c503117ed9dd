"""Metadata filters (`crag.search.filters`): untrusted input checked (property-based: anything that is not a
filter is a ValueError naming what a filter takes, never another error), the portable form said in Chroma's and
Qdrant's words, combined filters matching what both match, and `retrieve` filtering each kind of retriever."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from qdrant_client import models

from crag import resources
from crag.search.filters import (
    MAX_FIELDS,
    MAX_TEXT,
    MAX_VALUES,
    Contradiction,
    check_filter,
    chroma_where,
    combine,
    matches,
    qdrant_filter,
    restrict,
)
from crag.settings import Context, check
from tests.fakes import ListRetriever, WordEmbeddings

FIELDS = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,10}", fullmatch=True)
VALUES = st.one_of(
    st.text(max_size=20), st.integers(-(10**6), 10**6), st.booleans(), st.floats(allow_nan=False, allow_infinity=False)
)
FILTERS = st.dictionaries(FIELDS, st.one_of(VALUES, st.lists(VALUES, min_size=1, max_size=4)), max_size=4)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
METADATA = st.dictionaries(FIELDS, VALUES, max_size=5)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_any_json_is_a_filter_or_a_value_error(value):
    try:
        checked = check_filter(value)
    except ValueError as exc:
        assert str(exc).startswith("filter")
        return
    assert checked is None or isinstance(checked, dict)
    for field, wanted in (checked or {}).items():
        assert 1 <= len(field) <= 64 and not field.startswith(("-", "$"))
        for one in wanted if isinstance(wanted, list) else [wanted]:
            assert isinstance(one, str | int | float | bool)


@settings(max_examples=200, deadline=None)
@given(FILTERS)
def test_a_valid_filter_is_kept_as_given_and_reads_back_from_json(wanted):
    assert check_filter(wanted) == (wanted or None)
    assert check_filter(json.dumps(wanted)) == (wanted or None)  # the command line's and the environment's form


@settings(max_examples=300, deadline=None)
@given(FILTERS, FILTERS, METADATA)
def test_a_combined_filter_matches_what_both_match(first, second, metadata):
    try:
        both = combine(first, second)
    except Contradiction:
        assert not (matches(metadata, first) and matches(metadata, second))
        return
    assert matches(metadata, both) == (matches(metadata, first) and matches(metadata, second))


USERS = st.sampled_from(["ann", "bo", "1"])


@settings(max_examples=300, deadline=None)
@given(FILTERS, st.none() | USERS | st.lists(USERS | VALUES, min_size=1, max_size=3), USERS, METADATA, USERS)
def test_the_users_scope_cannot_be_lifted(wanted, own, user, metadata, owner):
    if own is not None:
        wanted = {**wanted, "owner": own}  # the request names the scope's field itself
    metadata = {**metadata, "owner": owner}
    try:
        scoped = restrict(wanted, "owner", user)
    except ValueError as exc:
        assert "set by the server" in str(exc)
        return
    assert scoped["owner"] == user
    if matches(metadata, scoped):
        assert metadata["owner"] == user and matches(metadata, wanted)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("{not json", "not JSON"),
        ([["a", 1]], "JSON object"),
        ({"$or": "x"}, "a name is 1-64"),
        ({"a.b": "x"}, "a name is 1-64"),
        ({"": "x"}, "a name is 1-64"),
        ({"x" * 65: "x"}, "a name is 1-64"),
        ({"a": []}, f"1-{MAX_VALUES} values"),
        ({"a": list(range(MAX_VALUES + 1))}, f"1-{MAX_VALUES} values"),
        ({"a": None}, "text, a number or true/false"),
        ({"a": {"$ne": 1}}, "text, a number or true/false"),
        ({"a": [[1]]}, "text, a number or true/false"),
        ({"a": float("nan")}, "finite"),
        ({"a": "x" * (MAX_TEXT + 1)}, f"at most {MAX_TEXT} characters"),
        ({f"f{i}": i for i in range(MAX_FIELDS + 1)}, f"at most {MAX_FIELDS}"),
    ],
)
def test_a_bad_filter_is_refused_saying_why(value, said):
    with pytest.raises(ValueError, match=said):
        check("filter", value)


def test_the_setting_reads_json_from_the_environment_and_says_what_is_wrong(monkeypatch):
    monkeypatch.setenv("CRAG_FILTER", '{"lang": ["en", "de"]}')
    assert Context().filter == {"lang": ["en", "de"]}
    monkeypatch.setenv("CRAG_FILTER", "lang=en")
    with pytest.raises(ValueError, match="filter is not JSON"):
        Context()


def test_a_value_matches_only_values_of_its_kind():
    assert matches({"n": 1.0}, {"n": 1}) and matches({"n": 1}, {"n": [3, 1.0]})
    assert not matches({"n": True}, {"n": 1}) and not matches({"n": 1}, {"n": True})
    assert not matches({"n": "1"}, {"n": 1}) and not matches({}, {"n": 1})
    assert matches({"a": "x", "b": "y"}, {"a": ["x", "z"], "b": "y"}) and not matches({"a": "x"}, {"a": "x", "b": "y"})


def test_chroma_and_qdrant_say_the_same_filter():
    assert chroma_where({"a": "x"}) == {"a": {"$eq": "x"}}
    assert chroma_where({"a": "x", "b": [1, 2]}) == {"$and": [{"a": {"$eq": "x"}}, {"b": {"$in": [1, 2]}}]}
    assert chroma_where(None) is None and qdrant_filter(None) is None
    said = qdrant_filter({"a": "x", "b": [1, 2], "c": 0.5, "d": [True, "y"]})
    a, b, c, d = said.must
    assert a == models.FieldCondition(key="metadata.a", match=models.MatchValue(value="x"))
    assert b == models.FieldCondition(key="metadata.b", match=models.MatchAny(any=[1, 2]))
    assert c.range == models.Range(gte=0.5, lte=0.5)
    assert [one.match.value for one in d.should] == [True, "y"]


def test_restrict_narrows_a_request_filter_that_admits_the_user():
    assert restrict({"owner": ["ann", "bo"], "lang": "en"}, "owner", "ann") == {"owner": "ann", "lang": "en"}
    assert restrict(None, "owner", "ann") == {"owner": "ann"}
    with pytest.raises(ValueError, match="set by the server to your user name"):
        restrict({"owner": "bo"}, "owner", "ann")


MINE = [
    Document(page_content=f"Painter {i} painted the sea.", metadata={"owner": who, "title": f"P{i}"})
    for i, who in enumerate(["ann", "bo", "ann", "bo"])
]


def test_retrieve_filters_a_plain_retriever_after_it_returns():
    ctx = Context(retriever=ListRetriever(documents=MINE), filter={"owner": "ann"}, k=3)
    assert [d.metadata["owner"] for d in resources.retrieve(ctx, "painter")] == ["ann", "ann"]


def test_retrieve_filters_a_vector_store_and_its_retriever_in_the_search():
    store = InMemoryVectorStore.from_documents(MINE, WordEmbeddings())
    for source in (store, store.as_retriever(search_kwargs={"k": 4})):
        found = resources.retrieve(Context(retriever=source, filter={"owner": "bo"}, k=4), "Painter painted")
        assert sorted(d.page_content for d in found) == ["Painter 1 painted the sea.", "Painter 3 painted the sea."]


def test_the_command_line_says_what_is_wrong_with_a_filter_in_one_line():
    from typer.testing import CliRunner

    from crag.cli.main import app

    said = CliRunner().invoke(app, ["ask", "Who painted the sea?", "--filter", '{"lang": []}'])
    assert said.exit_code != 0 and "filter field 'lang': a list holds 1-32 values, got 0" in said.output
    assert "Traceback" not in said.output
