"""The settings' types: what text gives a setting (the command line, a request, the schemas) leaves out the
ready objects it also takes, and a type checker accepts the objects the documentation passes."""

from __future__ import annotations

import textwrap
import typing
from pathlib import Path

import pytest
from langchain_core.documents import Document
from pydantic import TypeAdapter

from crag.cli.settings import on_command_line
from crag.graphs import build
from crag.serve.service import SAFE_SETTINGS
from crag.settings import Context, DocumentRetriever, DocumentScorer, WebBackend, WebSearcher, annotation, settings
from tests.fakes import FakeEvaluator, FakeWeb, ListRetriever, WordEmbeddings, fake_chat

OBJECT_SETTINGS = ("embeddings", "retriever", "chat_model", "rewrite_model", "evaluator", "web_backend")


def test_the_text_a_setting_takes_leaves_out_the_objects_it_also_takes():
    assert annotation("chat_model") is str and annotation("embeddings") is str
    assert annotation("rewrite_model") == str | None and annotation("evaluator") == str | None
    assert annotation("web_backend") == typing.Optional[WebBackend]  # noqa: UP045 (as get_type_hints gives it)
    assert annotation("retriever") is type(None)
    # a request may choose the web backend by name, as before it also took objects
    assert SAFE_SETTINGS["web_backend"][0] == typing.Optional[WebBackend]  # noqa: UP045
    # every setting is an option of the commands but the one that takes nothing but an object
    assert [spec.name for spec in settings() if not on_command_line(spec)] == ["retriever"]


def test_the_context_schema_studio_shows_has_the_text_settings_and_no_objects():
    schema = build("crag").compile().get_context_jsonschema()
    assert schema == TypeAdapter(Context).json_schema()
    fields = schema["properties"]
    assert "retriever" not in fields  # Python only: nothing a form could send
    assert fields["chat_model"]["type"] == "string" and fields["embeddings"]["type"] == "string"
    assert fields["evaluator"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert fields["web_backend"]["anyOf"][0]["enum"] == list(typing.get_args(WebBackend))
    assert all(fields[name]["objects"] for name in OBJECT_SETTINGS if name in fields)


def test_the_protocols_are_what_the_code_calls_on_the_objects():
    documents = [Document("Paris is the capital of France.")]
    assert isinstance(FakeEvaluator({}), DocumentScorer)
    assert isinstance(ListRetriever(documents=documents), DocumentRetriever)
    assert isinstance(FakeWeb(documents), WebSearcher) and not isinstance(FakeWeb(documents), DocumentScorer)
    objects = {
        "chat_model": fake_chat("Paris."),
        "embeddings": WordEmbeddings(),
        "evaluator": FakeEvaluator({}),
        "web_backend": FakeWeb(documents),
        "retriever": ListRetriever(documents=documents),
    }
    ctx = Context(**objects)
    assert all(getattr(ctx, name) is value for name, value in objects.items())


@pytest.mark.slow  # mypy reads langchain-core and crag: about a minute of CPU, cold
def test_a_type_checker_accepts_the_objects_the_docs_pass_and_refuses_others(tmp_path: Path, monkeypatch):
    from mypy import api

    program = tmp_path / "app.py"
    program.write_text(
        textwrap.dedent(
            """\
            from langchain_core.documents import Document
            from langchain_core.embeddings import FakeEmbeddings
            from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
            from langchain_core.vectorstores import InMemoryVectorStore

            from crag.settings import Context


            class Scorer:
                def invoke(self, input: dict, config: object = None) -> list[float]:
                    return [0.5 for _ in input["documents"]]


            class Web:
                def search(self, query: str, k: int) -> list[dict[str, str]]:
                    return [{"title": "Paris", "text": "Paris is the capital of France."}][:k]


            store = InMemoryVectorStore(FakeEmbeddings(size=8))
            Context(
                chat_model=GenericFakeChatModel(messages=iter([])),
                rewrite_model="local:tiny",
                embeddings=FakeEmbeddings(size=8),
                evaluator=Scorer(),
                web_backend=Web(),
                retriever=store.as_retriever(),
            )
            Context(retriever=store, web_backend="wikipedia", chat_model="openai:gpt-4o-mini")
            Context(chat_model=3)
            Context(web_backend="bing")
            Context(retriever=[Document("a list is no retriever")])
            """
        )
    )
    lines = program.read_text().splitlines()
    refused = [
        str(n)
        for n, line in enumerate(lines, 1)
        if line.startswith(("Context(chat_model=3", "Context(web", "Context(retriever=["))
    ]
    # this checkout's crag, not the installed one; no configuration (crag's own modules are `make lint`'s)
    monkeypatch.setenv("MYPYPATH", str(Path(__file__).resolve().parents[2]))
    (tmp_path / "mypy.ini").write_text("[mypy]\n")
    options = ["--config-file", str(tmp_path / "mypy.ini"), "--python-version", "3.11", "--follow-imports", "silent"]
    out, _, status = api.run([str(program), *options, "--cache-dir", str(tmp_path / "cache")])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1 and [line.split(":")[1] for line in errors] == refused, out
    assert '"chat_model"' in errors[0] and '"web_backend"' in errors[1] and '"retriever"' in errors[2]
