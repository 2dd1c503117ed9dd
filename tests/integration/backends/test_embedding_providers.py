"""Embeddings by name or object: '<provider>:<model>' through LangChain's init_embeddings, each
provider's real LangChain class talking to a fake server on 127.0.0.1 that speaks its API (OpenAI,
Ollama); a collection remembers the embeddings it was filled with; an application's own Embeddings
object and its own vector store work end to end."""

from __future__ import annotations

import pytest
from fastapi import FastAPI, Request
from langchain_core.vectorstores import InMemoryVectorStore

from crag.graphs.crag import graph
from crag.indexing.pipeline import ingest
from crag.models.embeddings import embeddings
from crag.search import store as store_module
from crag.search.store import StoreError, open_existing, open_store, retrieve
from crag.settings import Context
from tests.fakes import DOCS, WordEmbeddings, fake_context, word_vector
from tests.servers import point_providers_at, running

DOCUMENTS = {
    "anna.txt": "Anna Berg was a Swedish painter. She painted the sea near Stockholm.",
    "carl.txt": "Carl Dahl is a footballer from Oslo. He plays as a striker.",
    "oslo.txt": "Oslo is the capital of Norway and lies at the head of a fjord.",
}


def fake_embedders(seen: list) -> FastAPI:
    """OpenAI's /v1/embeddings and Ollama's /api/embed, answering with `word_vector`s."""
    app = FastAPI()

    @app.post("/v1/embeddings")
    async def openai(request: Request):
        body = await request.json()
        seen.append(("/v1/embeddings", body))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return {
            "object": "list",
            "model": body["model"],
            "data": [{"object": "embedding", "index": i, "embedding": word_vector(t)} for i, t in enumerate(texts)],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }

    @app.post("/api/embed")
    async def ollama(request: Request):
        body = await request.json()
        seen.append(("/api/embed", body))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return {"model": body["model"], "embeddings": [word_vector(t) for t in texts]}

    return app


@pytest.fixture(scope="module")
def server():
    seen: list = []
    with running(fake_embedders(seen)) as url:
        yield url, seen


@pytest.fixture()
def providers_at(server, monkeypatch):
    url, seen = server
    seen.clear()
    point_providers_at(monkeypatch, url)
    store_module._STORES.clear()
    yield seen
    store_module._STORES.clear()


@pytest.fixture()
def corpus(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCUMENTS.items():
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize(
    ("spec", "path"),
    [("openai:text-embedding-3-small", "/v1/embeddings"), ("ollama:nomic-embed-text", "/api/embed")],
)
def test_each_provider_embeds_through_its_own_api(providers_at, spec, path):
    model = embeddings(spec)
    assert model.embed_query("Who painted the sea?") == pytest.approx(word_vector("Who painted the sea?"))
    ((seen_path, body),) = providers_at
    assert seen_path == path and body["model"] == spec.split(":", 1)[1]
    assert body["input"] in ("Who painted the sea?", ["Who painted the sea?"])  # text, not token ids


def test_a_collection_filled_through_a_provider_is_searched_with_it(providers_at, corpus, tmp_path):
    spec = "openai:text-embedding-3-small"
    store = open_store(persist_dir=tmp_path / "db", collection="hosted", embedder=spec)
    report = ingest([corpus], store, progress=False)
    assert report.added == 3
    store_module._STORES.clear()  # as a later process would open it
    found = retrieve(open_existing(persist_dir=tmp_path / "db", collection="hosted", embedder=spec), "painter", k=1)
    assert found[0].metadata["title"] == "anna"
    assert {path for path, _ in providers_at} == {"/v1/embeddings"}


def test_other_embeddings_than_the_collections_are_refused_by_name(providers_at, corpus, tmp_path):
    store = open_store(persist_dir=tmp_path / "db", collection="hosted", embedder="ollama:nomic-embed-text")
    ingest([corpus], store, progress=False)
    store_module._STORES.clear()
    with pytest.raises(
        StoreError, match="embedded with 'ollama:nomic-embed-text', not 'openai:text-embedding-3-small'"
    ):
        open_existing(persist_dir=tmp_path / "db", collection="hosted", embedder="openai:text-embedding-3-small")
    context = Context(chroma_dir=str(tmp_path / "db"), collection="hosted", embeddings="local")
    with pytest.raises(StoreError, match="--embeddings ollama:nomic-embed-text"):
        graph.invoke({"question": "Who painted the sea?"}, context=context)


def test_unrecorded_embeddings_of_another_size_are_a_clear_error(corpus, tmp_path):
    """A collection filled by an Embeddings object records no name; asked with the shipped 384-dimensional
    model, Chroma's dimension error becomes one that says what to do."""
    store_module._STORES.clear()
    store = open_store(persist_dir=tmp_path / "db", collection="own", embedder=WordEmbeddings())
    ingest([corpus], store, progress=False)
    store_module._STORES.clear()
    with pytest.raises(StoreError, match="filled with other embeddings"):
        retrieve(open_existing(persist_dir=tmp_path / "db", collection="own"), "painter")
    store_module._STORES.clear()


def test_the_graph_answers_from_a_collection_with_an_embeddings_object(corpus, tmp_path):
    store_module._STORES.clear()
    own = WordEmbeddings()
    ingest([corpus], open_store(persist_dir=tmp_path / "db", collection="own", embedder=own), progress=False)
    context = fake_context()
    context.retriever, context.chroma_dir, context.collection, context.embeddings = (
        None,
        str(tmp_path / "db"),
        "own",
        own,
    )
    result = graph.invoke({"question": "What is Anna Berg's occupation?"}, context=context)
    assert result["action"] == "correct" and "painter" in result["answer"]
    assert result["documents"][0].metadata["title"] == "anna" and own.calls > 0
    store_module._STORES.clear()


def test_the_graph_answers_from_an_applications_vector_store():
    store = InMemoryVectorStore(WordEmbeddings())
    store.add_documents(list(DOCS))
    context = fake_context()
    context.retriever, context.k = store, 1
    result = graph.invoke({"question": "What is Anna Berg's occupation?"}, context=context)
    assert [d.metadata["title"] for d in result["documents"]] == ["Anna Berg"]  # k respected
    assert result["action"] == "correct" and "painter" in result["answer"]
