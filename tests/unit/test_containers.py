"""The container files agree with what they reuse: compose.yaml's workers are deploy/nginx/crag.conf's
upstreams, its secrets come from the environment, and the images built by the Dockerfile and by
`langgraph build` install PyTorch's CPU build and the `local` extra before the package. The images are
built and started in tests/integration/containers/test_compose.py (slow)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose" / "compose.yaml"


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_the_workers_are_the_upstreams_of_the_nginx_file_the_compose_file_mounts():
    services = compose()["services"]
    [mount] = services["nginx"]["volumes"]
    source, target, _ = mount.split(":")
    assert target == "/etc/nginx/conf.d/default.conf"
    site = (COMPOSE.parent / source).resolve()
    assert site == ROOT / "deploy" / "nginx" / "crag.conf"
    upstreams = set(re.findall(r"(?m)^\s*server (127\.0\.0\.1:\d+)", site.read_text()))
    workers = {name: s for name, s in services.items() if s.get("network_mode") == "service:nginx"}
    ports = {}
    for name, worker in workers.items():
        command = worker["command"]
        ports[name] = command[command.index("--port") + 1]
        assert worker["environment"]["CRAG_HEALTH_URL"] == f"http://127.0.0.1:{ports[name]}/health"
    assert {f"127.0.0.1:{port}" for port in ports.values()} == upstreams and len(workers) == 2


def test_secrets_come_from_the_environment_and_must_be_set():
    services = compose()["services"]
    required = re.compile(r"^\$\{(\w+):\?[^}]*\}$")
    for name in ("crag-1", "crag-2"):
        environment = services[name]["environment"]
        assert required.match(environment["CRAG_API_KEY"]).group(1) == "CRAG_API_KEY"
        assert "${CRAG_DB_PASSWORD:?" in environment["CRAG_THREADS_URL"]
    assert required.match(services["postgres"]["environment"]["POSTGRES_PASSWORD"]).group(1) == "CRAG_DB_PASSWORD"


def test_the_dockerfile_installs_cpu_torch_before_the_package_with_its_extras():
    text = (ROOT / "Dockerfile").read_text()
    torch = text.index("torch==2.13.0")
    package = text.index('pip install "/src[local,serve,postgres]"')
    assert torch < package and "ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu" in text
    assert re.search(r"(?m)^USER 10001", text) and "CRAG_CACHE_DIR=/data/cache" in text


@pytest.mark.skipif(
    shutil.which("langgraph", path=str(Path(sys.executable).parent)) is None,
    reason="needs langgraph-cli (the serve extra)",
)
def test_langgraph_build_installs_cpu_torch_and_the_local_extra_before_the_package(tmp_path):
    out = tmp_path / "agent.Dockerfile"
    subprocess.run(
        [str(Path(sys.executable).parent / "langgraph"), "dockerfile", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=120,
        env={"PATH": str(Path(sys.executable).parent), "LANGGRAPH_CLI_NO_ANALYTICS": "1"},
    )
    text = out.read_text()
    torch = text.index("--index-url https://download.pytorch.org/whl/cpu torch==2.13.0")
    extra = text.index("-r /tmp/crag-extras/pyproject.toml --extra local")
    package = text.index("ADD . /deps/")
    assert text.index("build-essential") < torch < extra < package
