"""Progress events from the nodes, sent both to LangGraph's `stream_mode="custom"` and as LangChain
custom callback events (`astream_events`), as each interface sees only its own."""

from __future__ import annotations

import contextlib
from typing import Any

from langchain_core.callbacks import dispatch_custom_event
from langsmith.run_helpers import get_current_run_tree

# tags on the chat-model calls: only the answer is streamed as tokens ("nostream" hides the others)
ANSWER_TAGS = ["crag:answer"]
REWRITE_TAGS = ["crag:rewrite", "nostream"]
CONDENSE_TAGS = ["crag:condense", "nostream"]
REQUERY_TAGS = ["crag:requery", "nostream"]
REASONING_TAGS = ["crag:self_reasoning", "nostream"]  # its replies are JSON or a step's, not the answer's words
CANDIDATE_TAGS = ["crag:candidate", "nostream"]  # Self-RAG's candidates: only the one chosen is the answer
FLARE_TAGS = ["crag:flare", "nostream"]  # FLARE's questions to search with: queries, not the answer


def emit(runtime: Any, node: str, **payload: Any) -> None:
    """Send `{"node": node, **payload}` to the run's custom stream and as a `crag` callback event."""
    event = {"node": node, **payload}
    runtime.stream_writer(event)
    with contextlib.suppress(RuntimeError):  # outside a run (no parent run id) nobody listens for callbacks
        dispatch_custom_event("crag", event)


def trace_metadata(**metadata: Any) -> None:
    """Add `metadata` to the traced run of the node calling this (LangSmith shows it in the run's Metadata
    tab and can filter runs by it); nothing when the run is not traced. LangChain's tracer makes the node's
    run the current run tree while the node runs (`langchain_core.runnables.config._set_config_context`) and
    sends the run's metadata again when the run ends, so metadata added here arrives with it."""
    run = get_current_run_tree()
    if run is not None:
        run.add_metadata(metadata)
