"""Running one question through one system, with the instruments the harness needs.

The baselines are LangGraph graphs built from the CRAG graph's own nodes (`contextualize`,
`retrieve`, `generate`), so they validate, retrieve, prompt and cite exactly as CRAG does and
differ only in what knowledge reaches `generate`:

- `rag`: the retrieved documents, whole, in rank order;
- `rag_web`: the same plus the web results for the question itself, whole (no rewrite, no
  evaluator: the paper's "RAG w. web", Table 5);
- `no_retrieval`: nothing (the graph's no-knowledge prompt).

Per-stage latency comes from LangChain callbacks on the graph's node runs (so the two parallel
branches of an Ambiguous run are each timed by themselves); evaluator calls from a counting
wrapper injected through `Context(evaluator=...)`.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import defaultdict
from functools import cache
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from crag import resources
from crag.graphs.crag import graph
from crag.models.chat import reset_prompt_caches
from crag.nodes import contextualize, generate, retrieve
from crag.passages import source_of, title_of
from crag.records import Strip
from crag.settings import Context
from crag.state import InputState, OutputState, State

# graph node -> reported stage
STAGE_OF_NODE = {
    "retrieve": "retrieve",
    "grade": "grade",
    "requery": "requery",
    "refine": "refine",
    "rewrite_and_search": "search",
    "web_search": "search",
    "generate": "generate",
}
REWRITE_TAG = "crag:rewrite"


class CountingEvaluator:
    """Passes calls through to the evaluator and counts them (calls, and documents scored)."""

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
    """Seconds spent in each graph node of one run and in the query rewrite's model call, and the
    generator's token counts where the model reports them (llama.cpp and OpenAI do): those do not
    depend on how busy the CPU is."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.llm_tokens = {"prompt": 0, "completion": 0, "calls": 0}
        self._open: dict[UUID, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def _start(self, run_id: UUID, stage: str) -> None:
        with self._lock:
            self._open[run_id] = (stage, time.perf_counter())

    def _stop(self, run_id: UUID) -> None:
        with self._lock:
            opened = self._open.pop(run_id, None)
            if opened:
                self.seconds[opened[0]] += time.perf_counter() - opened[1]

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
                usage = (generation.generation_info or {}).get("usage") or {}
                with self._lock:
                    self.llm_tokens["calls"] += 1
                    self.llm_tokens["prompt"] += int(usage.get("prompt_tokens") or 0)
                    self.llm_tokens["completion"] += int(usage.get("completion_tokens") or 0)

    def on_llm_error(self, error, *, run_id, **kwargs):
        self._stop(run_id)


def _whole(documents: list, origin: str) -> list[Strip]:
    """Passages (`crag.passages`: retrieved chunks or fetched web paragraphs) as unscored whole strips."""
    return [
        Strip(
            text=d.page_content,
            score=0.0,
            selection_score=0.0,
            lifted=False,
            title=title_of(d),
            source=source_of(d),
            origin=origin,
            doc=i,  # type: ignore[typeddict-item]
            start=0,
            end=len(d.page_content),
        )
        for i, d in enumerate(documents)
    ]


def use_documents(state: dict, runtime: Runtime[Context]) -> dict:
    """RAG: every retrieved document becomes knowledge as it is."""
    return {"internal_knowledge": _whole(state.get("documents", []), "internal")}


def web_search(state: dict, runtime: Runtime[Context]) -> dict:
    """RAG with web: the results for the question itself, whole, after the documents (searched and
    fetched through `crag.resources`, as CRAG's own node does)."""
    ctx = resources.context_of(runtime)
    try:
        results = resources.web_search(ctx, state["question"])
    except (resources.WebSearchError, TimeoutError, OSError) as exc:
        return {"external_knowledge": [], "web_error": str(exc)}
    passages, errors = resources.fetch_pages(ctx, results)
    return {"external_knowledge": _whole(passages, "external"), "web_error": "; ".join(errors) or None}


@cache
def pipeline(name: str):
    """The compiled graph of a pipeline: CRAG's own graph, or a baseline built from its nodes."""
    if name == "crag":
        return graph

    steps = {
        "no_retrieval": [],
        "rag": ["retrieve", "use_documents"],
        "rag_web": ["retrieve", "use_documents", "web_search"],
    }
    if name not in steps:
        raise ValueError(f"unknown pipeline {name!r}")
    nodes = {"retrieve": retrieve, "use_documents": use_documents, "web_search": web_search}
    builder = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    order = ["contextualize", *steps[name], "generate"]
    builder.add_node("contextualize", contextualize)
    for step in steps[name]:
        builder.add_node(step, nodes[step])
    builder.add_node("generate", generate)
    for a, b in zip([START, *order], [*order, END]):
        builder.add_edge(a, b)
    return builder.compile(name=f"eval-{name}")


def forget_prompt_cache() -> None:
    """Make the local generator evaluate the next prompt from scratch.

    llama.cpp reuses the longest prefix the new prompt shares with the previous one. When two
    systems answer the same question back to back, CRAG's first refined strip is often the start
    of RAG's first document, and the second system would be timed on a warm cache that no real
    request has.
    """
    reset_prompt_caches()


def run_question(pipeline_name: str, ctx: Context, question: str) -> dict:
    """One system's answer to one question, with its stage times and evaluator counts.

    Returns the graph's output plus `latency` (seconds per stage), `wall_s`, `evaluator_calls`,
    `evaluator_pairs` and `llm` (model calls and tokens); an exception in the system propagates.
    """
    counter = CountingEvaluator(resources.evaluator(ctx))
    timer = StageTimer()
    run_ctx = dataclasses.replace(ctx, evaluator=counter)
    forget_prompt_cache()
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
