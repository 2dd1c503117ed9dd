"""Latency of the three ways to ask, on the demo knowledge base with the real local models (shipped
evaluator, MiniLM, the default chat model via llama.cpp; `CRAG_CHAT_MODEL` picks another): a cold
`crag ask` per question, `crag chat` (time to the first answer with the models' loading, then each
later question), and `crag ask --server` against a warm `crag serve`. Each is timed as a user meets it, from the command's start to its answer.

It ingests the demo knowledge base into a temporary folder, asks the same conversation each way
(the demo's three questions with a follow-up after the first) and prints a table.

    python -m lab.benchmarks.chat_latency --json artifacts/bench/chat-latency.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
CRAG = [sys.executable, "-m", "crag.cli.main"]  # the checkout's crag, whichever is installed
DEMO = ROOT / "crag" / "demo"
FOLLOW_UP = "Where was she born?"
TURN_TIME = re.compile(r"\((\d+\.\d+) s\)")  # the line crag chat prints after each answer
READY = re.compile(r"ready in (\d+\.\d+) s")
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "CRAG_API_KEY": "", "HF_HUB_OFFLINE": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed_run(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[3:5])} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return time.perf_counter() - started


def cold_ask(store: list[str], questions: list[str]) -> list[float]:
    """A fresh `crag ask` process per question: Python, the imports and every model loaded each time."""
    return [timed_run([*CRAG, "ask", q, *store]) for q in questions]


def chat(store: list[str], questions: list[str]) -> dict:
    """One `crag chat` fed the questions on its standard input; each answer timed as it arrives."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [*CRAG, "chat", *store],
        cwd=ROOT,
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    loaded, answered, own = None, [], []
    try:
        for line in process.stdout:
            if loaded is None and (ready := READY.search(line)):
                loaded = float(ready.group(1))
                asked = time.perf_counter()
                process.stdin.write(questions[0] + "\n")
                process.stdin.flush()
            elif turn := TURN_TIME.search(line):
                answered.append(time.perf_counter() - (started if not answered else asked))
                own.append(float(turn.group(1)))
                if len(answered) == len(questions):
                    break
                asked = time.perf_counter()
                process.stdin.write(questions[len(answered)] + "\n")
                process.stdin.flush()
            elif line.startswith("error:"):
                raise SystemExit(f"crag chat: {line.strip()}")
        process.stdin.write("/quit\n")
        process.stdin.close()
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if len(answered) != len(questions):
        raise SystemExit(f"crag chat answered {len(answered)} of {len(questions)} questions")
    return {"loading": loaded, "first_answer": answered[0], "later": answered[1:], "turn_seconds": own}


def served(store: list[str], questions: list[str], log: Path) -> dict:
    """`crag serve` started and warmed up once, then a `crag ask --server` process per question."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    with log.open("w") as out:
        server = subprocess.Popen(
            [*CRAG, "serve", "--port", str(port), *store, "--no-threads", "--log-level", "warning"],
            cwd=ROOT,
            env=ENV,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300
        while True:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"crag serve did not start:\n{log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        ready = time.perf_counter() - started
        asked = [timed_run([*CRAG, "ask", q, "--server", url]) for q in questions]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    return {"ready": ready, "asked": asked}


def spread(values: list[float]) -> str:
    return f"{statistics.mean(values):.1f}" + (f" ({min(values):.1f}–{max(values):.1f})" if len(values) > 1 else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    demo_questions = (DEMO / "questions.txt").read_text().splitlines()
    questions = [demo_questions[0], FOLLOW_UP, *demo_questions[1:]]
    with tempfile.TemporaryDirectory() as tmp:
        chroma = Path(tmp) / "chroma"
        ingest = [*CRAG, "ingest", str(DEMO / "kb"), "--chroma-dir", str(chroma), "--collection", "demo"]
        subprocess.run([*ingest, "--no-progress"], cwd=ROOT, env=ENV, check=True, capture_output=True)
        store = ["--chroma-dir", str(chroma), "--collection", "demo", "--web-index", str(DEMO / "web.jsonl")]
        print(f"{len(questions)} questions: {questions}", flush=True)
        cold = cold_ask(store, demo_questions)
        print(f"cold crag ask: {[round(s, 1) for s in cold]}", flush=True)
        chatted = chat(store, questions)
        print(f"crag chat: {chatted}", flush=True)
        server = served(store, questions, Path(tmp) / "serve.log")
        print(f"crag ask --server: {server}", flush=True)
    rows = [
        ("cold `crag ask`, per question (process start to exit)", spread(cold), len(cold)),
        ("`crag chat`: loading the models (its 'ready in')", f"{chatted['loading']:.1f}", 1),
        ("`crag chat`: start to first answer (loading included)", f"{chatted['first_answer']:.1f}", 1),
        ("`crag chat`: each later question (follow-up first)", spread(chatted["later"]), len(chatted["later"])),
        ("`crag serve`: start to ready (warm-up included)", f"{server['ready']:.1f}", 1),
        ("`crag ask --server`, per question (process start to exit)", spread(server["asked"]), len(server["asked"])),
    ]
    print("\n| what | seconds, mean (min–max) | runs |\n|---|---|---|")
    for what, seconds, runs in rows:
        print(f"| {what} | {seconds} | {runs} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"questions": questions, "cold_ask": cold, "chat": chatted, "server": server}, indent=2)
        )


if __name__ == "__main__":
    main()
