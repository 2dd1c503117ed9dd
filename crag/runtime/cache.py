"""Process-wide caches of loaded models and opened stores, and how many times each kind was loaded.

Every expensive resource (the evaluator, the embedding model, llama.cpp contexts, Chroma stores,
local BM25 indexes) lives in one `ResourceCache`: loaded on first use, then shared by every
caller in the process. Each load is counted per kind, so the server (`/health`) and the tests
can show that a model is loaded once, not once per request.

Hand-written rather than `functools.lru_cache`/`cache` or `cachetools` (not a dependency):
`functools` may run the loader twice when two threads miss at once, and neither library can
replace an entry whose file changed (`stamp`), count loads, or hand back the forgotten values
(the chat models must be closed when the cache is emptied at exit).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Hashable
from typing import Generic, NamedTuple, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_LOADS: Counter[str] = Counter()  # kind -> successful loads; written only by ResourceCache.get
_LOADS_LOCK = threading.Lock()


def loads() -> dict[str, int]:
    """{kind: loads so far} for every counted kind loaded at least once in this process."""
    with _LOADS_LOCK:
        return dict(_LOADS)


class _Entry(NamedTuple):
    stamp: Hashable
    value: object


class ResourceCache(Generic[K, V]):
    """A thread-safe `key -> resource` map that loads each resource once, on first use.

    `get(key, load)` returns the cached resource for `key`, or calls `load()` and keeps what it
    returns. The cache's one lock is held while loading: concurrent first callers wait for one
    load and share it, and one cache loads one resource at a time. A loader that raises leaves
    the cache (and the count) as it was, so the next call tries again.

    `stamp` makes an entry conditional: a cached resource is returned only when the caller's
    stamp equals the one it was loaded with, otherwise it is loaded again and replaces the old
    one (e.g. a file's (mtime_ns, size), so an index is rebuilt after the file changes).

    Every successful load, reloads included, adds one to `loads()[kind]`; `counted=False`
    keeps a cache out of `loads()` (its kind only names it).
    """

    def __init__(self, kind: str, *, counted: bool = True):
        self.kind = kind
        self.counted = counted
        self._entries: dict[K, _Entry] = {}
        self._lock = threading.Lock()

    def get(self, key: K, load: Callable[[], V], *, stamp: Hashable = None) -> V:
        """The resource for `key`, loaded by `load()` if missing or cached with another `stamp`."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.stamp != stamp:
                entry = self._entries[key] = _Entry(stamp, load())
                if self.counted:
                    with _LOADS_LOCK:
                        _LOADS[self.kind] += 1
            return entry.value  # type: ignore[return-value]

    def peek(self, key: K) -> V | None:
        """The cached resource for `key` whatever its stamp, or None; never loads."""
        with self._lock:
            entry = self._entries.get(key)
            return None if entry is None else entry.value  # type: ignore[return-value]

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def values(self) -> list[V]:
        """A snapshot of the cached resources (use them without holding the cache)."""
        with self._lock:
            return [entry.value for entry in self._entries.values()]  # type: ignore[misc]

    def clear(self) -> list[V]:
        """Forget every resource and return them (to close them); the load counts stay."""
        with self._lock:
            values = [entry.value for entry in self._entries.values()]
            self._entries.clear()
        return values  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"ResourceCache({self.kind!r}, {len(self._entries)} cached)"
