"""The wikipedia and searxng web backends against fake APIs on 127.0.0.1 (a MediaWiki and a SearxNG
instance in one FastAPI app): results, empty results, HTTP 5xx, timeouts, oversized and malformed
answers, and a whole graph run whose Incorrect route searches the fake Wikipedia."""

from __future__ import annotations

import asyncio
import re

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from langchain_core.runnables import RunnableLambda

from crag import resources
from crag.graphs.crag import graph
from crag.passages import passage, source_of, title_of
from crag.search.fetch import USER_AGENT
from crag.search.searxng import SearxngSearch
from crag.search.web import TransientWebSearchError, WebSearchError, search_web
from crag.search.wikipedia import WikipediaSearch
from crag.settings import Context
from tests.fakes import DOCS, EchoChat, FakeEvaluator
from tests.servers import running

LEAD = "Zofia Nowak (1901–1980) was a Polish mathematician who worked on topology and set theory in Warsaw."
BODY = [
    "Early life",  # a heading, as exsectionformat=plain writes it: too short to be a paragraph
    "Nowak was born in Kraków, where her father taught physics at the Jagiellonian University for many years.",
    "Work",
    "Her theorem on the compactness of product spaces is still taught in first courses on general topology.",
]
PAGES = {
    "Zofia Nowak": {"pageid": 11, "lead": LEAD, "text": "\n".join([LEAD, "", *BODY])},
    "Nowak (surname)": {
        "pageid": 12,
        "lead": "Nowak is the most common surname in Poland; it means 'new man' or 'newcomer' in Polish.",
        "text": "Nowak is the most common surname in Poland; it means 'new man' or 'newcomer' in Polish.",
    },
}
SEARX_RESULTS = [
    {"url": "https://example.org/zofia", "title": "Zofia Nowak, topologist", "content": "A Polish mathematician."},
    {"title": "no url: skipped", "content": "x"},
    {"url": "https://en.wikipedia.org/wiki/Zofia_Nowak", "title": "Zofia Nowak - Wikipedia", "content": "Lead."},
    {"url": "https://example.org/other", "title": "Other", "content": "Another page."},
]


def fake_apis(base: dict, fault: dict, seen: list) -> FastAPI:
    """A MediaWiki API (/w/api.php) and a SearxNG instance (/searx/search); `fault[name]` makes that
    API misbehave ("503", "slow", "huge", "malformed", "html", "maxlag", "badtoken", "403"); `seen`
    gets (path, query parameters, User-Agent) of every request."""
    app = FastAPI()

    async def misbehave(name: str) -> Response | None:
        kind = fault.get(name)
        if kind == "slow":
            await asyncio.sleep(1.5)
        elif kind in ("503", "403"):
            return JSONResponse({"error": "unavailable"}, status_code=int(kind))
        elif kind == "huge":
            return Response(b'{"batchcomplete": true, "pad": "' + b"x" * 50_000 + b'"}', media_type="application/json")
        elif kind == "malformed":
            return Response(b'{"batchcomplete": true, "query": {"pages": [', media_type="application/json")
        elif kind == "html":
            return Response(b"<html><body>Bad gateway</body></html>", media_type="text/html")
        elif kind in ("maxlag", "badtoken"):
            return JSONResponse({"error": {"code": kind, "info": f"{kind}: try again"}, "servedby": "mw1"})
        return None

    @app.get("/w/api.php")
    async def mediawiki(request: Request):
        params = dict(request.query_params)
        seen.append((request.url.path, params, request.headers.get("user-agent")))
        if response := await misbehave("wiki"):
            return response
        assert params["format"] == "json" and params["formatversion"] == "2" and params["explaintext"] == "1"
        if params.get("generator") == "search":
            words = set(re.findall(r"\w+", params["gsrsearch"]))
            found = [title for title in PAGES if words & set(title.split())][: int(params["gsrlimit"])]
            if not found:
                return {"batchcomplete": True}
            pages = [
                {
                    "pageid": PAGES[title]["pageid"],
                    "ns": 0,
                    "title": title,
                    "index": rank + 1,
                    "fullurl": f"{base['url']}/wiki/{title.replace(' ', '_')}",
                    "extract": PAGES[title]["lead"],
                }
                for rank, title in enumerate(found)
            ]
            return {"batchcomplete": True, "query": {"pages": pages[::-1]}}  # the API does not sort by rank
        title = params["titles"]
        if title not in PAGES or fault.get("page") == title:
            return {"batchcomplete": True, "query": {"pages": [{"ns": 0, "title": title, "missing": True}]}}
        return {
            "batchcomplete": True,
            "query": {"pages": [{"pageid": 1, "title": title, "extract": PAGES[title]["text"]}]},
        }

    @app.get("/searx/search")
    async def searxng(request: Request):
        params = dict(request.query_params)
        seen.append((request.url.path, params, request.headers.get("user-agent")))
        if response := await misbehave("searx"):
            return response
        if "nothing" in params["q"]:
            return {"query": params["q"], "number_of_results": 0, "results": [], "unresponsive_engines": []}
        return {"query": params["q"], "results": SEARX_RESULTS, "answers": [], "suggestions": []}

    @app.get("/page")
    async def page(request: Request):
        seen.append((request.url.path, {}, request.headers.get("user-agent")))
        return Response(f"<html><body><p>{LEAD}</p></body></html>", media_type="text/html")

    return app


@pytest.fixture(scope="module")
def server():
    base: dict = {}
    fault: dict = {}
    seen: list = []
    with running(fake_apis(base, fault, seen)) as url:
        base["url"] = url
        yield url, fault, seen


@pytest.fixture()
def apis(server):
    url, fault, seen = server
    fault.clear()
    seen.clear()
    return url, fault, seen


def wiki(url, **options) -> WikipediaSearch:
    return WikipediaSearch(f"{url}/w/api.php", retry_wait=0, **options)


def searx(url, **options) -> SearxngSearch:
    return SearxngSearch(f"{url}/searx", retry_wait=0, **options)


# --- wikipedia ------------------------------------------------------------------------------


def test_wikipedia_finds_pages_in_rank_order_with_their_lead_and_url(apis):
    url, _, seen = apis
    hits = wiki(url).search("Zofia Nowak mathematician", k=5)
    assert hits == [
        passage(LEAD, title="Zofia Nowak", source=f"{url}/wiki/Zofia_Nowak"),
        passage(PAGES["Nowak (surname)"]["lead"], title="Nowak (surname)", source=f"{url}/wiki/Nowak_(surname)"),
    ]
    ((path, params, agent),) = seen  # one request for the hits, leads and URLs
    assert path == "/w/api.php" and agent == USER_AGENT
    assert params["generator"] == "search" and params["gsrsearch"] == "Zofia Nowak mathematician"
    assert params["prop"] == "extracts|info" and params["exintro"] == "1" and params["inprop"] == "url"
    assert len(wiki(url).search("Zofia Nowak", k=1)) == 1


def test_wikipedia_through_search_web_has_no_wikipedia_prefix(apis):
    url, _, seen = apis
    hits = search_web("Zofia", backend="wikipedia", wikipedia_url=f"{url}/w/api.php", timeout=2)
    assert [title_of(h) for h in hits] == ["Zofia Nowak"]
    assert seen[0][1]["gsrsearch"] == "Zofia"


def test_wikipedia_pages_are_the_whole_text_in_paragraphs(apis):
    url, fault, seen = apis
    search = wiki(url)
    hits = search.search("Zofia Nowak")
    seen.clear()
    passages, errors = search.pages(hits)
    assert errors == []
    source = f"{url}/wiki/Zofia_Nowak"
    assert passages[:3] == [
        passage(f"Zofia Nowak: {LEAD}", title="Zofia Nowak", source=source),
        passage(f"Zofia Nowak: {BODY[1]}", title="Zofia Nowak", source=source),  # the headings are dropped
        passage(f"Zofia Nowak: {BODY[3]}", title="Zofia Nowak", source=source),
    ]
    assert sorted(p["titles"] for _, p, _ in seen) == ["Nowak (surname)", "Zofia Nowak"]  # a request per page
    assert all("exintro" not in p for _, p, _ in seen) and not any(path == "/wiki/Zofia_Nowak" for path, _, _ in seen)
    fault["page"] = "Zofia Nowak"  # gone between the search and the fetch: its lead stands in
    passages, errors = search.pages(hits)
    assert passages[0] == passage(f"Zofia Nowak: {LEAD}", title="Zofia Nowak", source=source)
    assert BODY[1] not in " ".join(p.page_content for p in passages)
    assert errors == [f"{source}: the API has no text for the page 'Zofia Nowak'; using the lead section"]


def test_wikipedia_finds_nothing(apis):
    url, _, _ = apis
    assert wiki(url).search("xylophone") == []
    assert wiki(url).pages([]) == ([], [])


@pytest.mark.parametrize(
    "fault, error, match, attempts",
    [
        ("503", TransientWebSearchError, "Wikipedia search failed: .* answered HTTP 503", 2),
        ("slow", TransientWebSearchError, "Wikipedia search failed: timed out after 0.3 s", 2),
        ("maxlag", TransientWebSearchError, "the API answered maxlag: maxlag: try again", 2),
        ("badtoken", WebSearchError, "the API answered badtoken", 1),
        ("huge", WebSearchError, "over the 10000-byte cap", 1),
        ("malformed", WebSearchError, "answered malformed JSON", 1),
        ("html", WebSearchError, "content type text/html is not JSON", 1),
    ],
)
def test_wikipedia_failures(apis, fault, error, match, attempts):
    url, faults, seen = apis
    faults["wiki"] = fault
    with pytest.raises(error, match=match) as info:
        wiki(url, timeout=0.3, max_bytes=10_000).search("Zofia Nowak")
    assert (type(info.value) is TransientWebSearchError) == (attempts == 2)
    assert len(seen) == attempts  # transient failures are retried once, the others not


def test_a_failing_page_leaves_its_lead_and_an_error(apis):
    url, faults, _ = apis
    search = wiki(url, timeout=0.3)
    hits = search.search("Zofia")
    faults["wiki"] = "slow"
    passages, errors = search.pages(hits)
    assert passages == [passage(f"Zofia Nowak: {LEAD}", title="Zofia Nowak", source=f"{url}/wiki/Zofia_Nowak")]
    [error] = errors
    assert error.startswith(f"{url}/wiki/Zofia_Nowak: timed out after 0.3 s") and error.endswith(
        "using the lead section"
    )


# --- searxng --------------------------------------------------------------------------------


def test_searxng_results_with_the_wikipedia_prefix(apis):
    url, _, seen = apis
    hits = search_web("Zofia Nowak", backend="searxng", searxng_url=f"{url}/searx/", k=2, timeout=2)
    # Wikipedia first (prefer_wikipedia); the hit without a URL is skipped; k counts the kept hits
    assert hits == [
        passage("Lead.", title="Zofia Nowak - Wikipedia", source="https://en.wikipedia.org/wiki/Zofia_Nowak"),
        passage("A Polish mathematician.", title="Zofia Nowak, topologist", source="https://example.org/zofia"),
    ]
    ((path, params, agent),) = seen
    assert path == "/searx/search" and agent == USER_AGENT
    assert params == {"q": "Wikipedia, Zofia Nowak", "format": "json", "categories": "general"}


def test_searxng_finds_nothing(apis):
    url, _, _ = apis
    assert searx(url).search("nothing at all") == []


@pytest.mark.parametrize(
    "fault, error, match, attempts",
    [
        ("503", TransientWebSearchError, "SearxNG search failed: .* answered HTTP 503", 2),
        ("slow", TransientWebSearchError, "SearxNG search failed: timed out after 0.3 s", 2),
        ("403", WebSearchError, r"HTTP 403 \(is json in the instance's search.formats", 1),
        ("huge", WebSearchError, "over the 10000-byte cap", 1),
        ("malformed", WebSearchError, "answered malformed JSON", 1),
        ("maxlag", WebSearchError, r"the answer has no result list \(keys: \['error', 'servedby'\]\)", 1),
    ],
)
def test_searxng_failures(apis, fault, error, match, attempts):
    url, faults, seen = apis
    faults["searx"] = fault
    with pytest.raises(error, match=match) as info:
        searx(url, timeout=0.3, max_bytes=10_000).search("Zofia Nowak")
    assert (type(info.value) is TransientWebSearchError) == (attempts == 2)
    assert len(seen) == attempts


def test_the_instance_is_trusted_its_results_are_not(apis):
    """The configured instance on 127.0.0.1 is searched, while a result pointing at 127.0.0.1 is
    fetched only with allow_private_fetch, as every search result is."""
    url, _, seen = apis
    context = Context(web_backend="searxng", searxng_url=f"{url}/searx", web_timeout=2)
    assert context.allow_private_fetch is False
    hits = resources.web_search(context, "Zofia Nowak")
    assert len(hits) == 3
    local = [passage("A Polish mathematician.", title="Zofia", source=f"{url}/page")]
    passages, errors = resources.fetch_pages(context, local)
    assert passages == [passage("Zofia: A Polish mathematician.", title="Zofia", source=f"{url}/page")]
    assert "loopback" in errors[0] and not any(path == "/page" for path, _, _ in seen)
    context.allow_private_fetch = True
    passages, errors = resources.fetch_pages(context, local)
    assert errors == [] and passages == [passage(f"Zofia: {LEAD}", title="Zofia", source=f"{url}/page")]


# --- a whole run ----------------------------------------------------------------------------


def test_the_incorrect_route_searches_and_reads_the_fake_wikipedia(apis):
    url, _, seen = apis
    chat = EchoChat()
    context = Context(
        evaluator=FakeEvaluator({"compactness": 0.9}),
        chat_model=chat,
        retriever=RunnableLambda(lambda q: list(DOCS)),  # about a painter and a footballer: Incorrect
        web_backend="wikipedia",
        wikipedia_url=f"{url}/w/api.php",
    )
    result = graph.invoke({"question": "What is Zofia Nowak's theorem about?"}, context=context)
    assert result["action"] == "incorrect" and result["web_status"] == "searched" and result["web_error"] is None
    assert result["rewritten_query"] == "Zofia Nowak, theorem"  # the question's own keywords
    assert [source_of(r) for r in result["web_results"]] == [f"{url}/wiki/Zofia_Nowak", f"{url}/wiki/Nowak_(surname)"]
    assert result["web_results"][0].page_content == LEAD  # the hits keep only the lead: the state stays small
    # the knowledge is from the body of the page, which only the API's whole-page text holds
    [strip] = result["external_knowledge"]
    assert strip["text"] == f"Zofia Nowak: {BODY[3]}" and strip["source"] == f"{url}/wiki/Zofia_Nowak"
    assert result["answer"] == BODY[3] and result["sources"][0]["text"] == strip["text"]
    assert {path for path, _, _ in seen} == {"/w/api.php"}  # no page was downloaded as HTML
    assert seen[0][1]["gsrsearch"] == "Zofia Nowak, theorem"  # no "Wikipedia, " prefix
