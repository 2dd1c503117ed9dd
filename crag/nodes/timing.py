"""Per-stage timings in the graph's output (`timings`), without a tracing backend."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable


def timed(name: str) -> Callable:
    """Add the node's seconds to its `timings` (`functools.wraps` keeps the signature LangGraph reads for `runtime`)."""

    def decorate(node: Callable[..., dict]) -> Callable[..., dict]:
        @functools.wraps(node)
        def wrapper(*args, **kwargs) -> dict:
            start = time.perf_counter()
            update = node(*args, **kwargs)
            return {**update, "timings": {**update.get("timings", {}), name: round(time.perf_counter() - start, 4)}}

        return wrapper

    return decorate
