"""How many times each kind of model or store has been loaded in this process.

Models are cached per process; these counts let the server (`/health`) and the tests show that a
model is loaded once, not once per request.
"""

from __future__ import annotations

import threading
from collections import Counter

_LOADS: Counter[str] = Counter()
_LOCK = threading.Lock()


def record(kind: str) -> None:
    with _LOCK:
        _LOADS[kind] += 1


def loads() -> dict[str, int]:
    with _LOCK:
        return dict(_LOADS)
