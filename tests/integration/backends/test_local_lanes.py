"""A lane (`LocalChatModel.lane`): prompts of one kind read in a llama.cpp context of their own, so that a
follow-up's rewrite reads only what follows the fixed start the lane already holds, whatever the shared
context answered in between; a busy lane falls back to the shared contexts. SmolLM2-135M, the real
llama.cpp: what is checked is which tokens each context evaluates."""

from __future__ import annotations

import pytest

from crag.models import chat as llm
from crag.models import gguf
from crag.models.chat import chat_model
from crag.prompts import CONDENSE_PROMPT, condense_prompt

pytestmark = pytest.mark.skipif(
    not gguf.installed(gguf.MODELS["smollm2-135m"]), reason="the tiny local model is not installed"
)

FIRST = [{"question": "Who was Ada Lovelace?", "answer": "An English mathematician."}]
SECOND = [{"question": "What did Django Reinhardt play?", "answer": "The guitar, in Paris."}]


def evaluated(llama, monkeypatch) -> list[int]:
    """The number of tokens each of the context's evaluations reads, from now on."""
    counts: list[int] = []
    evaluate = llama.eval

    def counting(tokens):
        counts.append(len(tokens))
        return evaluate(tokens)

    monkeypatch.setattr(llama, "eval", counting)
    return counts


def test_a_lane_keeps_the_prompts_fixed_start_while_the_shared_context_answers(monkeypatch):
    condenser = chat_model("local:tiny", max_tokens=4, lane="condense")
    answerer = chat_model("local:tiny", max_tokens=4)
    pool = llm._pool("local:tiny", condenser.n_ctx)
    condenser.invoke(condense_prompt("Where was she born?", FIRST))
    lane, _ = pool.lanes["condense"]
    assert lane not in pool.instances
    shared = pool.instances[0]
    answerer.invoke("Passages:\nDjango Reinhardt played the guitar.\n\nQuestion: What did he play?\nAnswer:")
    read = evaluated(lane, monkeypatch)
    condenser.invoke(condense_prompt("Where was he born?", SECOND))
    fixed = len(lane.tokenize(CONDENSE_PROMPT.split("{history}")[0].encode()))
    # read from where the fixed start ends: the conversation, the question and the template's end (37 tokens),
    # where a context that held another prompt reads the whole chat prompt, more than its fixed start (154)
    assert 0 < read[0] < fixed
    assert shared.n_tokens > 0 and "Django" in shared.detokenize(shared.input_ids[: shared.n_tokens].tolist()).decode()


def test_a_busy_lane_falls_back_to_a_shared_context():
    condenser = chat_model("local:tiny", max_tokens=4, lane="busy")
    pool = llm._pool("local:tiny", condenser.n_ctx)
    with pool.use("busy") as lane:  # another request holds the lane
        assert condenser.invoke(condense_prompt("Where was she born?", FIRST)).content is not None
        assert lane.n_tokens == 0


def test_warming_up_reads_the_follow_up_prompts_fixed_start_into_its_lane():
    """`crag chat` and `crag serve` warm up before their first question: the first follow-up then reads only
    its own conversation and question, as later ones do."""
    from crag import resources
    from tests.fakes import fake_context

    pool = llm._pool("local:tiny", chat_model("local:tiny").n_ctx)
    if earlier := pool.lanes.pop("condense", None):  # left by another test of this process
        earlier[0].close()
    resources.warm_up(fake_context(chat_model="local:tiny"))
    lane, _ = pool.lanes["condense"]
    start = lane.tokenize(CONDENSE_PROMPT.split("{history}")[0].encode(), add_bos=False)
    held = lane.input_ids[: lane.n_tokens].tolist()
    assert any(held[i : i + len(start)] == start for i in range(len(held) - len(start) + 1))
