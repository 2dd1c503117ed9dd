"""The wikipedia and searxng settings: their URLs in Context (and from the environment), checked when
configured; the server's per-request choice of engine, its URLs fixed; the one retry; the passages a
page's plain text becomes."""

from __future__ import annotations

import dataclasses

import pytest

from crag.passages import passage
from crag.search.fetch import MIN_WORDS, text_passages
from crag.search.searxng import SearxngSearch
from crag.search.web_base import TransientWebSearchError, WebSearchError, retry_transient
from crag.search.wikipedia import DEFAULT_API_URL, WikipediaSearch
from crag.serve.service import SAFE_SETTINGS, context_for
from crag.settings import Context
from crag.thresholds import PRESETS


@pytest.fixture(autouse=True)
def no_environment(monkeypatch):
    for name in ("CRAG_WEB_BACKEND", "CRAG_WEB_INDEX", "CRAG_WIKIPEDIA_URL", "CRAG_SEARXNG_URL"):
        monkeypatch.delenv(name, raising=False)


def test_wikipedia_is_english_wikipedia_unless_configured(monkeypatch):
    assert Context(web_backend="wikipedia").wikipedia_url == DEFAULT_API_URL == "https://en.wikipedia.org/w/api.php"
    monkeypatch.setenv("CRAG_WIKIPEDIA_URL", "https://de.wikipedia.org/w/api.php")
    assert Context(web_backend="wikipedia").wikipedia_url == "https://de.wikipedia.org/w/api.php"
    assert Context(wikipedia_url=" http://127.0.0.1:8080/w/api.php ", web_backend="wikipedia").wikipedia_url == (
        "http://127.0.0.1:8080/w/api.php"
    )


def test_searxng_needs_its_url(monkeypatch):
    with pytest.raises(ValueError, match="the searxng web backend needs searxng_url .* CRAG_SEARXNG_URL"):
        Context(web_backend="searxng")
    monkeypatch.setenv("CRAG_SEARXNG_URL", "http://127.0.0.1:8888")
    assert Context(web_backend="searxng").searxng_url == "http://127.0.0.1:8888"
    monkeypatch.setenv("CRAG_WEB_BACKEND", "searxng")
    assert Context().web_backend == "searxng"


@pytest.mark.parametrize(
    "settings, match",
    [
        ({"web_backend": "searxng", "searxng_url": "127.0.0.1:8888"}, "searxng_url must be an http or https URL"),
        ({"web_backend": "searxng", "searxng_url": "file:///etc/passwd"}, "searxng_url must be an http or https URL"),
        ({"web_backend": "wikipedia", "wikipedia_url": "https:///w/api.php"}, "wikipedia_url must be an http"),
        ({"web_backend": "wikipedia", "wikipedia_url": "https://u:secret@wiki.example/api.php"}, "credentials"),
    ],
)
def test_a_bad_engine_url_is_refused_when_configured(settings, match):
    with pytest.raises(ValueError, match=match) as info:
        Context(**settings)
    assert "secret" not in str(info.value)


def test_an_unused_engine_url_is_not_checked():
    assert Context(web_backend="none", searxng_url="not a url", wikipedia_url="nor this").web_backend == "none"


def test_the_engines_check_their_urls_too():
    assert SearxngSearch("http://127.0.0.1:8888/").endpoint == "http://127.0.0.1:8888/search"
    assert SearxngSearch("https://searx.example/searx/search").endpoint == "https://searx.example/searx/search"
    assert WikipediaSearch().page_url("Ada Lovelace") == "https://en.wikipedia.org/wiki/Ada_Lovelace"
    with pytest.raises(ValueError, match="searxng_url"):
        SearxngSearch("ftp://searx.example")
    with pytest.raises(ValueError, match="positive"):
        WikipediaSearch(timeout=0)
    with pytest.raises(ValueError, match="empty"):
        WikipediaSearch().search("  ")
    with pytest.raises(ValueError, match="at least 1"):
        SearxngSearch("http://127.0.0.1:8888").search("q", k=0)


def test_a_request_may_choose_the_engine_but_not_its_url():
    assert "wikipedia_url" not in SAFE_SETTINGS and "searxng_url" not in SAFE_SETTINGS
    server = Context(wikipedia_url="http://wiki.internal/w/api.php")
    chosen = context_for(server, {"web_backend": "wikipedia"}, PRESETS["popqa"])
    assert chosen.web_backend == "wikipedia" and chosen.wikipedia_url == "http://wiki.internal/w/api.php"
    with pytest.raises(ValueError, match="needs searxng_url"):  # the server has no instance: the request is refused
        context_for(server, {"web_backend": "searxng"}, PRESETS["popqa"])
    with_instance = dataclasses.replace(server, searxng_url="http://127.0.0.1:8888")
    assert context_for(with_instance, {"web_backend": "searxng"}, PRESETS["popqa"]).searxng_url == (
        "http://127.0.0.1:8888"
    )


def failing(*errors):
    """A call that raises `errors` in turn, then returns "done"; and the list of its calls."""
    calls: list = []

    def call():
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return "done"

    return call, calls


def test_one_retry_on_a_transient_failure_and_none_on_others():
    call, calls = failing(TransientWebSearchError("timed out"))
    assert retry_transient(call, wait=0) == "done" and len(calls) == 2
    call, calls = failing(WebSearchError("HTTP 404"))
    with pytest.raises(WebSearchError, match="HTTP 404"):
        retry_transient(call, wait=0)
    assert len(calls) == 1
    call, calls = failing(TransientWebSearchError("HTTP 503"), TransientWebSearchError("HTTP 502"))
    with pytest.raises(TransientWebSearchError, match="HTTP 502"):
        retry_transient(call, wait=0)
    assert len(calls) == 2


def test_plain_page_text_becomes_titled_paragraphs():
    long = "word " * MIN_WORDS
    text = f"Early life\n{long.strip()}\n\n  \nShort line.\n{long.strip()} again"
    assert text_passages(text, "T", "https://x.org/T") == [
        passage(f"T: {long.strip()}", title="T", source="https://x.org/T"),
        passage(f"T: {long.strip()} again", title="T", source="https://x.org/T"),
    ]
    # a stub article, too short for any paragraph, is one passage whole
    assert text_passages("Kowalewo is a village.\nIn Poland.", "Kowalewo", "u") == [
        passage("Kowalewo: Kowalewo is a village. In Poland.", title="Kowalewo", source="u")
    ]
    assert text_passages(" \n ", "T", "u") == []


@pytest.mark.parametrize("command", ["ask", "serve"])
def test_crag_ask_and_serve_pass_the_engine_urls_to_context(command):
    from typer.testing import CliRunner

    from crag.cli.main import app

    question = ["What is Anna Berg's occupation?"] if command == "ask" else []
    missing = CliRunner().invoke(app, [command, *question, "--web-backend", "searxng"])
    assert missing.exit_code == 2 and "needs searxng_url" in missing.output
    bad = CliRunner().invoke(app, [command, *question, "--web-backend", "searxng", "--searxng-url", "ftp://x"])
    assert bad.exit_code == 2 and "searxng_url must be an http or https URL" in bad.output
    bad = CliRunner().invoke(app, [command, *question, "--web-backend", "wikipedia", "--wikipedia-url", "wiki"])
    assert bad.exit_code == 2 and "wikipedia_url must be an http or https URL" in bad.output
