"""`ResourceCache`: one load per key across threads, stamps, failed loads, and the per-kind counts."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from crag.runtime.cache import ResourceCache, loads


def test_concurrent_first_calls_share_one_load():
    cache: ResourceCache[str, object] = ResourceCache("test-shared")
    calls = []

    def load():
        calls.append(threading.get_ident())
        time.sleep(0.05)  # long enough for every thread to miss at once
        return object()

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda _: cache.get("k", load), range(8)))
    assert len(calls) == 1 and all(value is got[0] for value in got)
    assert "k" in cache and "other" not in cache
    assert loads()["test-shared"] == 1


def test_a_changed_stamp_loads_again_and_counts():
    cache: ResourceCache[str, int] = ResourceCache("test-stamped")
    values = iter(range(10))
    assert cache.get("f", lambda: next(values), stamp=(1, 10)) == 0
    assert cache.get("f", lambda: next(values), stamp=(1, 10)) == 0
    assert cache.get("f", lambda: next(values), stamp=(2, 12)) == 1
    assert cache.values() == [1] and "g" not in cache
    assert loads()["test-stamped"] == 2


def test_a_failed_load_is_not_kept_or_counted():
    cache: ResourceCache[str, str] = ResourceCache("test-failing")

    def fail():
        raise OSError("no model")

    with pytest.raises(OSError):
        cache.get("k", fail)
    assert "k" not in cache and "test-failing" not in loads()
    assert cache.get("k", lambda: "loaded") == "loaded"


def test_clear_returns_what_it_forgets_and_keeps_the_counts():
    cache: ResourceCache[str, str] = ResourceCache("test-clear")
    cache.get("a", lambda: "A")
    cache.get("b", lambda: "B")
    assert sorted(cache.values()) == ["A", "B"]
    assert sorted(cache.clear()) == ["A", "B"]
    assert "a" not in cache and cache.values() == []
    assert cache.get("a", lambda: "A2") == "A2"
    assert loads()["test-clear"] == 3


def test_uncounted_caches_stay_out_of_loads():
    cache: ResourceCache[str, str] = ResourceCache("test-uncounted", counted=False)
    cache.get("a", lambda: "A")
    assert "test-uncounted" not in loads()
