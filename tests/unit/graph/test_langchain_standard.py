"""LangChain's own standard tests (`langchain-tests`) for CRAG's retrievers (CRAGRetriever, HybridRetriever) and tool, on the shared fakes.

They check what any LangChain retriever or tool must do, as LangChain's integrations are checked:
`k` at construction and per call, Documents from invoke and ainvoke, the tool's name, input schema,
construction and its answers through invoke and ainvoke, called directly and as a tool call.
"""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests, ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from crag.components import CRAGRetriever, crag_tool
from crag.search.hybrid import HybridRetriever
from tests.fakes import ListRetriever, WordEmbeddings, fake_context

# six painters, each relevant to the question: enough strips for any k the standard tests ask for
PAINTERS = [
    Document(
        page_content=f"Painter number {i} was a Swedish painter of the sea, and her works hang in Stockholm.",
        metadata={"title": f"Painter {i}", "source": f"kb/painter-{i}.txt"},
    )
    for i in range(6)
]


class TestCRAGRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return CRAGRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"retriever": ListRetriever(documents=PAINTERS), "context": fake_context({"painter": 0.9}, k=6)}

    @property
    def retriever_query_example(self) -> str:
        return "Who was a Swedish painter?"


class TestHybridRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return HybridRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        store = InMemoryVectorStore.from_documents(PAINTERS, WordEmbeddings())
        return {"documents": PAINTERS, "retriever": store, "k": 6}

    @property
    def retriever_query_example(self) -> str:
        return "Who was a Swedish painter?"


class CRAGTool:
    """What both tool suites construct and ask: the CRAG tool over the fakes, and one question."""

    @property
    def tool_constructor(self) -> BaseTool:
        return crag_tool(
            fake_context({"painter": 0.9}), name="painters", description="Answers questions about painters."
        )

    @property
    def tool_invoke_params_example(self) -> dict:
        return {"question": "What is Anna Berg's occupation?"}


class TestCRAGToolUnit(CRAGTool, ToolsUnitTests):
    pass


class TestCRAGToolIntegration(CRAGTool, ToolsIntegrationTests):
    pass
