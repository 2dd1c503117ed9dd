"""Fakes shared by the graph tests."""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from crag.backends.web import WebResult

DOCS = [
    Document(page_content="Anna Berg was a Swedish painter. She painted the sea. Her works hang in Stockholm.",
             metadata={"title": "Anna Berg", "source": "kb/anna.txt"}),
    Document(page_content="Carl Dahl is a footballer from Oslo. He plays as a striker for a club.",
             metadata={"title": "Carl Dahl", "source": "kb/carl.txt"}),
]
WEB = [WebResult(title="Anna Berg (painter)", url="local://Anna Berg (painter)",
                 content="Anna Berg (1890–1950) was a Swedish painter of seascapes and harbours.")]


class FakeEvaluator:
    """Scores a text by the first rule whose word it contains; counts its (batched) calls."""

    thresholds = (0.5, -0.5)

    def __init__(self, rules: dict[str, float], default: float = -0.9):
        self.rules, self.default, self.calls = rules, default, []

    def _score(self, text: str) -> float:
        return next((s for word, s in self.rules.items() if word in text), self.default)

    def invoke(self, value, config=None):
        docs = value["documents"]
        texts = [d.page_content if isinstance(d, Document) else d for d in docs]
        self.calls.append(texts)
        return [self._score(t) for t in texts]


class FakeWeb:
    def __init__(self, results=None, error: Exception | None = None):
        self.results, self.error, self.queries = results or [], error, []

    def search(self, query, k):
        self.queries.append(query)
        if self.error:
            raise self.error
        return self.results[:k]


class StoppingChat(BaseChatModel):
    """Replies with `reply` cut at the first stop sequence it is given, as real models do; records the stops."""

    reply: str
    stops: list = []

    @property
    def _llm_type(self) -> str:
        return "stopping"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.stops.append(stop)
        text = self.reply
        for marker in stop or []:
            text = text.split(marker)[0]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def fake_chat(*replies: str) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage(content=r) for r in replies]))
