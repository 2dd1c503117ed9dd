"""Servers on 127.0.0.1 for the integration tests: in-process uvicorn and subprocesses (real models)."""

from __future__ import annotations

import json
import os
import re
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


@contextmanager
def langgraph_dev(folder: Path, graphs: dict[str, str], env: dict[str, str]) -> Iterator[str]:
    """`langgraph dev` (the Agent Server, in memory) on a free port of 127.0.0.1, serving `graphs` (name: path)
    with the repository's langgraph.json otherwise: its auth and dependencies made absolute, so the server's
    files land in `folder`. Yields its URL; `env` is added to the server's environment."""
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["auth"]["path"] == "./crag/serve/agent_auth.py:auth"
    config["graphs"] = graphs
    config["auth"]["path"] = f"{ROOT}/crag/serve/agent_auth.py:auth"
    config["dependencies"] = [str(ROOT)]
    (folder / "langgraph.json").write_text(json.dumps(config))
    port = free_port()
    command = [str(BIN / "langgraph"), "dev", "--config", str(folder / "langgraph.json"), "--port", str(port)]
    command += ["--host", "127.0.0.1", "--no-browser", "--no-reload"]
    url = f"http://127.0.0.1:{port}"
    with subprocess_server(
        command, f"{url}/ok", folder / "langgraph-dev.log", env={"LANGGRAPH_CLI_NO_ANALYTICS": "1", **env}, cwd=folder
    ):
        yield url


def postgres_bin(name: str) -> Path | None:
    """A PostgreSQL server program (initdb, pg_ctl), from PATH or Debian's versioned folder."""
    found = shutil.which(name)
    if found:
        return Path(found)
    versions = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    return versions[-1] if versions else None


class Postgres:
    """A PostgreSQL cluster of its own (`postgres_server`): its URL, and stop/start for the outage tests."""

    def __init__(self, pg_ctl: Path, data: Path, log: Path, options: str, as_user: list[str], url: str):
        self.pg_ctl, self.data, self.log, self.options, self.as_user, self.url = (
            pg_ctl,
            data,
            log,
            options,
            as_user,
            url,
        )

    def start(self) -> None:
        ctl = [*self.as_user, str(self.pg_ctl), "-D", str(self.data), "-l", str(self.log), "-o", self.options]
        subprocess.run([*ctl, "-w", "-t", "60", "start"], check=True, capture_output=True, timeout=90)

    def stop(self, mode: str = "fast") -> None:
        """`fast` ends every session (what a restart does to the workers' connections)."""
        subprocess.run(
            [*self.as_user, str(self.pg_ctl), "-D", str(self.data), "-m", mode, "-w", "stop"],
            capture_output=True,
            timeout=60,
        )


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A PostgreSQL server of its own on 127.0.0.1 (initdb into a new temporary folder, a free port, trust
    authentication for the local test user); yields it (`.url`); stops it (fast shutdown) and removes the
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
    subprocess.run(
        [*as_user, str(initdb), "-D", str(data), "-U", "crag", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    server = Postgres(
        pg_ctl, data, folder / "postgres.log", options, as_user, f"postgresql://crag@127.0.0.1:{port}/postgres"
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def chroma_command(path: Path, port: int) -> list[str]:
    """`chroma run` (chromadb's own server) on a folder and a port of 127.0.0.1."""
    run = ["run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)]
    script = BIN / "chroma"
    if script.is_file():
        return [str(script), *run]
    # the console script is missing: call chromadb's CLI entry point directly
    entry = "import sys; from chromadb.cli.cli import app; sys.argv = ['chroma', *sys.argv[1:]]; app()"
    return [sys.executable, "-c", entry, *run]


@contextmanager
def chroma_server(path: Path, log: Path, port: int | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """A Chroma server on `path` (created if missing): yields (its URL, its process); stopped afterwards.
    Started again on the same `port` and `path`, it serves the same collections."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    with subprocess_server(chroma_command(path, port), f"{url}/api/v2/heartbeat", log) as process:
        yield url, process


def ingest_demo(chroma_url: str, collection: str = "demo") -> None:
    """The demo knowledge base into a Chroma server's collection."""
    ingest = [str(BIN / "crag"), "ingest", str(DEMO_KB), "--chroma-url", chroma_url, "--collection", collection]
    subprocess.run([*ingest, "--no-progress"], check=True, capture_output=True, timeout=600)


def worker_command(port: int, chroma_url: str, threads_url: str, *more: str) -> list[str]:
    """`crag serve` as a worker of the deployment guide: the demo collection in a Chroma server, threads in
    Postgres, the tiny chat model (fast enough for tests and load on two cores)."""
    command = [str(BIN / "crag"), "serve", "--port", str(port), "--collection", "demo", "--log-level", "warning"]
    return [*command, "--chroma-url", chroma_url, "--chat-model", "local:tiny", "--threads-db", threads_url, *more]


NGINX_SITE = ROOT / "deploy" / "nginx" / "crag.conf"  # the configuration the deployment guide gives


def nginx_bin() -> Path | None:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").is_file() else None)
    return Path(found) if found else None


def nginx_site(listen: int, upstreams: list[int]) -> str:
    """deploy/nginx/crag.conf with the test's ports: its `listen` on 127.0.0.1:`listen`, and its upstream
    `server` lines replaced by one per worker port, each with the options of the file's first one."""
    site = NGINX_SITE.read_text()
    site, listens = re.subn(r"(?m)^(\s*)listen \S+;", rf"\g<1>listen 127.0.0.1:{listen};", site)
    pattern = re.compile(r"(?m)^(\s*)server \S+:\d+((?: [^;\n]*)?);\n")
    first = pattern.search(site)
    assert listens == 1 and first, f"{NGINX_SITE} lost its listen or upstream server lines"
    lines = "".join(f"{first.group(1)}server 127.0.0.1:{port}{first.group(2)};\n" for port in upstreams)
    return site[: first.start()] + lines + pattern.sub("", site[first.end() :])


@contextmanager
def nginx_server(upstreams: list[int]) -> Iterator[str]:
    """nginx from Debian in front of the workers on `upstreams`, with the deployment guide's site
    configuration (`nginx_site`) inside a main configuration of its own in a temporary folder (pid,
    logs and buffers there); yields its URL once /health answers through it."""
    binary = nginx_bin()
    if binary is None:
        raise RuntimeError("nginx is not installed: run `make servers` (apt-get install nginx, as root)")
    prefix = Path(tempfile.mkdtemp(prefix="crag-nginx-"))
    prefix.chmod(0o755)
    for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (prefix / name).mkdir()
        (prefix / name).chmod(0o777)  # nginx's worker processes run as nobody when the master is root
    port = free_port()
    (prefix / "crag.conf").write_text(nginx_site(port, upstreams))
    (prefix / "nginx.conf").write_text(
        f"""worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    include {prefix}/crag.conf;
}}
"""
    )
    command = [str(binary), "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g", "daemon off;"]
    try:
        with subprocess_server(command, f"http://127.0.0.1:{port}/health", prefix / "nginx.out"):
            yield f"http://127.0.0.1:{port}"
    finally:
        shutil.rmtree(prefix, ignore_errors=True)
