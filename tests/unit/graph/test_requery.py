"""The knowledge base searched again when the grade finds nothing relevant (`Context.requery`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda

from crag.graphs.crag import graph
from crag.knowledge.requery import merge_graded, query_text
from crag.settings import Context
from tests.fakes import DOCS, FakeEvaluator, FakeWeb, WordEmbeddings, fake_chat

QUESTION = "What is Anna Berg's occupation?"
HIDDEN = Document(
    page_content="Anna Berg worked all her life as a painter of seascapes.",
    metadata={"title": "Berg, Anna", "source": "kb/berg.txt"},
)


def retriever(queries: list[str]):
    """The first search finds DOCS; a search for "seascape painter" finds the hidden document too."""

    def search(query: str) -> list[Document]:
        queries.append(query)
        return [HIDDEN, DOCS[1]] if "seascape" in query else list(DOCS)

    return RunnableLambda(search)


def context(replies, queries, *, requery="rewrite", web=None, rules=None, **kw) -> Context:
    settings = {
        "evaluator": FakeEvaluator(rules or {"seascapes": 0.9, "Swedish": 0.0}),
        "chat_model": fake_chat(*replies),
        "retriever": retriever(queries),
        "web_backend": web if web is not None else "none",
        "embeddings": WordEmbeddings(),
        "requery": requery,
    }
    return Context(**{**settings, **kw})


def nodes_of(ctx) -> list[str]:
    return [
        name for update in graph.stream({"question": QUESTION}, context=ctx, stream_mode="updates") for name in update
    ]


def test_a_second_search_that_finds_a_relevant_document_makes_the_action_correct():
    queries: list[str] = []
    ctx = context(["seascape painter", "She painted seascapes."], queries)
    assert nodes_of(ctx) == ["contextualize", "retrieve", "grade", "requery", "refine", "generate", "finish"]
    queries.clear()
    result = graph.invoke(
        {"question": QUESTION}, context=context(["seascape painter", "She painted seascapes."], queries)
    )
    assert queries == [QUESTION, "seascape painter"]
    assert result["requeried"] == "seascape painter" and result["action"] == "correct"
    assert [d.page_content for d in result["documents"]][-1] == HIDDEN.page_content
    assert len(result["documents"]) == 3 and result["scores"][-1] == 0.9
    assert "after searching the knowledge base again" in result["reason"]
    assert "seascapes" in result["knowledge"] and "requery" in result["timings"]


def test_the_web_still_runs_when_the_second_search_finds_nothing_better():
    queries: list[str] = []
    web = FakeWeb([Document(page_content="Anna Berg (1901) was a Swedish painter.", metadata={"title": "Anna Berg"})])
    ctx = context(["occupation of Anna", "A painter."], queries, web=web, rules={"Swedish painter": 0.0})
    result = graph.invoke({"question": QUESTION}, context=ctx)
    assert queries == [QUESTION, "occupation of Anna"] and result["requeried"] == "occupation of Anna"
    assert result["action"] == "ambiguous" and result["web_status"] == "searched"
    assert [d.page_content for d in result["documents"]] == [
        d.page_content for d in DOCS
    ]  # nothing better: as they were


def test_off_correct_or_a_forced_route_never_search_again():
    for settings, rules in (({"requery": "off"}, None), ({}, {"painter": 0.9}), ({"route": "ambiguous"}, None)):
        queries: list[str] = []
        ctx = context(["seascape painter", "A painter."], queries, rules=rules, **settings)
        assert "requery" not in nodes_of(ctx)
        assert queries == [QUESTION]


class FailingOnce(BaseChatModel):
    """Raises on its first call (the second search's query), answers afterwards."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "failing-once"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.calls += 1
        if self.calls == 1:
            raise TimeoutError("the model server did not answer")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="A painter."))])


def test_a_failing_or_empty_model_leaves_the_first_search():
    for replies in ([QUESTION], ["   "]):  # the question repeated, or nothing: no new search
        queries: list[str] = []
        result = graph.invoke({"question": QUESTION}, context=context([*replies, "A painter."], queries))
        assert queries == [QUESTION] and result["requeried"] == "" and result["action"] == "ambiguous"
    queries = []
    events = list(
        graph.stream(
            {"question": QUESTION}, context=context([], queries, chat_model=FailingOnce()), stream_mode="custom"
        )
    )
    assert queries == [QUESTION]
    assert any("the model server did not answer" in e.get("requery_error", "") for e in events)


def test_an_empty_knowledge_base_is_not_searched_again():
    queries: list[str] = []
    ctx = context(["seascape painter", "x"], queries, retriever=RunnableLambda(lambda q: queries.append(q) or []))
    assert "requery" not in nodes_of(ctx) and queries == [QUESTION]


def test_query_text_takes_the_first_paragraph_without_labels():
    assert query_text('Query: "seascape painter"\n\nMore text', QUESTION) == "seascape painter"
    assert query_text("what is anna berg's occupation", QUESTION) is None
    assert query_text("", QUESTION) is None
    assert len(query_text("word " * 500, QUESTION)) == 600


docs = st.lists(st.text(alphabet="abcde", min_size=1, max_size=3), max_size=8, unique=True)
scores = st.floats(min_value=-1, max_value=1, allow_nan=False)


@given(docs, docs, st.data(), st.integers(min_value=1, max_value=10))
def test_merge_keeps_the_best_k_in_the_order_found(first_texts, second_texts, data, k):
    second_texts = [t for t in second_texts if t not in first_texts]  # the node grades only what is new
    first = [Document(page_content=t) for t in first_texts]
    second = [Document(page_content=t) for t in second_texts]
    first_scores = data.draw(st.lists(scores, min_size=len(first), max_size=len(first)))
    second_scores = data.draw(st.lists(scores, min_size=len(second), max_size=len(second)))
    kept, kept_scores = merge_graded(first, first_scores, second, second_scores, k)
    texts = [d.page_content for d in kept]
    assert len(texts) == len(set(texts)) == min(k, len(set(first_texts) | set(second_texts)))
    if not second or (k <= len(first) and max(second_scores, default=-2) < min(first_scores[:k], default=2)):
        assert texts == first_texts[: len(texts)] or len(first) > k
    dropped = [s for d, s in [*zip(first, first_scores), *zip(second, second_scores)] if d.page_content not in texts]
    assert all(s <= min(kept_scores) for s in dropped)
