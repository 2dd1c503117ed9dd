"""Progress events from the nodes, delivered on both streaming interfaces.

LangGraph's `stream_mode="custom"` (the CLI, the Agent Server, LangGraph Studio) only sees what a
node writes to `runtime.stream_writer`; LangChain's `astream_events` (LangServe's `/stream_events`,
`RemoteRunnable.astream_events`) only sees custom callback events. Every event goes to both, so a
client on either side sees the same scores, action, query, results and strips.
"""

from __future__ import annotations

import contextlib
from typing import Any

from langchain_core.callbacks import dispatch_custom_event

# Tags on the graph's chat-model calls. Only the answer is streamed as tokens: LangGraph leaves
# calls tagged "nostream" out of `stream_mode="messages"`, and clients of `astream_events` can
# keep the `crag:answer` tag.
ANSWER_TAGS = ["crag:answer"]
REWRITE_TAGS = ["crag:rewrite", "nostream"]
CONDENSE_TAGS = ["crag:condense", "nostream"]
REQUERY_TAGS = ["crag:requery", "nostream"]


def emit(runtime: Any, node: str, **payload: Any) -> None:
    """Send `{"node": node, **payload}` to the run's custom stream and as a `crag` callback event."""
    event = {"node": node, **payload}
    runtime.stream_writer(event)
    with contextlib.suppress(RuntimeError):  # outside a run (no parent run id) nobody listens for callbacks
        dispatch_custom_event("crag", event)
