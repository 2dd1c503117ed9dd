"""`retrieve`: fetch the top-k documents for the (self-contained) question."""

from __future__ import annotations

from langgraph.runtime import Runtime

from crag import resources
from crag.events import emit
from crag.nodes.timing import timed
from crag.passages import source_of, title_of
from crag.settings import Context
from crag.state import State


@timed("retrieve")
def retrieve(state: State, runtime: Runtime[Context]) -> dict:
    documents = resources.retrieve(resources.context_of(runtime), state["question"])
    emit(runtime, "retrieve", documents=[{"title": title_of(d), "source": source_of(d)} for d in documents])
    return {"documents": documents}
