"""`crag serve --filter-by-user owner` on a real uvicorn server (127.0.0.1) with two users, fake models and a
Qdrant store (in memory) holding each user's documents: every route retrieves only the caller's documents,
a request's filter narrows within them and cannot lift the scope (422), and the option needs users."""

from __future__ import annotations

import httpx
import pytest
from langchain_core.documents import Document
from typer.testing import CliRunner

from crag.serve.app import ServerSettings, create_app
from tests.fakes import WordEmbeddings, fake_context
from tests.integration.serving.test_identities import ALICE, BOB, QUESTION, ask, output

DOCUMENTS = [
    Document("Anna Berg was a Swedish painter. Alice's notes.", metadata={"owner": "alice", "lang": "en"}),
    Document("Anna Berg malte das Meer. Alices Notizen.", metadata={"owner": "alice", "lang": "de"}),
    Document("Anna Berg was a painter of harbours. Bob's notes.", metadata={"owner": "bob", "lang": "en"}),
]


@pytest.fixture()
def keys_file(tmp_path):
    file = tmp_path / "keys"
    file.write_text(f"alice {ALICE['X-API-Key']}\nbob {BOB['Authorization'].split()[1]}\n")
    file.chmod(0o600)
    return file


@pytest.fixture()
def scoped(serve, keys_file):
    from langchain_qdrant import QdrantVectorStore

    store = QdrantVectorStore.from_documents(DOCUMENTS, WordEmbeddings(), location=":memory:", collection_name="kb")
    context = fake_context(retriever=store, k=10)
    yield serve(keys_file=keys_file, context=context, filter_by_user="owner", warm_up=False)
    store.client.close()


def owners(answer: dict) -> list[str]:
    return sorted(d["metadata"]["owner"] for d in answer["documents"])


def with_filter(url: str, who: dict, wanted: dict, path: str = "invoke") -> httpx.Response:
    body = {"input": {"question": QUESTION}, "config": {"configurable": {"filter": wanted}}}
    return httpx.post(f"{url}/crag/{path}", json=body, headers=who, timeout=30)


@pytest.mark.parametrize("path", ["invoke", "stream", "batch"])
def test_each_user_retrieves_only_their_own_documents(scoped, path):
    assert owners(output(ask(scoped, ALICE, QUESTION, path=path), path)) == ["alice", "alice"]
    assert owners(output(ask(scoped, BOB, QUESTION, path=path), path)) == ["bob"]


def test_a_request_filter_narrows_within_the_users_documents_and_cannot_lift_the_scope(scoped):
    german = output(with_filter(scoped, ALICE, {"lang": "de"}))
    assert [d["metadata"]["lang"] for d in german["documents"]] == ["de"]
    both = output(with_filter(scoped, ALICE, {"owner": ["alice", "bob"]}))
    assert owners(both) == ["alice", "alice"]
    for wanted in ({"owner": "bob"}, {"owner": ["bob", "carol"]}):
        refused = with_filter(scoped, ALICE, wanted)
        assert refused.status_code == 422 and "set by the server to your user name" in refused.text
        assert "Bob's notes" not in refused.text
    unknown = with_filter(scoped, ALICE, {"$or": [{"owner": "bob"}]})
    assert unknown.status_code == 422 and "a name is 1-64" in unknown.text
    body = {"inputs": [{"question": QUESTION}] * 2, "config": [{}, {"configurable": {"filter": {"owner": "bob"}}}]}
    batch = httpx.post(f"{scoped}/crag/batch", json=body, headers=ALICE, timeout=30)
    assert batch.status_code == 422 and "Bob's notes" not in batch.text


def test_without_the_option_a_request_filter_is_applied_as_sent(serve, keys_file):
    from langchain_qdrant import QdrantVectorStore

    store = QdrantVectorStore.from_documents(DOCUMENTS, WordEmbeddings(), location=":memory:", collection_name="kb")
    url = serve(keys_file=keys_file, context=fake_context(retriever=store, k=10), warm_up=False)
    assert owners(output(ask(url, ALICE, QUESTION))) == ["alice", "alice", "bob"]
    assert owners(output(with_filter(url, ALICE, {"owner": "bob"}))) == ["bob"]


def test_the_option_needs_users_and_a_field_a_filter_can_name(keys_file):
    with pytest.raises(ValueError, match="needs users"):
        create_app(ServerSettings(filter_by_user="owner", api_key=None, keys_file=None, warm_up=False))
    with pytest.raises(ValueError, match="a name is 1-64"):
        create_app(ServerSettings(filter_by_user="metadata.owner", keys_file=keys_file, warm_up=False))
    from crag.cli.main import app

    said = CliRunner().invoke(
        app, ["serve", "--filter-by-user", "owner"], env={"CRAG_API_KEY": "", "CRAG_API_KEYS": ""}
    )
    assert said.exit_code != 0 and "--filter-by-user owner needs users" in said.output
