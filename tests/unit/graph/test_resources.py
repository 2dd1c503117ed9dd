"""`crag.resources`: settings become objects once per process, not once per call."""

from __future__ import annotations

from crag import resources
from crag.backends import embeddings as embeddings_module
from crag.context import Context
from tests.fakes import WordEmbeddings


def test_strip_embedder_builds_a_named_model_once_and_passes_objects_through(monkeypatch):
    built = []

    def fake_embeddings(spec):
        built.append(spec)
        return WordEmbeddings()

    monkeypatch.setattr(embeddings_module, "embeddings", fake_embeddings)
    embeddings_module._SHARED.clear()
    named = Context(embeddings="openai:text-embedding-3-small")
    first, second = resources.strip_embedder(named), resources.strip_embedder(named)
    assert built == ["openai:text-embedding-3-small"] and first.__self__ is second.__self__

    own = WordEmbeddings()
    assert resources.strip_embedder(Context(embeddings=own)).__self__ is own
    assert resources.strip_embedder(Context(embeddings="openai:x", strip_set_weight=0)) is None
    assert built == ["openai:text-embedding-3-small"]  # an object is not built, and weight 0 builds nothing
    embeddings_module._SHARED.clear()
