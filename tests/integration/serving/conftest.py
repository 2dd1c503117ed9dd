"""Fixtures of the serving tests; the servers themselves are in servers.py."""

from __future__ import annotations

import subprocess
from contextlib import ExitStack
from pathlib import Path

import pytest

from crag.serve.app import ServerSettings, create_app
from tests.fakes import fake_context
from tests.servers import BIN, DEMO_KB, running


@pytest.fixture()
def serve(tmp_path):
    """Start the LangServe app on fakes: `serve(**ServerSettings fields)` -> base URL."""
    with ExitStack() as stack:

        def start(**settings) -> str:
            settings.setdefault("context", fake_context())
            settings.setdefault("threads_db", tmp_path / "threads.sqlite")
            settings.setdefault("api_key", None)
            settings.setdefault("keys_file", None)
            return stack.enter_context(running(create_app(ServerSettings(**settings))))

        yield start


@pytest.fixture(scope="session")
def demo_chroma(tmp_path_factory) -> Path:
    """The demo knowledge base ingested into a fresh embedded Chroma folder."""
    folder = tmp_path_factory.mktemp("demo-chroma")
    subprocess.run(
        [
            str(BIN / "crag"),
            "ingest",
            str(DEMO_KB),
            "--chroma-dir",
            str(folder),
            "--collection",
            "demo",
            "--no-progress",
        ],
        check=True,
        capture_output=True,
    )
    return folder
