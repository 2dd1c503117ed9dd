"""Load benchmark: many concurrent questions against `crag serve` on the real default models.

By default it ingests the demo knowledge base into a temporary folder, starts `crag serve` on a
free port (threads off, warm-up on), waits for /health, fires --requests POST /crag/invoke
requests with at most --concurrency in flight, cycling through --questions, and prints latency
percentiles, throughput, errors, the routes taken and how often each model was loaded. With --url
it measures a server that is already running instead. A 503 (the server's in-flight limit) is
retried after its Retry-After, as a well-behaved client does, and counted.

    python -m lab.benchmarks.load_benchmark --requests 200 --concurrency 32 --json artifacts/bench/load.json

--faults runs issue 12's fault scenario instead: 32 clients asking at once (no retries), a
1,000-input batch and 20 malformed requests while /health is probed every 50 ms; then SIGTERM with
runs in flight. It prints what each kind of request got and how fast, and how long shutdown took.

    python -m lab.benchmarks.load_benchmark --faults --json artifacts/bench/faults.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
CRAG = str(Path(sys.executable).with_name("crag"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, process: subprocess.Popen | None, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise SystemExit(f"crag serve exited with code {process.returncode} before it was ready")
        try:
            return httpx.get(f"{url}/health", timeout=2).json()
        except httpx.HTTPError:
            time.sleep(0.5)
    raise SystemExit(f"{url} was not ready after {timeout:.0f} s")


def start_server(workdir: Path, port: int, log: Path) -> subprocess.Popen:
    chroma = workdir / "chroma"
    subprocess.run(
        [
            CRAG,
            "ingest",
            str(ROOT / "crag/demo/kb"),
            "--chroma-dir",
            str(chroma),
            "--collection",
            "demo",
            "--no-progress",
        ],
        check=True,
    )
    env = {**os.environ, "CRAG_API_KEY": ""}
    return subprocess.Popen(
        [
            CRAG,
            "serve",
            "--port",
            str(port),
            "--chroma-dir",
            str(chroma),
            "--collection",
            "demo",
            "--no-threads",
            "--log-level",
            "warning",
        ],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )


async def fire(url: str, questions: list[str], n: int, concurrency: int, timeout: float, headers: dict) -> list[dict]:
    gate = asyncio.Semaphore(concurrency)
    bar = tqdm(total=n, desc="requests", unit="req")
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async def one(client: httpx.AsyncClient, i: int) -> dict:
        question = questions[i % len(questions)]
        async with gate:
            start = time.perf_counter()
            retries = 0
            try:
                while True:
                    response = await client.post(f"{url}/crag/invoke", json={"input": {"question": question}})
                    if response.status_code != 503:
                        break
                    retries += 1
                    await asyncio.sleep(float(response.headers.get("retry-after", "1")))
                ok = response.status_code == 200
                output = response.json().get("output", {}) if ok else {}
                record = {
                    "status": response.status_code,
                    "action": output.get("action"),
                    "answered": bool(output.get("answer")),
                    "error": None if ok else response.text[:200],
                }
            except httpx.HTTPError as exc:
                record = {"status": None, "action": None, "answered": False, "error": f"{type(exc).__name__}: {exc}"}
            record.update(question=question, seconds=time.perf_counter() - start, retries=retries)
            bar.update()
            return record

    async with httpx.AsyncClient(timeout=timeout, limits=limits, headers=headers) as client:
        records = await asyncio.gather(*(one(client, i) for i in range(n)))
    bar.close()
    return list(records)


def summarise(records: list[dict], wall: float, concurrency: int) -> dict:
    seconds = np.array([r["seconds"] for r in records])
    errors = [r for r in records if r["error"]]
    return {
        "requests": len(records),
        "concurrency": concurrency,
        "errors": len(errors),
        "error_examples": sorted({e["error"] for e in errors})[:5],
        "unanswered": sum(not r["answered"] for r in records if not r["error"]),
        "over_60_s": int((seconds > 60).sum()),
        "p50_s": round(float(np.percentile(seconds, 50)), 2),
        "p95_s": round(float(np.percentile(seconds, 95)), 2),
        "max_s": round(float(seconds.max()), 2),
        "mean_s": round(float(seconds.mean()), 2),
        "wall_s": round(wall, 1),
        "throughput_rps": round(len(records) / wall, 2),
        "actions": dict(Counter(r["action"] for r in records if r["action"])),
        "retried_after_503": sum(r.get("retries", 0) for r in records),
    }


MALFORMED = [  # each must be refused: a 4xx, or the load limit's 503 (never another 5xx)
    b'{"input": {"question": "caf\xe9?"}}',
    b'{"input": {"question": "\\ud800 who?"}}',
    b'{"input": ' * 1000 + b"1" + b"}" * 1000,
    b'{"input": {"question": "q"}, "config": {"configurable": {"k": NaN}}}',
    b'{"input": {"question": "q"}, "config": {"configurable": {"upper_threshold": -Infinity}}}',
    b"{nope",
    b'{"input": {"question": "   "}}',
    b'{"input": {"question": "q"}, "config": {"configurable": {"chroma_dir": "/"}}}',
    b'{"inputs": [{"question": "q"}, {"question": ""}]}',
    b'{"input": {"question": 7}}',
]


async def faults(url: str, questions: list[str], headers: dict) -> dict:
    """Issue 12's scenario: figures for good, oversized and malformed requests and for /health."""
    health: list[float] = []
    done = asyncio.Event()
    json_headers = {**headers, "content-type": "application/json"}
    limits = httpx.Limits(max_connections=100)

    async with httpx.AsyncClient(timeout=300, limits=limits, headers=json_headers) as client:

        async def probe() -> None:
            while not done.is_set():
                start = time.perf_counter()
                await client.get(f"{url}/health")
                health.append(time.perf_counter() - start)
                await asyncio.sleep(0.05)

        async def post(path: str, body: bytes) -> tuple[int, float]:
            start = time.perf_counter()
            response = await client.post(f"{url}/crag/{path}", content=body)
            return response.status_code, time.perf_counter() - start

        prober = asyncio.create_task(probe())
        good = [
            post("invoke", json.dumps({"input": {"question": questions[i % len(questions)]}}).encode())
            for i in range(32)
        ]
        huge = post("batch", json.dumps({"inputs": [{"question": questions[0]}] * 1000}).encode())
        bad = [post("batch" if body.startswith(b'{"inputs"') else "invoke", body) for body in MALFORMED * 2]
        results = await asyncio.gather(*good, huge, *bad)
        done.set()
        await prober
    good_results, huge_result, bad_results = results[:32], results[32], results[33:]

    def seconds(rows, status):
        times = [t for s, t in rows if s == status]
        return {
            "n": len(times),
            "max_s": round(max(times), 2) if times else None,
            "p50_s": round(float(np.percentile(times, 50)), 2) if times else None,
        }

    return {
        "good": {
            "statuses": dict(Counter(s for s, _ in good_results)),
            "answered": seconds(good_results, 200),
            "refused_503": seconds(good_results, 503),
        },
        "batch_of_1000": {"status": huge_result[0], "seconds": round(huge_result[1], 2)},
        "malformed": {
            "statuses": dict(Counter(s for s, _ in bad_results)),
            "max_s": round(max(t for _, t in bad_results), 2),
        },
        "health": {
            "probes": len(health),
            "max_s": round(max(health), 3),
            "p95_s": round(float(np.percentile(health, 95)), 3),
        },
        "server_errors": sum(500 <= s != 503 for s, _ in results),
    }


def shutdown_seconds(url: str, process: subprocess.Popen, question: str) -> float:
    """SIGTERM while runs are in flight: seconds until the process has exited."""
    import threading

    for _ in range(4):
        threading.Thread(
            target=lambda: httpx.post(f"{url}/crag/invoke", json={"input": {"question": question}}, timeout=120),
            daemon=True,
        ).start()
    time.sleep(1.0)
    start = time.perf_counter()
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=60)
    return round(time.perf_counter() - start, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="measure this running server instead of starting one")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--questions", type=Path, default=ROOT / "lab/benchmarks/load_questions.txt")
    parser.add_argument("--timeout", type=float, default=180.0, help="client timeout per request, seconds")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--faults", action="store_true", help="run the fault scenario instead of the load")
    args = parser.parse_args()
    if args.requests < 1 or args.concurrency < 1:
        parser.error("--requests and --concurrency must be at least 1")
    questions = [q.strip() for q in args.questions.read_text().splitlines() if q.strip()]
    if not questions:
        parser.error(f"{args.questions} has no questions")
    headers = {"X-API-Key": os.environ["CRAG_API_KEY"]} if os.environ.get("CRAG_API_KEY") and args.url else {}

    process = None
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url.rstrip("/") if args.url else None
        if url is None:
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            log = Path(tmp) / "server.log"
            started = time.perf_counter()
            process = start_server(Path(tmp), port, log)
        try:
            health = wait_for(url, process, timeout=300)
            if process is not None:
                print(f"server ready in {time.perf_counter() - started:.1f} s (models loaded: {health['loads']})")
            start = time.perf_counter()
            if args.faults:
                records = []
                summary = asyncio.run(faults(url, questions, headers))
                if process is not None:
                    summary["shutdown_s"] = shutdown_seconds(url, process, questions[0])
            else:
                records = asyncio.run(fire(url, questions, args.requests, args.concurrency, args.timeout, headers))
                wall = time.perf_counter() - start
                summary = summarise(records, wall, args.concurrency)
                summary["model_loads"] = httpx.get(f"{url}/health", timeout=5, headers=headers).json()["loads"]
        finally:
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=30)
    summary["cpu_cores"] = os.cpu_count()
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"summary": summary, "requests": records}, indent=2))


if __name__ == "__main__":
    main()
