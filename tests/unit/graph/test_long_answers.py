"""`answer_style` 'long': the generation prompts ask for a paragraph, the answer's token cap is long_answer_tokens,
FLARE's prompt asks for a paragraph too, and a run's records and prompt digests tell the styles apart."""

from __future__ import annotations

import dataclasses

import pytest
from langchain_core.messages import AIMessage

from crag import resources
from crag.evaluation.runner import prompt_digest
from crag.graphs import compiled
from crag.nodes.flare import messages_for
from crag.prompts import ANSWER_LENGTHS, GENERATE_PROMPTS, generation_prompt, prompt_text
from crag.settings import Context
from tests.fakes import FakeChat, fake_chat, fake_context

BIO = "Anna Berg was a Swedish painter. She painted the sea. Her works hang in Stockholm."


@pytest.mark.parametrize("name", ["compact", "marked"])
def test_the_long_prompt_asks_for_a_paragraph_where_the_short_one_asks_for_a_sentence(name):
    assert ANSWER_LENGTHS["short"] in GENERATE_PROMPTS[name]  # what the long style replaces is there
    assert prompt_text(name) == GENERATE_PROMPTS[name]
    long = generation_prompt(
        name, knowledge="Anna Berg was a painter.", question="Tell me a bio of Anna Berg.", style="long"
    )
    assert ANSWER_LENGTHS["long"] in long and "one short sentence" not in long


def test_the_answer_cap_follows_the_style():
    assert resources.chat(Context(), "answer").max_tokens == 96
    assert resources.chat(Context(answer_style="long"), "answer").max_tokens == 320
    assert resources.chat(Context(answer_style="long", long_answer_tokens=200), "answer").max_tokens == 200
    with pytest.raises(ValueError, match="unknown answer_style 'essay'; choose short or long"):
        Context(answer_style="essay")


def test_rag_writes_a_long_answer_from_the_paragraph_prompt():
    model = fake_chat(BIO)
    out = compiled("rag").invoke(
        {"question": "Tell me a bio of Anna Berg."}, context=fake_context(chat_model=model, answer_style="long")
    )
    assert ANSWER_LENGTHS["long"] in model.prompts[0]
    assert out["answer"] == BIO and out["grounded"]


def test_flare_asks_for_a_paragraph_in_the_long_style():
    state = {"question": "Tell me a bio of Anna Berg.", "internal_knowledge": [], "external_knowledge": []}
    assert "one paragraph of several sentences" in messages_for(state, "long")[0]["content"]
    assert "one paragraph" not in messages_for(state)[0]["content"]


def test_a_long_answer_has_a_prompt_digest_of_its_own():
    short = fake_context()
    assert prompt_digest(short) != prompt_digest(dataclasses.replace(short, answer_style="long"))


class CutChat(FakeChat):
    """Says `reply`, reporting that the token cap cut it (as llama.cpp and OpenAI say it)."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        result = super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        result.generations[0].message.response_metadata["finish_reason"] = "length"
        return result


@pytest.mark.parametrize(
    "style, answer",
    [("long", "Anna Berg was a Swedish painter. She painted the sea."), ("short", BIO[:-20])],
)
def test_a_long_answer_the_cap_cut_ends_with_its_last_whole_sentence(style, answer):
    model = CutChat(messages=iter([AIMessage(content=BIO[:-20])]))
    out = compiled("rag").invoke(
        {"question": "Tell me a bio of Anna Berg."}, context=fake_context(chat_model=model, answer_style=style)
    )
    assert out["draft"] == answer
