"""A LangChain retriever or tool as the web backend: what they return becomes passages, whatever
goes wrong becomes `web_error`, and the graph's Incorrect route searches through them."""

from __future__ import annotations

import json
import re
import time

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool, tool
from pydantic import BaseModel

from crag.graphs.crag import graph
from crag.passages import passage
from crag.search.user_web import is_user_backend, search_custom
from crag.search.web import WebSearchError
from crag.settings import Context
from tests.fakes import DOCS, EchoChat, FakeEvaluator, ListRetriever

QUESTION = "What is Anna Berg's occupation?"
HITS = [
    {"title": "Anna Berg (painter)", "url": "https://example.org/anna", "content": "Anna Berg painted seascapes."},
    {"title": "Oslo", "url": "https://example.org/oslo", "content": "Oslo is the capital of Norway."},
]
PASSAGES = [
    passage("Anna Berg painted seascapes.", title="Anna Berg (painter)", source="https://example.org/anna"),
    passage("Oslo is the capital of Norway.", title="Oslo", source="https://example.org/oslo"),
]


class Query(BaseModel):
    query: str
    max_results: int = 5


class SearchTool(BaseTool):
    """A search tool the way LangChain's are: a `query` argument, output handed back as it is given."""

    name: str = "fake_search"
    description: str = "Search the web."
    args_schema: type[BaseModel] = Query
    output: object = None
    calls: list = []

    def _run(self, query: str, max_results: int = 5, run_manager=None):
        self.calls.append(query)
        if isinstance(self.output, Exception):
            raise self.output
        return self.output() if callable(self.output) else self.output


@pytest.mark.parametrize(
    "output",
    [
        HITS,  # a list of mappings
        {"query": "q", "results": HITS, "response_time": 0.5},  # Tavily's and SearxNG's shape
        json.dumps({"results": HITS}),  # the same as JSON text, as many tools return it
        json.dumps(HITS),
        [Document(page_content=h["content"], metadata={"title": h["title"], "source": h["url"]}) for h in HITS],
    ],
)
def test_a_search_tool_s_output_becomes_passages(output):
    search = SearchTool(output=output)
    assert search_custom(search, "Anna Berg", k=5, timeout=2) == PASSAGES
    assert search.calls[-1] == "Anna Berg"
    assert search_custom(search, "Anna Berg", k=1, timeout=2) == PASSAGES[:1]


def test_a_tool_whose_one_argument_is_not_named_query_gets_the_query():
    @tool
    def lookup(q: str) -> list[dict]:
        """Look something up."""
        return [{"title": q, "url": "https://example.org/q", "snippet": f"about {q}"}]

    assert search_custom(lookup, "Anna", k=3, timeout=2) == [passage("about Anna", "Anna", "https://example.org/q")]


@pytest.mark.parametrize(
    "output, message",
    [
        ({"error": ValueError("Error 401: Unauthorized")}, "web backend fake_search failed: Error 401: Unauthorized"),
        ("Tool execution error: quota", "fake_search returned text, not results: Tool execution error: quota"),
        ({"answer": "no list"}, "returned no result list (keys: ['answer'])"),
        (RuntimeError("boom"), "fake_search failed: RuntimeError: boom"),
        (lambda: time.sleep(5), "fake_search timed out after 0.2 s"),
        ([{"nothing": 1}], "1 results with no text or URL"),
    ],
)
def test_whatever_goes_wrong_in_a_tool_is_a_web_search_error(output, message):
    with pytest.raises(WebSearchError, match=re.escape(message)):
        search_custom(SearchTool(output=output), "q", k=5, timeout=0.2)


def test_tavily_s_no_results_text_is_no_results():
    output = "No search results found for 'q'. Suggestions: Try a more general query."
    assert search_custom(SearchTool(output=output), "q", k=5, timeout=2) == []


def test_a_tool_that_takes_no_query_is_refused():
    @tool
    def two(a: str, b: int) -> str:
        """Two arguments, none of them a query."""
        return a * b

    with pytest.raises(WebSearchError, match="takes a, b; a search tool takes a query"):
        search_custom(two, "q", k=5, timeout=2)


def test_the_real_tavily_tool_as_a_web_backend(monkeypatch):
    """langchain-tavily's TavilySearch as a user hands it in, with only its HTTP call replaced."""
    from langchain_tavily import TavilySearch, _utilities

    class Answer:
        status_code = 200

        def json(self):
            return {"query": "q", "results": [{**h, "score": 0.9, "raw_content": None} for h in HITS]}

    posts = []
    monkeypatch.setattr(_utilities.requests, "post", lambda url, **kw: posts.append(kw) or Answer())
    search = TavilySearch(tavily_api_key="tvly-test", max_results=2)
    assert is_user_backend(search) and Context(web_backend=search).web_backend is search
    assert search_custom(search, "Anna Berg", k=5, timeout=2) == PASSAGES
    assert posts[0]["json"]["query"] == "Anna Berg"


def test_a_retriever_s_documents_are_the_hits():
    retriever = ListRetriever(documents=[*[p.model_copy() for p in PASSAGES], DOCS[0]])
    assert search_custom(retriever, "Anna Berg", k=2, timeout=2) == PASSAGES
    assert search_custom(ListRetriever(documents=[]), "Anna Berg", k=2, timeout=2) == []


def test_context_accepts_a_retriever_or_a_tool_and_refuses_other_objects():
    assert isinstance(Context(web_backend=ListRetriever(documents=[])).web_backend, ListRetriever)
    assert isinstance(Context(web_backend=SearchTool(output=[])).web_backend, SearchTool)
    assert not is_user_backend(RunnableLambda(lambda q: []))  # a runnable says nothing of what it returns
    with pytest.raises(ValueError, match="unknown web_backend"):
        Context(web_backend=object())  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["retriever", "tool"])
def test_the_incorrect_route_searches_through_a_retriever_or_a_tool(kind):
    # URLs no one fetches (only http and https pages are), so the test needs no network
    hits = [{**h, "url": h["url"].replace("https://example.org/", "kb://")} for h in HITS]
    documents = [passage(h["content"], title=h["title"], source=h["url"]) for h in hits]
    web = ListRetriever(documents=documents) if kind == "retriever" else SearchTool(output={"results": hits})
    context = Context(
        evaluator=FakeEvaluator({"seascapes": 0.8}),
        chat_model=EchoChat(),
        retriever=RunnableLambda(lambda q: [DOCS[1]]),  # about a footballer: Incorrect
        web_backend=web,
    )
    result = graph.invoke({"question": QUESTION}, context=context)
    assert result["action"] == "incorrect" and result["web_status"] == "searched"
    assert result["sources"][0]["source"] == "kb://anna" and result["web_error"] is None
    assert result["answer"] == "Anna Berg painted seascapes."
