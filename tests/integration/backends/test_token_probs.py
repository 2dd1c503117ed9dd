"""The local model's greedy decode with token probabilities (`crag.models.token_probs.greedy`) writes what
`create_chat_completion` writes at temperature 0, the chat model's answer today, token for token; the
probabilities are the softmax of the full vocabulary. Each is written from an empty context: llama.cpp's logits
for a prompt's last token differ in their last digits when it is read alone after a cached start rather than
in the prompt's batch, enough to turn a near tie. Slow: the 0.5B and 1.5B models on llama.cpp."""

from __future__ import annotations

import pytest

from crag.answers.lookahead import sentence_end
from crag.models import gguf
from crag.models.chat import chat_model, reset_prompt_caches

PROMPTS = [
    "Who was Ada Lovelace? Answer in two sentences.",
    "Passages:\nOslo is the capital of Norway. It lies at the head of a fjord.\n\nQuestion: What is the capital "
    "of Norway?\nAnswer the question in one short sentence, using only the passages above.\nAnswer:",
    "Write a haiku about the sea, then say where it was written: Bergen, Tromsø or Ålesund.",
    "List three prime numbers, one per line.",
]


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["local:small", "local"])
def test_the_greedy_decode_writes_todays_answer_with_each_tokens_probability(spec):
    if not gguf.installed(gguf.packaged(spec)):
        pytest.skip(f"{spec} is not installed")
    model = chat_model(spec, max_tokens=48)
    for prompt in PROMPTS:
        reset_prompt_caches()
        today = model.invoke(prompt).content
        reset_prompt_caches()
        decoded = model.decode([("human", prompt)])
        assert decoded.text == today, prompt
        assert "".join(t["text"] for t in decoded.tokens) == decoded.text
        assert all(0.0 < t["prob"] <= 1.0 for t in decoded.tokens)
        assert decoded.finish in ("stop", "length")
    # cut at the first sentence: the same words up to where it ends, one sentence
    reset_prompt_caches()
    first = model.decode([("human", PROMPTS[0])], cut=sentence_end)
    reset_prompt_caches()
    whole = model.invoke(PROMPTS[0]).content
    assert first.finish == "cut" and whole.startswith(first.text) and len(first.text) < len(whole)
    # stop strings end it as they end today's answer
    reset_prompt_caches()
    stopped = model.decode([("human", PROMPTS[1])], stop=["Norway"])
    reset_prompt_caches()
    assert stopped.text == model.invoke(PROMPTS[1], stop=["Norway"]).content
