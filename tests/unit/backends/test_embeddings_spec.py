"""Embeddings by name: what each name means, what a collection records, and the errors for bad ones."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from crag.models.embeddings import (
    EmbeddingError,
    LocalEmbeddings,
    embeddings,
    embeddings_name,
)
from crag.runtime.extras import MissingExtra
from crag.search.store import StoreError, check_embeddings
from crag.settings import Context
from tests.fakes import WordEmbeddings


def test_names_are_normalised_and_objects_have_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert embeddings_name(" local ") == "local"
    assert embeddings_name("local:model") == f"local:{tmp_path / 'model'}"  # a folder is recorded absolute
    assert embeddings_name("openai:text-embedding-3-small") == "openai:text-embedding-3-small"
    assert embeddings_name(WordEmbeddings()) is None
    for bad in ("", "   ", None, 3):
        with pytest.raises(ValueError, match="embeddings must be"):
            embeddings_name(bad)


def test_default_is_local_unless_the_environment_says_otherwise(monkeypatch):
    monkeypatch.delenv("CRAG_EMBEDDINGS", raising=False)
    assert Context().embeddings == "local"
    monkeypatch.setenv("CRAG_EMBEDDINGS", "ollama:nomic-embed-text")
    assert Context().embeddings == "ollama:nomic-embed-text"


def test_each_name_gives_its_model_without_loading_it(tmp_path):
    own = WordEmbeddings()
    assert embeddings(own) is own
    assert isinstance(embeddings("local"), LocalEmbeddings) and embeddings("local").model_path is None
    assert embeddings(f"local:{tmp_path}").model_path == str(tmp_path)
    with pytest.raises(EmbeddingError, match="is not a folder"):
        embeddings(f"local:{tmp_path / 'missing'}")


def test_bad_names_and_missing_keys_or_packages_are_one_line_errors(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="'openai:text-embedding-3-small' needs OPENAI_API_KEY"):
        embeddings("openai:text-embedding-3-small")
    with pytest.raises(ValueError, match="unknown embeddings 'minilm'"):
        embeddings("minilm")
    with pytest.raises(ValueError, match="cannot create embeddings 'nonsense:x'"):
        embeddings("nonsense:x")
    monkeypatch.setitem(sys.modules, "langchain_ollama", None)  # as if not installed
    with pytest.raises(MissingExtra, match=r"\[ollama\]"):
        embeddings("ollama:nomic-embed-text")


def test_a_collection_is_checked_against_the_embeddings_it_recorded():
    check_embeddings("local", "local", "kb")
    check_embeddings(None, "openai:text-embedding-3-small", "kb")  # filled before names were recorded: trusted
    check_embeddings("local", WordEmbeddings(), "kb")  # an object cannot be named: trusted
    with pytest.raises(StoreError, match="'kb' was embedded with 'local', not 'ollama:x': ask with --embeddings local"):
        check_embeddings("local", "ollama:x", "kb")


def test_context_refuses_what_cannot_embed_or_retrieve():
    with pytest.raises(ValueError, match="embeddings must be"):
        Context(embeddings="  ")
    with pytest.raises(ValueError, match="embeddings must be"):
        Context(embeddings=object())
    with pytest.raises(ValueError, match="retriever must be a LangChain retriever or vector store, got PosixPath"):
        Context(retriever=Path("kb"))  # a folder is not a retriever
    assert Context(embeddings=WordEmbeddings()).embeddings.dims == 64
