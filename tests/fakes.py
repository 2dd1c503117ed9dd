"""The fakes every test shares: an evaluator, a web backend and chat models that answer in
milliseconds, the small corpora they work on, and `Context`s built from them.

One importable module (`from tests.fakes import …`) instead of a copy per test folder.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, convert_to_messages
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from pydantic import Field

from crag.passages import passage
from crag.prompts import DIRECT_ANSWER_PROMPT, EVIDENCE_PROMPT, RELEVANCE_PROMPT, TRAJECTORY_PROMPT
from crag.settings import Context

DOCS = [
    Document(
        page_content="Anna Berg was a Swedish painter. She painted the sea. Her works hang in Stockholm.",
        metadata={"title": "Anna Berg", "source": "kb/anna.txt"},
    ),
    Document(
        page_content="Carl Dahl is a footballer from Oslo. He plays as a striker for a club.",
        metadata={"title": "Carl Dahl", "source": "kb/carl.txt"},
    ),
]
# two passages about one subject, both relevant, the painter one judged best by `PASSED_OVER_RULES`: an
# answer from the Stockholm one stands (the rule that replaced such answers was removed on 2026-11-27)
PASSED_OVER_DOCS = [
    Document(
        page_content="Anna Berg was a Swedish painter of harbours and seascapes.",
        metadata={"title": "", "source": "kb/a.txt"},
    ),
    Document(page_content="Anna Berg lived in Stockholm.", metadata={"title": "", "source": "kb/b.txt"}),
]
PASSED_OVER_RULES = {"painter": 0.9, "Stockholm": 0.7}
WEB = [
    passage(
        "Anna Berg (1890–1950) was a Swedish painter of seascapes and harbours.",
        title="Anna Berg (painter)",
        source="local://Anna Berg (painter)",
    )
]


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


class FakeChat(GenericFakeChatModel):
    """LangChain's fake chat model (streams word by word, as a provider's does) that also keeps every
    prompt it was sent, the last message's text, in `prompts`."""

    prompts: list = Field(default_factory=list)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.prompts.append(str(messages[-1].content))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


class ToolCallingChat(FakeChat):
    """FakeChat for an agent loop: it takes the agent's tools (`bind_tools`, kept in `tools`) and gives its
    `messages` in turn, tool calls among them, as a provider's tool-calling model does."""

    tools: list = Field(default_factory=list)

    def bind_tools(self, tools, **kwargs):
        self.tools.extend(tools)
        return self


def fake_chat(*replies: str) -> FakeChat:
    """A model that gives `replies` in turn, then its last one to every further call (asked again, as
    `generate` asks when the first answer does not stand, it says the same)."""
    said = [AIMessage(content=r) for r in replies]
    return FakeChat(messages=itertools.chain(said, itertools.repeat(said[-1]) if said else []))


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


# The harness's two questions: the knowledge base answers the first (Anna), only the web answers the second (Carl).
HARNESS_QUESTIONS = [
    {"id": "q1", "question": "What is Anna Berg's occupation?", "answers": ["painter"]},
    {"id": "q2", "question": "What is Carl Dahl's occupation?", "answers": ["footballer", "Footballer"]},
]
HARNESS_KB = [
    {
        "title": "Anna Berg",
        "text": "Anna Berg was a Swedish painter. She painted the sea. Her works hang in Stockholm.",
    },
    {"title": "Oslo", "text": "Oslo is the capital of Norway. It lies at the head of a fjord and has many museums."},
]
HARNESS_WEB = [
    passage(
        "Carl Dahl is a footballer from Oslo who plays as a striker for a club in Bergen.",
        title="Carl Dahl",
        source="local://Carl%20Dahl#0",
    )
]
HARNESS_RULES = {"painter": 0.9, "footballer": 0.8, "Oslo is": -0.2}


def kb_documents(question: str) -> list[Document]:
    return [
        Document(page_content=r["text"], metadata={"title": r["title"], "source": f"kb/{i}"})
        for i, r in enumerate(HARNESS_KB)
    ]


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


ANSWER = "Anna Berg was a painter."


class ScriptedChat(BaseChatModel):
    """Answers any number of requests: keywords for the rewrite prompt, an empty rewrite for the follow-up
    prompt (unusable, so the rules resolve the follow-up), ANSWER otherwise, streamed word by word.

    With `interrupt_at` n, the n-th answer raises KeyboardInterrupt after its first word, as a user
    pressing Ctrl-C while it is written would; the answers before and after it are whole.
    """

    interrupt_at: int | None = None
    answers: int = 0  # answers begun so far

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _reply(self, messages) -> str:
        if str(messages[-1].content).rstrip().endswith("query:"):
            return "Anna Berg, occupation"
        if str(messages[-1].content).rstrip().endswith("Rewritten:"):
            return ""
        self.answers += 1
        return ANSWER

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        text = self._reply(messages)
        if self.answers == self.interrupt_at:
            raise KeyboardInterrupt
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        words = self._reply(messages).split(" ")
        interrupted = self.answers == self.interrupt_at
        for i, word in enumerate(words):
            if interrupted and i == 1:
                raise KeyboardInterrupt
            text = word if i == 0 else " " + word
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
            if run_manager:
                run_manager.on_llm_new_token(text, chunk=chunk)
            yield chunk


def fake_context(rules=None, **settings) -> Context:
    """Fake models, retriever and web, with any other settings (k, thresholds, …) on top."""
    fakes = {
        "evaluator": FakeEvaluator(rules or {"painter": 0.9}),
        "chat_model": ScriptedChat(),
        "retriever": RunnableLambda(lambda q: list(DOCS)),
        "web_backend": FakeWeb(WEB),
        "embeddings": WordEmbeddings(),  # refinement ranks strips with them
    }
    return Context(**{**fakes, **settings})


class ListRetriever(BaseRetriever):
    """A base retriever the way apps have them: a BaseRetriever over a fixed list of documents."""

    documents: list[Document]

    def _get_relevant_documents(self, query, *, run_manager):
        return list(self.documents)


def word_vector(text: str, dims: int = 64) -> list[float]:
    """A normalised bag of hashed lowercase words: texts sharing words are near, in milliseconds
    (the fake embedding servers and `WordEmbeddings` compute the same vectors)."""
    vector = [0.0] * dims
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dims] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class WordEmbeddings(Embeddings):
    """LangChain Embeddings from `word_vector`: an application's own embeddings object, without a model."""

    def __init__(self, dims: int = 64):
        self.dims = dims
        self.calls = 0

    def embed_documents(self, texts):
        self.calls += 1
        return [word_vector(t, self.dims) for t in texts]

    def embed_query(self, text):
        self.calls += 1
        return word_vector(text, self.dims)


class GradingChat(ScriptedChat):
    """ScriptedChat that also grades like the tutorial's grader: "yes" to a document naming one of
    `relevant`, "no" to any other; `structured`: through `with_structured_output`, as a provider with tool
    calling answers (then `structured_calls` counts its grades)."""

    relevant: tuple[str, ...] = ("Anna Berg",)
    structured: bool = False
    structured_calls: int = 0

    def _grade(self, messages) -> str:
        document = str(messages[-1].content).split("User question:")[0]
        return "yes" if any(name in document for name in self.relevant) else "no"

    def _reply(self, messages) -> str:
        if str(messages[-1].content).startswith("Retrieved document:"):
            return self._grade(messages)
        return super()._reply(messages)

    def with_structured_output(self, schema, include_raw=False, **kwargs):
        if not self.structured:
            raise NotImplementedError

        def grade(messages):
            self.structured_calls += 1
            parsed = schema(binary_score=self._grade(messages))
            return {"raw": AIMessage(content=""), "parsed": parsed, "parsing_error": None} if include_raw else parsed

        return RunnableLambda(grade)


# a sentence of DOCS[0] word for word, and one it does not say (Danish, not Swedish)
VERBATIM = "Anna Berg was a Swedish painter."
INVENTED = "Anna Berg was a Danish painter."


class ReasoningChat(ScriptedChat):
    """ScriptedChat that also takes Self-Reasoning's steps, recording each call's messages as (role, text):
    "yes, …" to the relevance question when the documents name one of `relevant`, else "no, …"; `quotes` as
    its evidence ({document, sentence, reason}); an analysis and ANSWER. `structured`: its steps through
    `with_structured_output`, as a provider with tool calling replies (an empty text and the parsed reply)."""

    relevant: tuple[str, ...] = ("Anna Berg",)
    quotes: list = Field(default_factory=lambda: [{"document": 1, "sentence": VERBATIM, "reason": "it says so"}])
    structured: bool = False
    calls: list = Field(default_factory=list)

    def _reply(self, messages) -> str:
        last = str(messages[-1].content)
        if last.endswith(RELEVANCE_PROMPT):
            documents = str(messages[1].content).split("Question:")[0]
            if any(name in documents for name in self.relevant):
                return "yes, the documents are about the question's subject."
            return "no, they are about something else."
        if last.endswith(EVIDENCE_PROMPT):
            return json.dumps({"evidence": self.quotes})
        if last.endswith(TRAJECTORY_PROMPT):
            return json.dumps({"analysis": "The evidence names her occupation.", "answer": ANSWER})
        return super()._reply(messages)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.calls.append([(m.type, str(m.content)) for m in messages])
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    def with_structured_output(self, schema, *, include_raw=False, **kwargs):
        if not self.structured:
            raise NotImplementedError

        def reply(messages):
            messages = convert_to_messages(messages)
            self.calls.append([(m.type, str(m.content)) for m in messages])
            last = str(messages[-1].content)
            verdict = {"relevant": self._reply(messages).split(",")[0], "reason": "it is about her"}
            parsed = schema.model_validate(
                verdict if last.endswith(RELEVANCE_PROMPT) else json.loads(self._reply(messages))
            )
            return {"raw": AIMessage(content=""), "parsed": parsed, "parsing_error": None} if include_raw else parsed

        return RunnableLambda(reply)

    def steps(self) -> list[str]:
        """The instruction each Self-Reasoning call ended with, in order."""
        prompts = (RELEVANCE_PROMPT, EVIDENCE_PROMPT, TRAJECTORY_PROMPT, DIRECT_ANSWER_PROMPT)
        return [p for call in self.calls for p in prompts if call[-1][1].endswith(p)]


class CritiquingChat(ScriptedChat):
    """ScriptedChat that writes Self-RAG's candidates and critiques them as a provider would (the reply's first
    word, or with `structured` through `with_structured_output`, then counted in `structured_calls`): over a
    passage it answers with the passage's first sentence; a passage naming one of `relevant` is "relevant",
    the answer over it "fully" supported and useful "5", any other "irrelevant", "no" and "1"; asked whether
    to retrieve it says `retrieve`. `asked` keeps the kind of every critique (`crag.prompts.CRITIQUES`),
    `written` every answer over a passage."""

    relevant: tuple[str, ...] = ("Anna Berg",)
    retrieve: str = "yes"
    structured: bool = False
    structured_calls: int = 0
    asked: list = Field(default_factory=list)
    written: list = Field(default_factory=list)

    def _critique(self, messages) -> str | None:
        from crag.prompts import CRITIQUES

        text = str(messages[-1].content)
        kind = next((k for k, c in CRITIQUES.items() if text.endswith(c.ask)), None)
        if kind is None:
            return None
        self.asked.append(kind)
        passage = text.split("Passage:\n", 1)[-1].split("\n\nQuestion:")[0] if "Passage:\n" in text else ""
        relevant = any(name in passage for name in self.relevant)
        return {
            "retrieve": self.retrieve,
            "isrel": "relevant" if relevant else "irrelevant",
            "issup": "fully" if relevant else "no",
            "isuse": "5" if relevant else "1",
        }[kind]

    def _reply(self, messages) -> str:
        critique = self._critique(messages)
        if critique is not None:
            return critique
        prompt = str(messages[-1].content)
        if prompt.startswith("Passages:\n"):  # a candidate: the passage's first sentence, without its title
            text = prompt.removeprefix("Passages:\n").split("\n\nQuestion:")[0].split(": ", 1)[-1]
            sentence = text.split(". ")[0].rstrip(".") + "."
            self.written.append(sentence)
            return sentence
        return super()._reply(messages)

    def with_structured_output(self, schema, include_raw=False, **kwargs):
        if not self.structured:
            raise NotImplementedError

        def critique(messages):
            self.structured_calls += 1
            parsed = schema(label=self._critique(messages))
            # as LangChain's: with include_raw, the message (a tool call's, without text) beside what it parsed into
            return {"raw": AIMessage(content=""), "parsed": parsed, "parsing_error": None} if include_raw else parsed

        return RunnableLambda(critique)


# a sentence as a model writes it: its tokens, each with the probability the model gave it
Said = list[tuple[str, float]]


def said(sentence: str, prob: float = 0.95, unsure: dict[str, float] | None = None) -> Said:
    """`sentence` as word tokens (each but the first after a space), all at `prob` but the words of `unsure`."""
    words = sentence.split(" ")
    return [(w if i == 0 else " " + w, (unsure or {}).get(w, prob)) for i, w in enumerate(words)]


class ProbableChat(BaseChatModel):
    """A provider that reports its tokens' log-probabilities as OpenAI's models do (`bind(logprobs=True)`:
    `response_metadata["logprobs"]["content"]`). It writes `answer` (its sentences, each `Said`), or, over
    passages naming `knows`, `informed`; asked to go on from its answer so far, it writes the sentences after
    those the answer holds, all of them, as a model does before FLARE cuts its next sentence. Asked a question
    about a term (FLARE's query questions) it replies "Who or what is <term>?". `prompts` keeps every prompt."""

    answer: list = Field(default_factory=list)
    informed: list = Field(default_factory=list)
    knows: str = "painter"
    logprobs: bool = True  # False: a provider without log-probabilities
    prompts: list = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "probable"

    def _sentences(self, prompt: str) -> list:
        return self.informed if self.informed and "Passages:" in prompt and self.knows in prompt else self.answer

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        prompt = "\n".join(str(m.content) for m in messages)
        self.prompts.append(prompt)
        asked = re.search(r'ask a question to which the answer is the term/entity/phrase "(.+)"\.$', prompt)
        if asked:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=f"Who or what is {asked[1]}?"))])
        so_far = prompt.split("Your answer so far:\n", 1)[1].split("\n\n")[0] if "Your answer so far:" in prompt else ""
        done = so_far.count(". ") + so_far.endswith(".") if so_far else 0
        tokens = [
            (text if i or not n else " " + text.lstrip(), p)
            for n, sentence in enumerate(self._sentences(prompt)[done:])
            for i, (text, p) in enumerate(sentence)
        ]
        content = "".join(t for t, _ in tokens)
        metadata = {"finish_reason": "stop"}
        if self.logprobs:
            metadata["logprobs"] = {"content": [{"token": t, "logprob": math.log(p)} for t, p in tokens]}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=content, response_metadata=metadata))])


class FactChat(ScriptedChat):
    """ScriptedChat that writes `bio` as its answer, splits a sentence into facts at " and " (one "- " line each,
    after a preamble line) and judges a statement supported ("yes") when its last word is in the passages."""

    bio: str = "Anna Berg was a Swedish painter and she was born in Oslo."
    prompts: list = Field(default_factory=list)

    def _reply(self, messages) -> str:
        text = str(messages[-1].content)
        self.prompts.append(text)
        if text.startswith("Please break down"):
            sentence = text.rsplit("Sentence: ", 1)[1].strip().rstrip(".")
            return "Here are the facts:\n" + "\n".join(f"- {part.strip()}." for part in sentence.split(" and "))
        if "Do the passages support the statement?" in text:
            passages, statement = text.split("\n\nStatement about ", 1)
            last = statement.split(": ", 1)[1].split("\n")[0].rstrip(".").split()[-1]
            return "yes" if last in passages else "no"
        if text.rstrip().endswith(("query:", "Rewritten:")):
            return super()._reply(messages)
        self.answers += 1
        return self.bio
