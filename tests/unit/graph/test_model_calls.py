"""The local model's calls that read llama.cpp directly (token probabilities, yes/no, label shares) are reported to
the run's callbacks as an `invoke`'s are, so the harness counts every system's model calls (`StageTimer`)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TypedDict

import pytest
from langchain_core.runnables import RunnableLambda
from langgraph.graph import END, START, StateGraph

from crag.evaluation.pipelines import StageTimer
from crag.models import chat
from crag.models.chat import LocalChatModel
from crag.models.token_probs import Decoded
from crag.records import Token

ASK = [{"role": "user", "content": "Is it so?"}]


class FakeYesNo:
    def format(self, **kwargs):
        raise AssertionError("greedy is faked: nothing formats a prompt")

    def label_tokens(self, llama, labels):
        return [[n] for n, _ in enumerate(labels)]

    def shares(self, llama, messages, groups):
        return [1.0 / len(groups)] * len(groups)

    def score(self, llama, messages):
        return 0.5


class FakePool:
    controls = None
    yes_no = FakeYesNo()

    @contextmanager
    def use(self, lane=None):
        yield object()


@pytest.fixture()
def model(monkeypatch):
    monkeypatch.setattr(chat, "_pool", lambda name, n_ctx: FakePool())
    written = Decoded(
        "Anna Berg was a painter.", [Token(text="Anna Berg", prob=0.9), Token(text=" was a painter.", prob=0.5)], "stop"
    )
    monkeypatch.setattr(chat, "greedy", lambda *args, **kwargs: written)
    return LocalChatModel()


def counted(call) -> dict:
    timer = StageTimer()
    RunnableLambda(lambda _: call()).invoke(None, config={"callbacks": [timer]})
    return timer.llm_tokens


def test_each_direct_call_is_a_counted_model_call(model):
    assert counted(lambda: model.decode(ASK)) == {"calls": 1, "prompt": 0, "completion": 2}
    assert counted(lambda: model.relevance("Who?", "A passage.")) == {"calls": 1, "prompt": 0, "completion": 0}
    assert counted(lambda: model.verdict(ASK))["calls"] == 1
    # a batch of asks is one model call each
    assert counted(lambda: model.shares([(ASK, ("yes", "no"))] * 3))["calls"] == 3
    assert counted(lambda: model.choose("Which?", ["a", "b"]))["calls"] == 1


def test_a_graph_node_passes_its_run_callbacks_to_the_direct_calls(model):
    class State(TypedDict):
        text: str

    graph = StateGraph(State)
    graph.add_node("draft", lambda state: {"text": model.decode(ASK).text})
    graph.add_edge(START, "draft")
    graph.add_edge("draft", END)
    timer = StageTimer()
    out = graph.compile().invoke({"text": ""}, config={"callbacks": [timer]})
    assert out["text"] == "Anna Berg was a painter." and timer.llm_tokens["calls"] == 1


def test_outside_a_run_the_calls_work_unreported(model):
    assert model.decode(ASK).text == "Anna Berg was a painter." and model.relevance("Who?", "A passage.") == 0.5


def test_a_failing_call_closes_its_run(model, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("llama.cpp failed")

    monkeypatch.setattr(chat, "greedy", broken)
    timer = StageTimer()
    with pytest.raises(RuntimeError, match="llama.cpp failed"):
        RunnableLambda(lambda _: model.decode(ASK)).invoke(None, config={"callbacks": [timer]})
    assert timer.llm_tokens["calls"] == 0
