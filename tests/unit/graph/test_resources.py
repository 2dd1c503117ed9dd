"""`crag.resources`: settings become objects once per process, not once per call."""

from __future__ import annotations

import pytest
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore

from crag import resources
from crag.models import embeddings as embeddings_module
from crag.passages import passage
from crag.settings import Context
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


def test_a_user_retriever_or_vector_store_gives_each_text_once():
    copies = [passage("Apache License 2.0", source=f"{n}/LICENSE") for n in range(3)]
    other = [passage(f"Chapter {n} text.", source=f"ch{n}.html") for n in range(4)]
    retriever = RunnableLambda(lambda q: [*copies, *other])
    found = resources.retrieve(Context(retriever=retriever, k=3), "licence")
    assert [d.metadata["source"] for d in found] == ["0/LICENSE", "ch0.html", "ch1.html"]

    store = InMemoryVectorStore(WordEmbeddings())
    store.add_documents([*copies, *other])
    found = resources.retrieve(Context(retriever=store, k=3), "Apache License")
    assert len(found) == 3 and [d.page_content for d in found].count("Apache License 2.0") == 1


def test_a_follow_ups_rewrite_may_be_as_long_as_the_question_and_no_longer():
    """A long question's rewrite must fit whole (24 tokens, a query's budget, cut them mid-sentence), and a
    short one's budget stays short (a fixed 160 tripled SmolLM2's time a follow-up)."""
    short, long = "Where was she born?", "How can I cut a long sentence down to about 40 characters " * 4
    assert 24 < resources.condense_tokens(short) < 48
    assert resources.condense_tokens(long) > len(long.split()) * 1.3  # more tokens than its words
    model = resources.chat(Context(chat_model="local:tiny"), "condense", reply_tokens=resources.condense_tokens(short))
    assert model.max_tokens == resources.condense_tokens(short) and model.lane == "condense"
    assert resources.chat(Context(chat_model="local:tiny"), "rewrite").max_tokens == 24


def test_a_run_checks_the_models_it_names_when_it_starts_whatever_the_question(tmp_path):
    """Before: a question whose documents were all rejected never reached the chat model, so a missing model
    file answered "I don't know" and exit code 0; now the run fails at once, naming the file."""
    from crag.graphs.crag import graph
    from tests.fakes import FakeEvaluator

    retriever = RunnableLambda(lambda q: [])  # nothing retrieved: the answer would never ask the model
    missing = tmp_path / "missing.gguf"
    ctx = Context(chat_model=f"local:{missing}", evaluator=FakeEvaluator({}), retriever=retriever)
    with pytest.raises(ValueError, match="no file at"):
        graph.invoke({"question": "Who?"}, context=ctx)
