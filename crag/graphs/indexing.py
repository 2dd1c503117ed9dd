"""The `index` graph (wiring only): documents in, chunked and written into the knowledge base through
LangChain's Indexing API, the report out; as langchain-ai/rag-research-agent-template's `index_graph`.
The run's `Context` names the store (chroma_dir or chroma_url, collection, embeddings, or a vector store
as its retriever), as for the answering graphs."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from crag.nodes import index_docs
from crag.settings import Context
from crag.state import IndexInput, IndexState


def build_index_graph() -> StateGraph[IndexState, Context, IndexInput, IndexState]:
    builder = StateGraph(IndexState, context_schema=Context, input_schema=IndexInput)
    builder.add_node("index_docs", index_docs)
    builder.add_edge(START, "index_docs")
    builder.add_edge("index_docs", END)
    return builder


index_graph = build_index_graph().compile(name="index")  # for langgraph.json
