"""Scale benchmark: 64 concurrent clients through nginx to two `crag serve` workers, beside one worker.

It starts what the deployment guide runs, each on a free port of 127.0.0.1 and from the test suite's own
helpers (tests/servers.py): a PostgreSQL cluster for the threads, a Chroma server (`chroma run`) holding
the demo knowledge base, the workers (`crag serve --chat-model local:tiny --threads-db postgresql://…
--chroma-url …`) and nginx with deploy/nginx/crag.conf in front. Then, for one worker and for two, the
same load: --clients clients at once, each asking --turns questions in a row on a thread of its own
(lab/benchmarks/load_questions.txt, in turn), retrying a 503 after its Retry-After as a well-behaved client
does. The cores are shared as `crag serve --workers N` shares them (CRAG_LLM_INSTANCES = cores / N).

It prints, per setting: throughput, latency p50/p99 (a request's whole time, its retries included),
the 503s (every one must carry Retry-After) and any other error (there must be none), and checks that
every thread in Postgres holds exactly the turns that were answered.

    python -m lab.benchmarks.scale_benchmark --json artifacts/bench/scale.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import httpx
import numpy as np
from tqdm import tqdm

from crag.threads import thread_config, threaded_graph

ROOT = Path(__file__).resolve().parents[2]  # the repository: lab/benchmarks/ is two levels down
sys.path.insert(0, str(ROOT))  # the servers' helpers are the test suite's: one way to start each of them

from tests.servers import (  # noqa: E402
    chroma_server,
    free_port,
    ingest_demo,
    nginx_server,
    postgres_server,
    subprocess_server,
    worker_command,
)


def start_workers(stack: ExitStack, count: int, chroma_url: str, threads_url: str, folder: Path) -> list[int]:
    cores = os.cpu_count() or 2
    env = {"CRAG_LLM_INSTANCES": str(max(1, cores // count)), "CRAG_API_KEY": ""}
    ports = []
    for index in range(count):
        port = free_port()
        command = worker_command(
            port, chroma_url, threads_url, "--web-index", str(ROOT / "crag" / "demo" / "web.jsonl")
        )
        log = folder / f"worker-{count}-{index}.log"
        stack.enter_context(subprocess_server(command, f"http://127.0.0.1:{port}/health", log, env=env))
        ports.append(port)
    return ports


async def load(url: str, questions: list[str], clients: int, turns: int, prefix: str, timeout: float) -> list[dict]:
    bar = tqdm(total=clients * turns, desc=f"{prefix} requests", unit="req")
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(http: httpx.AsyncClient, number: int) -> list[dict]:
        records = []
        for turn in range(turns):
            question = questions[(number + turn) % len(questions)]
            body = {"input": {"question": question}, "config": {"configurable": {"thread_id": f"{prefix}-{number}"}}}
            start, refused, record = time.perf_counter(), [], {}
            while True:
                try:
                    response = await http.post(f"{url}/crag/invoke", json=body)
                except httpx.HTTPError as exc:
                    record = {"status": None, "error": f"{type(exc).__name__}: {exc}"}
                    break
                if response.status_code != 503:
                    ok = response.status_code == 200
                    record = {"status": response.status_code, "error": None if ok else response.text[:200]}
                    break
                refused.append(response.headers.get("retry-after"))
                await asyncio.sleep(float(response.headers.get("retry-after") or 1))
            record.update(
                client=number,
                question=question,
                seconds=time.perf_counter() - start,
                refused=len(refused),
                refused_without_retry_after=sum(value is None for value in refused),
            )
            records.append(record)
            bar.update()
        return records

    async with httpx.AsyncClient(timeout=timeout, limits=limits) as http:
        per_client = await asyncio.gather(*(client(http, n) for n in range(clients)))
    bar.close()
    return [record for records in per_client for record in records]


def summarise(records: list[dict], wall: float) -> dict:
    seconds = np.array([r["seconds"] for r in records])
    answered = [r for r in records if r["status"] == 200]
    errors = [r for r in records if r["status"] != 200]
    return {
        "requests": len(records),
        "answered": len(answered),
        "errors": len(errors),
        "error_examples": sorted({str(e["error"]) for e in errors})[:5],
        "refused_503": sum(r["refused"] for r in records),
        "refused_503_without_retry_after": sum(r["refused_without_retry_after"] for r in records),
        "throughput_rps": round(len(answered) / wall, 2),
        "p50_s": round(float(np.percentile(seconds, 50)), 2),
        "p99_s": round(float(np.percentile(seconds, 99)), 2),
        "max_s": round(float(seconds.max()), 2),
        "wall_s": round(wall, 1),
    }


def threads_intact(threads_url: str, records: list[dict], prefix: str) -> bool:
    """Every client's thread holds exactly its answered questions, in order (the last 8, as history keeps)."""
    with threaded_graph(threads_url) as graph:
        for number in sorted({r["client"] for r in records}):
            asked = [t["asked"] for t in graph.get_state(thread_config(f"{prefix}-{number}")).values["history"]]
            wanted = [r["question"] for r in records if r["client"] == number and r["status"] == 200][-8:]
            if asked != wanted:
                return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--turns", type=int, default=4, help="questions each client asks in a row, on its thread")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="the settings measured, in order")
    parser.add_argument("--questions", type=Path, default=ROOT / "lab" / "benchmarks" / "load_questions.txt")
    parser.add_argument("--timeout", type=float, default=600.0, help="client timeout per request, seconds")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.clients < 1 or args.turns < 1 or min(args.workers) < 1:
        parser.error("--clients, --turns and --workers must be at least 1")
    questions = [q.strip() for q in args.questions.read_text().splitlines() if q.strip()]

    results = {}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as servers:
        folder = Path(tmp)
        postgres = servers.enter_context(postgres_server())
        chroma_url, _ = servers.enter_context(chroma_server(folder / "chroma", folder / "chroma.log"))
        ingest_demo(chroma_url)
        for count in args.workers:
            with ExitStack() as stack:
                started = time.perf_counter()
                ports = start_workers(stack, count, chroma_url, postgres.url, folder)
                url = stack.enter_context(nginx_server(ports))
                print(f"{count} worker(s) ready in {time.perf_counter() - started:.0f} s behind nginx at {url}")
                prefix = f"scale-{count}"
                start = time.perf_counter()
                records = asyncio.run(load(url, questions, args.clients, args.turns, prefix, args.timeout))
                summary = summarise(records, time.perf_counter() - start)
                summary["threads_intact"] = threads_intact(postgres.url, records, prefix)
                summary["statuses"] = dict(Counter(str(r["status"]) for r in records))
                results[f"{count}_workers"] = summary
                print(json.dumps({f"{count}_workers": summary}, indent=2))
    figures = {
        "clients": args.clients,
        "turns_per_client": args.turns,
        "chat_model": "local:tiny",
        "cpu_cores": os.cpu_count(),
        "results": results,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
