"""CRAGCompressor and CRAGRetriever as LangChain components, alone and inside real chains."""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents import create_agent
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from crag.components import CRAGCompressor, CRAGRetriever, bound_graph, crag_tool
from crag.questions.checks import InvalidQuestion
from crag.settings import Context
from tests.fakes import (
    ANSWER,
    DOCS,
    WEB,
    EchoChat,
    FakeEvaluator,
    FakeWeb,
    ListRetriever,
    ToolCallingChat,
    WordEmbeddings,
    fake_context,
)

RULES = {"painter": 0.9, "footballer": -0.2, "Oslo": -0.9}
THIRD = Document(page_content="Oslo is the capital of Norway.", metadata={"title": "Oslo", "source": "kb/oslo.txt"})


def compressor(*, rules=RULES, set_weight: float = 0.0, **options) -> CRAGCompressor:
    """The compressor over fakes; `set_weight` 0 (the default here) orders by the evaluator's score alone."""
    context = Context(evaluator=FakeEvaluator(rules), embeddings=WordEmbeddings(), strip_set_weight=set_weight)
    return CRAGCompressor(context=context, **options)


def test_the_compressor_scores_labels_orders_and_drops_by_the_thresholds():
    documents = [THIRD, DOCS[1], DOCS[0]]
    kept = compressor().compress_documents(documents, "What is Anna Berg's occupation?")
    # FakeEvaluator's thresholds are (0.5, -0.5): 0.9 correct, -0.2 ambiguous, -0.9 incorrect (dropped)
    assert [d.metadata["title"] for d in kept] == ["Anna Berg", "Carl Dahl"]
    assert [d.metadata["relevance_score"] for d in kept] == [0.9, -0.2]
    assert [d.metadata["crag_label"] for d in kept] == ["correct", "ambiguous"]
    assert kept[0].metadata["source"] == "kb/anna.txt" and kept[0].page_content == DOCS[0].page_content
    assert "relevance_score" not in DOCS[0].metadata  # the caller's documents are not changed


def test_the_compressor_keeps_as_asked_and_cuts_to_top_n():
    documents = [THIRD, DOCS[1], DOCS[0]]
    question = "Who is Anna Berg?"
    assert [d.metadata["crag_label"] for d in compressor(keep="correct").compress_documents(documents, question)] == [
        "correct"
    ]
    everything = compressor(keep="all").compress_documents(documents, question)
    assert [d.metadata["relevance_score"] for d in everything] == [0.9, -0.2, -0.9]
    assert len(compressor(keep="all", top_n=2).compress_documents(documents, question)) == 2
    assert compressor().compress_documents([], question) == []
    with pytest.raises(ValueError):
        compressor(top_n=0)


def test_the_compressor_orders_by_each_documents_standing_in_its_set():
    """Every chunk of a manual is about its tool and scores alike; the one that answers is the one
    closer to the question than the others. Labels and `keep` stay the evaluator's."""
    rules = {"grep": -0.2, "GLOB": -0.3}
    manual = [
        Document(page_content=text, metadata={"title": "grep", "source": f"man/grep#{n}"})
        for n, text in enumerate(
            [
                "grep searches input files for lines containing a match to a given pattern list.",
                "grep exits with status 0 when a line is selected and 1 when no line is selected.",
                "--exclude-dir=GLOB makes a recursive search skip any folder whose name matches GLOB.",
                "grep reads standard input when no file is given on its command line.",
            ]
        )
    ]
    question = "which option makes a recursive search skip a folder"
    by_score = compressor(rules=rules, keep="all").compress_documents(manual, question)
    assert [d.metadata["source"] for d in by_score][-1] == "man/grep#2"  # the evaluator scores it lowest
    ranked = compressor(rules=rules, set_weight=2.73).compress_documents(manual, question)
    assert ranked[0].metadata["source"] == "man/grep#2"
    assert ranked[0].metadata["relevance_score"] == -0.3 and ranked[0].metadata["crag_label"] == "ambiguous"
    assert ranked[0].metadata["selection_score"] > max(d.metadata["selection_score"] for d in ranked[1:])
    # the evaluator's order and scores when the weight is 0, and for fewer than three documents
    assert [d.metadata["selection_score"] for d in by_score] == [d.metadata["relevance_score"] for d in by_score]
    pair = compressor(rules=rules, set_weight=2.73).compress_documents(manual[:1] + manual[2:3], question)
    assert [d.metadata["source"] for d in pair] == ["man/grep#0", "man/grep#2"]


def test_the_compressor_uses_the_contexts_thresholds():
    strict = CRAGCompressor(context=Context(evaluator=FakeEvaluator(RULES), upper_threshold=0.95, lower_threshold=0.0))
    kept = strict.compress_documents([DOCS[0], DOCS[1]], "Anna Berg?")
    assert [(d.metadata["title"], d.metadata["crag_label"]) for d in kept] == [("Anna Berg", "ambiguous")]


def test_the_compressor_inside_contextual_compression_retriever_and_a_chain():
    evaluator = FakeEvaluator(RULES)
    retriever = ContextualCompressionRetriever(
        base_compressor=CRAGCompressor(context=Context(evaluator=evaluator)),
        base_retriever=ListRetriever(documents=[THIRD, DOCS[1], DOCS[0]]),
    )
    prompt = ChatPromptTemplate.from_template("Passages:\n{context}\nquestion: {question}")
    chain = (
        {
            "context": retriever
            | RunnableLambda(lambda ds: "\n".join(f"{d.metadata['title']}: {d.page_content}" for d in ds)),
            "question": RunnablePassthrough(),
        }
        | prompt
        | EchoChat()
        | StrOutputParser()
    )
    assert chain.invoke("What is Anna Berg's occupation?") == DOCS[0].page_content
    assert evaluator.calls == [[THIRD.page_content, DOCS[1].page_content, DOCS[0].page_content]]  # one batched call


def crag_retriever(rules, *, web=None, documents=None) -> CRAGRetriever:
    context = Context(
        evaluator=FakeEvaluator(rules),
        web_backend=web or "none",
        rewrite="off",
        refine_mode="selection",
        recheck_threshold=None,  # no chat model is asked (test_recheck.py asks one)
    )
    return CRAGRetriever(retriever=ListRetriever(documents=documents or list(DOCS)), context=context)


def test_the_retriever_returns_the_refined_internal_knowledge_on_correct():
    found = crag_retriever({"painter": 0.9}).invoke("What is Anna Berg's occupation?")
    assert found and {d.metadata["crag_action"] for d in found} == {"correct"}
    assert {d.metadata["origin"] for d in found} == {"internal"}
    best = found[0]
    assert "painter" in best.page_content and best.metadata["title"] == "Anna Berg"
    assert best.metadata["source"] == "kb/anna.txt" and best.metadata["relevance_score"] == 0.9


def test_the_retriever_searches_the_web_on_incorrect_and_names_the_page():
    web = FakeWeb(WEB)
    found = crag_retriever({"seascapes": 0.7}, web=web).invoke("What did Anna Berg paint?")
    assert web.queries == ["What did Anna Berg paint?"]  # rewrite="off": the question itself
    assert [d.metadata["origin"] for d in found] == ["external"]
    assert found[0].metadata["source"] == "local://Anna Berg (painter)"
    assert found[0].metadata["crag_action"] == "incorrect" and "seascapes" in found[0].page_content


def test_the_retriever_returns_nothing_when_nothing_relevant_and_no_web():
    assert crag_retriever({}).invoke("What is the capital of Peru?") == []


def test_the_retriever_refuses_an_empty_question():
    with pytest.raises(InvalidQuestion):
        crag_retriever({}).invoke("   ")


def test_the_retriever_in_an_lcel_chain_answers_from_the_corrected_knowledge():
    prompt = ChatPromptTemplate.from_template("Passages:\n{context}\nquestion: {question}")
    retriever = crag_retriever({"painter": 0.9}, documents=[DOCS[1], DOCS[0]])
    chain = (
        {
            "context": retriever | RunnableLambda(lambda ds: "\n".join(d.page_content for d in ds)),
            "question": RunnablePassthrough(),
        }
        | prompt
        | EchoChat()
        | StrOutputParser()
    )
    answer = chain.invoke("What is Anna Berg's occupation?")
    assert "painter" in answer and "footballer" not in answer


def test_the_bound_graph_runs_on_its_own_context():
    bound = bound_graph(fake_context())
    result = bound.invoke({"question": "What is Anna Berg's occupation?"})
    assert result["action"] == "correct" and result["answer"] == ANSWER
    streamed = list(bound.stream({"question": "What is Anna Berg's occupation?"}, stream_mode="updates"))
    assert any("generate" in chunk for chunk in streamed)


def test_the_tool_answers_with_its_sources_as_an_agent_calls_it():
    tool = crag_tool(fake_context(), name="painters", description="Questions about Swedish painters.")
    assert (tool.name, tool.description) == ("painters", "Questions about Swedish painters.")
    assert set(tool.args) == {"question"}
    text = tool.invoke({"question": "What is Anna Berg's occupation?"})
    assert text.splitlines()[0] == ANSWER and "[1] Anna Berg (kb/anna.txt)" in text.splitlines()[1:]
    # an agent's tool call, as a chat model emits it
    message = tool.invoke(
        {
            "type": "tool_call",
            "id": "call-1",
            "name": "painters",
            "args": {"question": "What is Anna Berg's occupation?"},
        }
    )
    assert message.tool_call_id == "call-1" and message.content == text


def test_the_tool_runs_async_too():

    tool = crag_tool(fake_context())
    text = asyncio.run(tool.ainvoke({"question": "What is Anna Berg's occupation?"}))
    assert text.startswith(ANSWER) and tool.name == "crag"


def test_an_agents_tool_message_carries_the_answer_as_text_and_its_record_as_the_artifact():
    question = "What is Anna Berg's occupation?"
    call = {"name": "painters", "args": {"question": question}, "id": "call-1", "type": "tool_call"}
    model = ToolCallingChat(messages=iter([AIMessage("", tool_calls=[call]), AIMessage("She was a painter.")]))
    tool = crag_tool(fake_context(), name="painters", description="Questions about Swedish painters.")
    agent = create_agent(model, tools=[tool])
    out = agent.invoke({"messages": [{"role": "user", "content": "What did Anna Berg do?"}]})
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    told = out["messages"][2]
    assert told.tool_call_id == "call-1" and told.content.splitlines()[0] == ANSWER
    assert "[1] Anna Berg (kb/anna.txt)" in told.content
    assert set(told.artifact) == {"answer", "question", "action", "grounded", "sources", "citations"}
    assert told.artifact["answer"] == ANSWER and told.artifact["action"] == "correct" and told.artifact["grounded"]
    assert [s["title"] for s in told.artifact["sources"]] == ["Anna Berg"]
    assert {n for c in told.artifact["citations"] for n in c["sources"]} == {1}
    # the agent's model read the text, not the artifact
    assert model.prompts[-1] == told.content and "citations" not in model.prompts[-1]


def test_an_agents_tool_call_runs_async_too():
    call = {"name": "crag", "args": {"question": "What is Anna Berg's occupation?"}, "id": "c", "type": "tool_call"}
    message = asyncio.run(crag_tool(fake_context()).ainvoke(call))
    assert message.content.startswith(ANSWER) and message.artifact["sources"][0]["source"] == "kb/anna.txt"
