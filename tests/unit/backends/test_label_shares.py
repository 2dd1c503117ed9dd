"""Reading a label from a local model's first reply token (`LlamaYesNo.label_tokens` and `shares`): each label's
spellings, a token two labels share counted for neither, and the shares of known logits; and the same critique
asked of a provider, through its structured output or its reply's first word (`crag.models.judge.critique`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crag.models.judge import critique
from crag.models.yes_no import LlamaYesNo, first_word, spellings
from crag.prompts import CRITIQUES, critique_messages
from tests.fakes import CritiquingChat

# a vocabulary where a leading space is a token of its own before a digit (as Qwen2.5's tokenizer splits " 3")
VOCAB = {" ": 0, "1": 1, "2": 2, "3": 3, "4": 4, "5": 5, "fully": 6, "Fully": 7, " fully": 8, " Fully": 9,
         "part": 10, "Part": 11, " part": 12, " Part": 13, "no": 14, "No": 15, " no": 16, " No": 17, "other": 18}  # fmt: skip


class Tokenizing:
    """The one llama.cpp call `label_tokens` makes: greedy tokenizing over `VOCAB`, longest piece first."""

    def tokenize(self, text: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
        rest, tokens = text.decode(), []
        while rest:
            piece = max((p for p in VOCAB if rest.startswith(p)), key=len, default=None)
            if piece is None:
                tokens.append(VOCAB["other"])
                break
            tokens.append(VOCAB[piece])
            rest = rest[len(piece) :]
        return tokens


def reader(logits: dict[int, float]) -> LlamaYesNo:
    """A `LlamaYesNo` whose next-token logits are `logits` (every other token far below)."""
    grader = object.__new__(LlamaYesNo)  # without a model file: its chat template is not needed here
    array = np.full(len(VOCAB), -50.0)
    for token, value in logits.items():
        array[token] = value
    grader._last_logits = lambda llama, messages, reuse_prefix: array  # type: ignore[method-assign]
    return grader


def test_each_label_counts_its_spellings_and_no_token_two_labels_share():
    assert spellings("fully") == ("fully", " fully", "Fully", " Fully") and spellings("3") == ("3", " 3")
    groups = reader({}).label_tokens(Tokenizing(), ["1", "2", "3", "4", "5"])
    assert groups == [[1], [2], [3], [4], [5]]  # " 3" starts with the space every digit may follow: dropped
    assert reader({}).label_tokens(Tokenizing(), ["fully", "partially", "no"]) == [
        [6, 7, 8, 9],
        [10, 11, 12, 13],  # "partially" begins with "part"
        [14, 15, 16, 17],
    ]


def test_the_shares_are_the_softmax_over_the_labels_tokens_alone():
    llama = Tokenizing()
    grader = reader({6: 2.0, 9: 1.0, 10: 1.0, 14: 0.0, 18: 9.0})  # "other" is likelier but no label
    labels = grader.label_tokens(llama, ["fully", "partially", "no"])
    shares = grader.shares(llama, [], labels)
    mass = [math.exp(2.0) + math.exp(1.0), math.exp(1.0), math.exp(0.0)]  # the other spellings' e^-50 aside
    assert shares == pytest.approx([m / sum(mass) for m in mass])
    assert reader({18: 3.0}).shares(llama, [], [[], []]) == [0.5, 0.5]  # no label token at all: equal shares


def test_a_provider_critiques_through_its_structured_output_else_its_first_word():
    asks = [
        (critique_messages("isrel", "Who is Anna Berg?", "Anna Berg was a painter."), CRITIQUES["isrel"].labels),
        (critique_messages("issup", "Who?", "Carl Dahl plays football.", "x"), CRITIQUES["issup"].labels),
    ]
    structured = CritiquingChat(structured=True)
    assert critique(structured, asks) == [[1.0, 0.0], [0.0, 0.0, 1.0]] and structured.structured_calls == 2
    assert critique(CritiquingChat(), asks) == [[1.0, 0.0], [0.0, 0.0, 1.0]]  # the reply's first word
    said = CritiquingChat(retrieve="Perhaps.")  # a reply that is no label: equal shares
    assert critique(said, [(critique_messages("retrieve", "Hi?"), ("yes", "no"))]) == [[0.5, 0.5]]


@pytest.mark.parametrize(
    "reply, word",
    [("[Relevant]", "relevant"), ("**Fully** supported", "fully"), ("'no'", "no"), ("5.", "5"), ("", "")],
)
def test_the_first_word_of_a_reply(reply, word):
    assert first_word(reply) == word
