"""The per-search cap on fetched paragraphs: fair across pages, in order, and reported."""

from __future__ import annotations

from crag import resources
from crag.passages import passage, source_of
from crag.search import fetch
from crag.search.fetch import MAX_PARAGRAPHS, cap_paragraphs
from crag.settings import Context


def page(url, count):
    return [passage(f"paragraph {i} of {url}", title=url, source=url) for i in range(count)]


def test_under_the_cap_nothing_changes():
    passages = page("a", 3) + page("b", 2)
    assert cap_paragraphs(passages, 5) == (passages, None)


def test_the_cap_takes_each_page_in_turn_and_keeps_the_order():
    long, short, snippet = page("https://long", 50), page("https://short", 2), page("https://failed", 1)
    passages = long + short + snippet
    kept, report = cap_paragraphs(passages, 9)
    # each page's first, then each page's second, then the long page alone: 1+1+1, 1+1, then 4 more
    assert kept == long[:6] + short + snippet
    assert report == (
        "44 of 53 fetched paragraphs not scored: at most 9 a search, taken from each page in turn"
        " (1 of 3 pages cut short)"
    )


def test_the_cap_is_fair_when_every_page_is_long():
    passages = [p for url in ("a", "b", "c", "d") for p in page(url, 100)]
    kept, report = cap_paragraphs(passages, 10)
    counts = {url: sum(source_of(p) == url for p in kept) for url in "abcd"}
    assert counts == {"a": 3, "b": 3, "c": 2, "d": 2}  # the first pages in result order get the remainder
    assert kept == page("a", 3) + page("b", 3) + page("c", 2) + page("d", 2)
    assert report.startswith("390 of 400 fetched paragraphs not scored") and "(4 of 4 pages cut short)" in report


def test_fetch_pages_caps_what_is_scored_and_says_so(monkeypatch):
    hostile = page("https://hostile", 5 * MAX_PARAGRAPHS)
    honest = page("https://honest", 4)
    monkeypatch.setattr(resources, "fetch_all", lambda results, **_: (hostile + honest, ["https://gone: HTTP 404"]))
    passages, errors = resources.fetch_pages(Context(web_backend="none"), [])
    assert len(passages) == MAX_PARAGRAPHS and passages[-4:] == honest  # the honest page whole
    assert errors[0] == "https://gone: HTTP 404"
    assert errors[1].startswith(f"{4 * MAX_PARAGRAPHS + 4} of {5 * MAX_PARAGRAPHS + 4} fetched paragraphs not scored")
    assert fetch.MAX_PARAGRAPHS == 300
