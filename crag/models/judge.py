"""What a chat model judges rather than writes: Self-RAG's critiques, the tutorial grade, whether a passage answers
and which passage does, as label probabilities (the local model's first-token logits, a provider's structured
output, else its reply's first word), whether a model gives second opinions at all, and a reply with each token's
probability (FLARE)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from crag.models import gguf
from crag.models.chat import LocalChatModel
from crag.models.structured import fallback_text, held_to
from crag.models.token_probs import Cut, Decoded, with_probabilities
from crag.models.yes_no import (
    GradeDocuments,
    answers_messages,
    choose_messages,
    first_word,
    grader_messages,
    label_schema,
    reply_score,
)

# a provider's structured judgement ({"binary_score": "yes"}, {"label": "partially"}) with room to spare: cut
# shorter it would not parse; a local model judges by its first token's logits and writes nothing
JUDGE_TOKENS = 24


def decoded(
    model: BaseChatModel, messages: Sequence[Any], *, prefix: str = "", stop: Sequence[str] = (), cut: Cut | None = None
) -> Decoded:
    """`model`'s reply with each token's probability: the local model's greedy decode, a provider's logprobs."""
    if isinstance(model, LocalChatModel):
        return model.decode(messages, prefix=prefix, stop=stop, cut=cut)
    return with_probabilities(model, messages, prefix=prefix, stop=stop, cut=cut)


def grades(spec: Any) -> bool:
    """Whether a chat model gives second opinions: any but a packaged one that grades at chance."""
    if isinstance(spec, LocalChatModel):
        spec = spec.model
    if not isinstance(spec, str) or not gguf.is_local(spec):
        return True
    model = gguf.packaged(spec)
    return model.grades if model is not None else True


def relevance(model: BaseChatModel, question: str, document: str, messages: Sequence[Any] | None = None) -> float:
    """The tutorial grade of `document` by `model`, in [-1, 1]: the local model's P(yes); a provider's
    structured output (the tutorial's `GradeDocuments`) where it has one; else the reply's first word.
    `messages`: the grade prompt filled in, when it is not the tutorial's (`crag.templates`)."""
    if isinstance(model, LocalChatModel):
        return model.relevance(question, document, messages)
    if messages is None:
        messages = _messages(grader_messages(question, document))
    graded, reply = held_to(model, messages, GradeDocuments)
    said = graded.binary_score if isinstance(graded, GradeDocuments) else fallback_text(reply)
    return reply_score(said)


def answers(model: BaseChatModel, question: str, passage: str) -> float:
    """`model`'s P(yes) that `passage` answers `question`, in [-1, 1]: the local model's from its logits, a
    provider's from its structured yes or no (0.0 when it says neither)."""
    if isinstance(model, LocalChatModel):
        return model.answers(question, passage)
    yes, _ = _one_label(model, answers_messages(question, passage), ("yes", "no"))
    return 2.0 * yes - 1.0


def choose(model: BaseChatModel, question: str, passages: list[str]) -> list[float]:
    """How likely `model` is to name each of `passages` (at most 9) as the one that answers `question`: the local
    model's first-token shares; a provider's structured choice takes all of it (equal shares when it names none)."""
    if isinstance(model, LocalChatModel):
        return model.choose(question, passages)
    if not 0 < len(passages) <= 9:
        raise ValueError(f"choose takes 1 to 9 passages, got {len(passages)}")
    return _one_label(model, choose_messages(question, passages), tuple(str(n) for n in range(1, len(passages) + 1)))


def _messages(chat: Sequence[dict[str, str]]) -> list[Any]:
    return [SystemMessage(m["content"]) if m["role"] == "system" else HumanMessage(m["content"]) for m in chat]


# a critique: the chat's messages ({"role", "content"}) and the labels its reply may begin with
Ask = tuple[list[dict[str, str]], Sequence[str]]


def critique(model: BaseChatModel, asks: Sequence[Ask]) -> list[list[float]]:
    """Each ask's probabilities over its labels, as Self-RAG reads its reflection tokens: the local model's
    first-token logits; a provider's structured output (one of the labels) where it has one; else the reply's
    first word. Without logits the label said takes all the probability (equal shares when none is said)."""
    if isinstance(model, LocalChatModel):
        return model.shares(asks)
    return [_one_label(model, messages, tuple(labels)) for messages, labels in asks]


def _one_label(model: BaseChatModel, messages: list[dict[str, str]], labels: tuple[str, ...]) -> list[float]:
    """The label a provider gives, held to `label_schema(labels)` where it has structured output, else the
    first word of its reply (`held_to`): all the probability on it, equal shares for none."""
    judged, reply = held_to(model, _messages(messages), label_schema(labels))
    said = getattr(judged, "label", None) or first_word(fallback_text(reply))
    if said not in labels:
        return [1.0 / len(labels)] * len(labels)
    return [1.0 if label == said else 0.0 for label in labels]
