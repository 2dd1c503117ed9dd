"""Servers on 127.0.0.1 for the integration tests: in-process uvicorn and subprocesses (real models)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DEMO_KB = ROOT / "crag" / "demo" / "kb"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def silent_server() -> Iterator[str]:
    """A port that takes connections (the kernel's backlog) and never answers: what a hung server looks like."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


@contextmanager
def running(app) -> Iterator[str]:
    """Serve `app` with uvicorn on a free port in a thread; yield its base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def point_providers_at(monkeypatch, url: str) -> None:
    """Send every hosted provider's LangChain class (OpenAI, Anthropic, Ollama) to a fake server at
    `url`, with the test keys their key checks ask for."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    monkeypatch.setenv("OLLAMA_HOST", url)


def wait_http(url: str, process: subprocess.Popen, log: Path, timeout: float = 180) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            response = httpx.get(url, timeout=2)
            if response.status_code == 200:
                return response
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{url} not ready after {timeout} s:\n{log.read_text()[-3000:]}")


@contextmanager
def subprocess_server(command: list[str], ready_url: str, log: Path, env: dict | None = None, cwd: Path | None = None):
    """Run a server command in its own process group; stop it by PID (the whole group) afterwards."""
    with log.open("w") as out:
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            start_new_session=True,
        )
    try:
        wait_http(ready_url, process, log)
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def postgres_bin(name: str) -> Path | None:
    """A PostgreSQL server program (initdb, pg_ctl), from PATH or Debian's versioned folder."""
    found = shutil.which(name)
    if found:
        return Path(found)
    versions = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    return versions[-1] if versions else None


@contextmanager
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server of its own on 127.0.0.1 (initdb into a new temporary folder, a free port, trust
    authentication for the local test user); yields its URL; stops it (fast shutdown) and removes the
    folder afterwards. initdb refuses to run as root, so as root the cluster belongs to the `postgres`
    system user, in a folder it can reach (pytest's tmp_path is private to root)."""
    initdb, pg_ctl = postgres_bin("initdb"), postgres_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise RuntimeError("PostgreSQL is not installed: run `make servers` (apt-get install postgresql, as root)")
    folder = Path(tempfile.mkdtemp(prefix="crag-postgres-"))
    data, sockets = folder / "pgdata", folder / "pgsock"
    sockets.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:
        folder.chmod(0o755)
        shutil.chown(folder, "postgres")
        shutil.chown(sockets, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    log = folder / "postgres.log"
    subprocess.run(
        [*as_user, str(initdb), "-D", str(data), "-U", "crag", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    subprocess.run(
        [*as_user, str(pg_ctl), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start"],
        check=True,
        capture_output=True,
        timeout=90,
    )
    try:
        yield f"postgresql://crag@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*as_user, str(pg_ctl), "-D", str(data), "-m", "fast", "-w", "stop"], capture_output=True, timeout=60
        )
        shutil.rmtree(folder, ignore_errors=True)
