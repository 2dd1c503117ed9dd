"""What a chat model judges rather than writes: Self-RAG's critiques and the tutorial grade as label probabilities
(the local model's first-token logits, a provider's structured output, else its reply's first word), whether a
model gives second opinions at all, and a reply with each token's probability (FLARE)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from crag.models import gguf
from crag.models.chat import LocalChatModel
from crag.models.token_probs import Cut, Decoded, with_probabilities
from crag.models.yes_no import GradeDocuments, first_word, grader_messages, label_schema, reply_score


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


def relevance(model: BaseChatModel, question: str, document: str) -> float:
    """The tutorial grade of `document` by `model`, in [-1, 1]: the local model's P(yes); a provider's
    structured output (the tutorial's `GradeDocuments`) where it has one; else the reply's first word."""
    if isinstance(model, LocalChatModel):
        return model.relevance(question, document)
    system, human = grader_messages(question, document)
    messages = [SystemMessage(system["content"]), HumanMessage(human["content"])]
    try:
        grader = model.with_structured_output(GradeDocuments)
    except NotImplementedError:  # no tool calling or JSON mode: read the reply
        grader = None
    graded = grader.invoke(messages) if grader is not None else None
    if isinstance(graded, GradeDocuments):
        return reply_score(graded.binary_score)
    return reply_score(str(model.invoke(messages).content))


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
    chat = [SystemMessage(m["content"]) if m["role"] == "system" else HumanMessage(m["content"]) for m in messages]
    try:
        judge = model.with_structured_output(label_schema(labels))
    except NotImplementedError:  # no tool calling or JSON mode: read the reply
        judge = None
    judged = judge.invoke(chat) if judge is not None else None
    said = getattr(judged, "label", None) or first_word(str(model.invoke(chat).content))
    if said not in labels:
        return [1.0 / len(labels)] * len(labels)
    return [1.0 if label == said else 0.0 for label in labels]
