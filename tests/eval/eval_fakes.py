"""Fakes for the harness tests: an evaluator, a retriever, a web backend and a chat model that
answers from its prompt, so every system runs end to end in milliseconds."""

from __future__ import annotations

import json
import re
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from crag.backends.web import WebResult


class FakeEvaluator:
    """Scores a text by the first rule whose word it contains; records every call's texts."""

    thresholds = (0.5, -0.5)

    def __init__(self, rules: dict[str, float], default: float = -0.9):
        self.rules, self.default, self.calls = rules, default, []

    def invoke(self, value, config=None):
        texts = [d.page_content if isinstance(d, Document) else d for d in value["documents"]]
        self.calls.append(texts)
        return [next((s for word, s in self.rules.items() if word in t), self.default) for t in texts]


class FakeWeb:
    def __init__(self, results):
        self.results, self.queries = results, []

    def search(self, query, k):
        self.queries.append(query)
        return self.results[:k]


class EchoChat(BaseChatModel):
    """Rewrites into the question's capitalised words; answers with the first passage's text.

    `interrupt_after` raises KeyboardInterrupt on that answer, as a user pressing Ctrl-C would.
    """

    prompts: list = Field(default_factory=list)
    interrupt_after: int | None = None

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        prompt = str(messages[-1].content)
        self.prompts.append(prompt)
        if prompt.rstrip().endswith("query:"):
            question = prompt.rsplit("question:", 1)[1].split("\n")[0].split(" ", 2)[2]  # without "What is"
            text = ", ".join(re.findall(r"\b[A-Z][a-z]+\b", question)[:3])
        else:
            answers = sum(1 for p in self.prompts if not p.rstrip().endswith("query:"))
            if self.interrupt_after is not None and answers > self.interrupt_after:
                raise KeyboardInterrupt
            found = re.search(r"^(?:Passages:\n|Documents: )(?:[^:\n]*: )?(.+)$", prompt, re.MULTILINE)
            text = found.group(1) if found else "I do not know."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


# Two questions: the knowledge base answers the first (Anna), only the web answers the second (Carl).
QUESTIONS = [
    {"id": "q1", "question": "What is Anna Berg's occupation?", "answers": ["painter"]},
    {"id": "q2", "question": "What is Carl Dahl's occupation?", "answers": ["footballer", "Footballer"]},
]
KB = [
    {"title": "Anna Berg", "text": "Anna Berg was a Swedish painter. She painted the sea. Her works hang in Stockholm."},
    {"title": "Oslo", "text": "Oslo is the capital of Norway. It lies at the head of a fjord and has many museums."},
]
WEB = [WebResult(title="Carl Dahl", url="local://Carl%20Dahl#0",
                 content="Carl Dahl is a footballer from Oslo who plays as a striker for a club in Bergen.")]
RULES = {"painter": 0.9, "footballer": 0.8, "Oslo is": -0.2}


def kb_documents(question: str) -> list[Document]:
    return [Document(page_content=r["text"], metadata={"title": r["title"], "source": f"kb/{i}"})
            for i, r in enumerate(KB)]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


class SubjectEvaluator(FakeEvaluator):
    """Relevant (0.9) when a text names the question's subject (its capitalised words), else −0.9."""

    def __init__(self):
        super().__init__({})

    def invoke(self, value, config=None):
        subject = " ".join(re.findall(r"\b[A-Z][a-z]+\b", value["question"])[1:3])
        texts = [d.page_content if isinstance(d, Document) else d for d in value["documents"]]
        self.calls.append(texts)
        return [0.9 if subject and subject in t else -0.9 for t in texts]
