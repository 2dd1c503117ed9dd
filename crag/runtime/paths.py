"""Where crag keeps what it makes once (ONNX graphs, assembled local models): one root, one variable."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "CRAG_CACHE_DIR"


def cache_root() -> Path:
    """$CRAG_CACHE_DIR, else $XDG_CACHE_HOME/crag, else ~/.cache/crag (read at call time)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "crag").expanduser()
