"""Settings every test shares: no download attempts, no transformers chatter, a cache folder of the run. Fakes are in
`tests/fakes.py`, the servers the integration tests start in `tests/servers.py`."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session", autouse=True)
def _crag_cache(tmp_path_factory):
    """The evaluator's ONNX graphs (crag.evaluator_model.onnx_engine) go to a folder of this run, not
    the user's ~/.cache/crag: the tiny test models would push out the graphs of real ones."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CRAG_CACHE_DIR", str(tmp_path_factory.mktemp("crag-cache")))
        yield
