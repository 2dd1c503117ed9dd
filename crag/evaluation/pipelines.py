"""Running one question through one system's graph, with per-stage latency (from callbacks on the node
runs) and evaluator calls (a counting wrapper injected through `Context`)."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import defaultdict
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from crag import resources
from crag.graphs import compiled
from crag.models.chat import reset_prompt_caches
from crag.settings import Context

# graph node -> reported stage
STAGE_OF_NODE = {
    "retrieve": "retrieve",
    "grade": "grade",
    "second_opinion": "grade",
    "requery": "requery",
    "refine": "refine",
    "rewrite_and_search": "search",
    "web_search": "search",
    "grade_documents": "grade",
    "transform_query": "search",
    "generate": "generate",
    "read_further": "generate",
    "quote": "generate",
    "ask_again": "generate",
    # Self-Reasoning's steps, in the stages whose work each takes on: judging, selecting, answering
    "relevance_aware": "grade",
    "evidence_aware": "refine",
    "trajectory_analysis": "generate",
    "direct_answer": "generate",
    # Self-RAG's: its [Retrieve] judgement is graded as a grade is; a candidate is written and critiqued
    "decide_retrieval": "grade",
    "answer_from_memory": "generate",
    "candidate": "generate",
    "select": "generate",
    # FLARE's: a search's query is retrieval; each search's own steps are CRAG's (above) and count as its do,
    # their knowledge combined (`gather`) as refinement; the drafts, the sentences written again and the
    # citations are the answer's
    "query": "retrieve",
    "gather": "refine",
    "draft_sentence": "generate",
    "accept_sentence": "generate",
    "rewrite_sentence": "generate",
    "cite_answer": "generate",
}
REWRITE_TAG = "crag:rewrite"


class CountingEvaluator:
    """Passes calls through to the evaluator and counts calls and documents scored."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.calls = 0
        self.pairs = 0
        self._lock = threading.Lock()

    @property
    def thresholds(self):
        return getattr(self.inner, "thresholds", None)

    def invoke(self, value: Any, config: Any = None, **kwargs: Any) -> list[float]:
        size = len(value.get("documents", [])) if isinstance(value, dict) else len(value)
        with self._lock:
            self.calls += 1
            self.pairs += size
        return self.inner.invoke(value, config)


class StageTimer(BaseCallbackHandler):
    """Seconds spent in each graph node of one run and in the query rewrite, and the generator's token
    counts where the model reports them. A stage's runs side by side (Self-RAG's candidates, one branch per
    passage) count the wall time any of them ran, not the sum of theirs."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.llm_tokens = {"prompt": 0, "completion": 0, "calls": 0}
        self._open: dict[UUID, str] = {}
        self._busy: dict[str, tuple[int, float]] = {}  # stage -> (its runs under way, since when one was)
        self._lock = threading.Lock()

    def _start(self, run_id: UUID, stage: str) -> None:
        with self._lock:
            self._open[run_id] = stage
            running, since = self._busy.get(stage, (0, 0.0))
            self._busy[stage] = (running + 1, since if running else time.perf_counter())

    def _stop(self, run_id: UUID) -> None:
        with self._lock:
            stage = self._open.pop(run_id, None)
            if stage is None:
                return
            running, since = self._busy.pop(stage)
            if running > 1:
                self._busy[stage] = (running - 1, since)
            else:
                self.seconds[stage] += time.perf_counter() - since

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, tags=None, metadata=None, **kwargs):
        name = kwargs.get("name") or (serialized or {}).get("name")
        if name in STAGE_OF_NODE and (metadata or {}).get("langgraph_node") == name:
            self._start(run_id, STAGE_OF_NODE[name])

    def on_chain_end(self, outputs, *, run_id, **kwargs):
        self._stop(run_id)

    def on_chain_error(self, error, *, run_id, **kwargs):
        self._stop(run_id)

    def on_chat_model_start(self, serialized, messages, *, run_id, tags=None, **kwargs):
        if REWRITE_TAG in (tags or []):
            self._start(run_id, "rewrite")

    def on_llm_end(self, response, *, run_id, **kwargs):
        self._stop(run_id)
        for generations in response.generations:
            for generation in generations:
                # LangChain's standard count (a local model's, a provider's, a streamed reply's whole)
                usage = getattr(getattr(generation, "message", None), "usage_metadata", None) or {}
                with self._lock:
                    self.llm_tokens["calls"] += 1
                    self.llm_tokens["prompt"] += int(usage.get("input_tokens") or 0)
                    self.llm_tokens["completion"] += int(usage.get("output_tokens") or 0)

    def on_llm_error(self, error, *, run_id, **kwargs):
        self._stop(run_id)


def pipeline(name: str):
    """The compiled graph of a pipeline (`crag.graphs.BUILDERS`)."""
    return compiled(name)


def run_question(pipeline_name: str, ctx: Context, question: str) -> dict:
    """The output and `latency` (s per stage), `wall_s`, `evaluator_calls`, `evaluator_pairs`, `llm` (calls, tokens)."""
    counter = CountingEvaluator(resources.evaluator(ctx))
    timer = StageTimer()
    run_ctx = dataclasses.replace(ctx, evaluator=counter)
    reset_prompt_caches()  # no system is timed on a prompt cache another left warm
    start = time.perf_counter()
    output = pipeline(pipeline_name).invoke({"question": question}, context=run_ctx, config={"callbacks": [timer]})
    wall = time.perf_counter() - start
    return {
        **output,
        "latency": {k: round(v, 4) for k, v in timer.seconds.items()},
        "wall_s": round(wall, 4),
        "evaluator_calls": counter.calls,
        "evaluator_pairs": counter.pairs,
        "llm": dict(timer.llm_tokens),
    }


__all__ = ["run_question"]  # what callers outside the package use
