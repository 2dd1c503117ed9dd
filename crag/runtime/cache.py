"""Process-wide caches of loaded models and opened stores, with a count of loads per kind.
Hand-written: `functools` may load twice when two threads miss at once, and neither it nor cachetools
can reload on a changed `stamp`, count loads, or hand back the forgotten values to close them."""

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
    """A thread-safe `key -> resource` map that loads each resource once, on first use: the lock is held while
    loading, so first callers share one load. `counted=False` keeps a cache out of `loads()`."""

    def __init__(self, kind: str, *, counted: bool = True):
        self.kind = kind
        self.counted = counted
        self._entries: dict[K, _Entry] = {}
        self._lock = threading.Lock()

    def get(self, key: K, load: Callable[[], V], *, stamp: Hashable = None) -> V:
        """The resource for `key`, loaded by `load()` if missing or cached with another `stamp` (a file's mtime)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.stamp != stamp:
                entry = self._entries[key] = _Entry(stamp, load())
                if self.counted:
                    with _LOADS_LOCK:
                        _LOADS[self.kind] += 1
            return entry.value  # type: ignore[return-value]

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def values(self) -> list[V]:
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
