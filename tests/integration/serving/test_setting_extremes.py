"""Every setting a request may change (`SAFE_SETTINGS`), at each end of the range it declares and just outside
it, on a real uvicorn server (127.0.0.1) with fake models: 200 or 422, never a 5xx, and 422 outside the range.
A request whose settings gather more text than the local chat model's context window holds gets a 422 that
says what to lower (on llama.cpp's own refusal, from a stand-in with a small window)."""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any

import httpx
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from pydantic import TypeAdapter

from crag.models import chat as llm
from crag.models.chat import LocalChatModel
from crag.search.filters import MAX_FIELDS, MAX_TEXT, MAX_VALUES
from crag.serve.service import SAFE_SETTINGS
from crag.settings import annotation
from tests.fakes import fake_context

QUESTION = "What is Anna Berg's occupation?"
# every size setting at its largest at once: the most text a request can make a run read and write
LARGEST = {
    "k": 50,
    "top_k_strips": 1000,
    "further_strips": 50,
    "knowledge_tokens": 4000,
    "max_answer_tokens": 1024,
    "choose_strips": 9,
    "web_k": 10,
    "refine_mode": "selection",
    "strip_threshold": -1.5,
}


def extremes(name: str) -> list[tuple[Any, bool]]:
    """(value, inside its declared range) for a setting: each end and a step past it, each choice and one
    that is not, on and off, and null (the server's default) where the setting may be empty."""
    schema = TypeAdapter(annotation(name)).json_schema()
    options = schema.get("anyOf", [schema])
    cases: list[tuple[Any, bool]] = [(None, True)] if any(o.get("type") == "null" for o in options) else []
    for option in options:
        kind = option.get("type")
        if "enum" in option:
            cases += [(value, True) for value in option["enum"]] + [("no-such-choice", False)]
        elif kind in ("integer", "number"):
            step = 1 if kind == "integer" else 0.01
            low, high = option["minimum"], option["maximum"]  # every number a request sets declares both ends
            cases += [(low, True), (high, True), (low - step, False), (high + step, False)]
        elif kind == "boolean":
            cases += [(True, True), (False, True), ("maybe", False)]
        elif kind == "object":  # a metadata filter (crag.search.filters): its largest, and a step past each limit
            largest = {f"f{i}-" + "x" * 60: ["v" * MAX_TEXT] * MAX_VALUES for i in range(MAX_FIELDS)}
            cases += [(largest, True), ({**largest, "one_more": 1}, False), ({"a": ["v"] * (MAX_VALUES + 1)}, False)]
            cases += [({"a": "v" * (MAX_TEXT + 1)}, False), ({"$or": [{"a": 1}]}, False), ({"a": {"$ne": 1}}, False)]
    assert cases, f"{name}: no range to try in {schema}"
    return cases


def ask(url: str, configurable: dict, path: str = "invoke") -> httpx.Response:
    body = {"input": {"question": QUESTION}, "config": {"configurable": configurable}}
    return httpx.post(f"{url}/crag/{path}", json=body, timeout=60)


def test_every_request_setting_at_its_extremes_is_200_or_422(serve):
    url = serve()
    answers, wrong = {}, []
    for name in SAFE_SETTINGS:
        for value, inside in extremes(name):
            status = ask(url, {name: value}).status_code
            answers[(name, json.dumps(value))] = status
            if status >= 500 or status not in (200, 422) or (not inside and status != 422):
                wrong.append((name, value, inside, status))
    assert not wrong, wrong
    assert len(answers) >= 4 * len(SAFE_SETTINGS)
    assert answers[("k", "50")] == 200 and answers[("top_k_strips", "1000")] == 200  # the ends are served
    for path in ("invoke", "batch", "stream_events"):
        body = {"input": {"question": QUESTION}, "config": {"configurable": LARGEST}}
        if path == "batch":
            body = {"inputs": [body["input"]], "config": body["config"]}
        response = httpx.post(f"{url}/crag/{path}", json=body, timeout=60)
        assert response.status_code == 200, (path, response.text[:500])


class SmallWindowLlama:
    """llama.cpp's chat completion with a context of `window` tokens (4 characters each): past it, the
    ValueError llama-cpp-python raises; records each prompt's size."""

    def __init__(self, window: int):
        self.window, self.sizes = window, []

    def create_chat_completion(self, **params):
        tokens = sum(len(m["content"]) for m in params["messages"]) // 4
        self.sizes.append(tokens)
        if tokens >= self.window:
            raise ValueError(f"Requested tokens ({tokens}) exceed context window of {self.window}")
        message = {"role": "assistant", "content": "A painter."}
        return {"choices": [{"message": message, "finish_reason": "stop"}]}


class OnePool:
    def __init__(self, llama):
        self.llama, self.controls = llama, None

    @contextmanager
    def use(self, lane=None):
        yield self.llama


def test_settings_that_overflow_the_models_window_get_a_422_saying_what_to_lower(serve, monkeypatch):
    llama = SmallWindowLlama(window=10**6)
    monkeypatch.setattr(llm, "_pool", lambda model, n_ctx: OnePool(llama))
    sentence = "Anna Berg was a Swedish painter who painted the sea near Stockholm in every season of her life. "
    documents = [Document(page_content=sentence * 8, metadata={"title": f"Anna Berg {i}"}) for i in range(50)]
    context = fake_context(chat_model=LocalChatModel(model="local:tiny"))
    context.retriever = RunnableLambda(lambda question: documents)
    url = serve(context=context, warm_up=False)
    assert ask(url, {}).status_code == 200
    llama.window = llama.sizes[-1] * 2  # the defaults' prompt fits twice over
    too_much = {"top_k_strips": 1000, "refine_mode": "selection", "k": 50}
    for path in ("invoke", "batch"):
        body = {"input": {"question": QUESTION}, "config": {"configurable": too_much}}
        if path == "batch":
            body = {"inputs": [body["input"]], "config": body["config"]}
        response = httpx.post(f"{url}/crag/{path}", json=body, timeout=60)
        assert response.status_code == 422, (path, response.text[:500])
        said = response.json()["detail"][0]["msg"]
        assert "exceed context window" in said and "lower top_k_strips" in said, said
    assert ask(url, {}).status_code == 200  # the server is fine afterwards
