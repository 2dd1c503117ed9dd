"""Settings every test shares: no download attempts, no transformers chatter, the tiny chat model, a cache folder
of the run; and the harness's two-question input files, which the unit tests and the slow end-to-end test both
use. Fakes are in `tests/fakes.py`, the servers the integration tests start in `tests/servers.py`."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# property tests check what comes out, not how fast: Hypothesis's 200 ms deadline per example failed a
# metrics test on a CPU shared with another job (272 ms once, 0.3 ms on the retry); speed is for benchmarks
settings.register_profile("crag", deadline=None)
settings.load_profile("crag")

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# the default run answers with SmolLM2-135M, which loads in a second and writes 145 tokens/s: the servers and
# end-to-end tests check wiring, not answers. The default local model (1.5B) has its own slow-marked tests.
os.environ.setdefault("CRAG_CHAT_MODEL", "local:tiny")


@pytest.fixture(scope="session", autouse=True)
def _crag_cache(tmp_path_factory):
    """The evaluator's ONNX graphs (crag.evaluator.onnx_engine) go to a folder of this run, not
    the user's ~/.cache/crag: the tiny test models would push out the graphs of real ones."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CRAG_CACHE_DIR", str(tmp_path_factory.mktemp("crag-cache")))
        yield


@pytest.fixture()
def inputs(tmp_path):
    """(questions, kb, web) JSONL files for the harness's two-question fixture (`tests/fakes.py`)."""
    from crag.passages import source_of, title_of
    from tests.fakes import HARNESS_KB, HARNESS_QUESTIONS, HARNESS_WEB, write_jsonl

    web = [{"title": title_of(r), "text": r.page_content, "url": source_of(r)} for r in HARNESS_WEB]
    return (
        write_jsonl(tmp_path / "questions.jsonl", HARNESS_QUESTIONS),
        write_jsonl(tmp_path / "kb.jsonl", HARNESS_KB),
        write_jsonl(tmp_path / "web.jsonl", web),
    )
