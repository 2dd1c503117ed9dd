"""A chat model's yes/no relevance grade read as P(yes) on the first reply token: LangGraph's CRAG
tutorial grader, the evaluator's teacher and its second opinion."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, create_model

# the tutorial's prompt, word for word (its "\n" line ends included; langgraph/examples/rag/langgraph_crag.ipynb)
GRADER_SYSTEM = """You are a grader assessing relevance of a retrieved document to a user question. \n
    If the document contains keyword(s) or semantic meaning related to the question, grade it as relevant. \n
    Give a binary score 'yes' or 'no' score to indicate whether the document is relevant to the question."""
GRADER_HUMAN = "Retrieved document: \n\n {document} \n\n User question: {question}"

# whether a passage answers, not only whether it is related: a quote must answer
ANSWERS_SYSTEM = (
    "You check whether a passage answers a question. Reply 'yes' if the passage itself states the answer "
    "to the question, 'no' if it does not (a passage on the same topic that does not say the answer is 'no')."
)
ANSWERS_HUMAN = "Passage:\n{document}\n\nQuestion: {question}\nDoes the passage answer the question?"

# the first token's probabilities over the passages' numbers rank them
CHOOSE_SYSTEM = "You pick the passage that answers a question."
CHOOSE_HUMAN = (
    "Passages:\n{passages}\n\nQuestion: {question}\nWhich passage answers the question? Reply with its number only."
)


class GradeDocuments(BaseModel):
    """Binary score for relevance check on retrieved documents."""  # the tutorial's schema, word for word

    binary_score: str = Field(description="Documents are relevant to the question, 'yes' or 'no'")


_YES = ("yes", "Yes", " yes", " Yes")
_NO = ("no", "No", " no", " No")


def _chat(system: str, user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def grader_messages(question: str, document: str) -> list[dict[str, str]]:
    return _chat(GRADER_SYSTEM, GRADER_HUMAN.format(document=document, question=question))


def answers_messages(question: str, document: str) -> list[dict[str, str]]:
    return _chat(ANSWERS_SYSTEM, ANSWERS_HUMAN.format(document=document, question=question))


def choose_messages(question: str, passages: list[str]) -> list[dict[str, str]]:
    """The chat asking which of `passages` (numbered from 1) answers `question`."""
    numbered = "\n\n".join(f"[{n}] {text}" for n, text in enumerate(passages, 1))
    return _chat(CHOOSE_SYSTEM, CHOOSE_HUMAN.format(passages=numbered, question=question))


def first_word(reply: str) -> str:
    """The reply's first word, lower-cased, without the quotes, brackets and stops around it ("[Relevant]",
    "**Yes**.", "'no'": relevant, yes, no)."""
    word = reply.strip().strip("'\"*`.[(").split(maxsplit=1)
    return word[0].lower().rstrip(".,!:;])'\"*`") if word else ""


def reply_score(reply: str) -> float:
    """1.0 for a reply "yes", else -1.0 (a reply that is not a grade never overrules the evaluator)."""
    return 1.0 if first_word(reply) == "yes" else -1.0


@functools.cache
def label_schema(labels: tuple[str, ...]) -> type[BaseModel]:
    """A provider's structured output for a reply that is one of `labels` (a critique's)."""
    return create_model(
        "Critique",
        __doc__="The one label that judges the text.",
        # a Literal of labels known at run time: no type a checker can see
        label=(Literal[labels], Field(description=f"one of: {', '.join(labels)}")),  # type: ignore[arg-type]
    )


class LlamaYesNo:
    """P(yes) / (P(yes) + P(no)) of a llama.cpp model's first reply token, in [-1, 1], through its chat template."""

    def __init__(self, llama: Any):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        def spelled(token: int) -> str:
            return llama.detokenize([token], special=True).decode("utf-8", "replace")

        self.format = Jinja2ChatFormatter(
            template=llama.metadata["tokenizer.chat_template"],
            eos_token=spelled(llama.token_eos()),
            bos_token=spelled(llama.token_bos()),
        )
        self.yes = self._first_tokens(llama, _YES)
        self.no = self._first_tokens(llama, _NO)

    @staticmethod
    def _first_tokens(llama: Any, spellings: tuple[str, ...]) -> list[int]:
        return sorted({llama.tokenize(s.encode(), add_bos=False, special=False)[0] for s in spellings})

    def tokens(self, llama: Any, messages: list[dict[str, str]]) -> list[int]:
        """The prompt's tokens, cut in the middle to fit the context."""
        # llama-cpp-python types the messages as its own TypedDicts of the same {"role", "content"}
        prompt = self.format(messages=messages).prompt  # type: ignore[arg-type]
        tokens = llama.tokenize(prompt.encode(), add_bos=False, special=True)
        limit = llama.n_ctx() - 1
        return tokens if len(tokens) <= limit else tokens[:64] + tokens[-(limit - 64) :]

    def _last_logits(self, llama: Any, messages: list[dict[str, str]], reuse_prefix: bool) -> np.ndarray:
        """The logits of the reply's first token, read from the context (no `logits_all`); with
        `reuse_prefix` the start the context already holds is not evaluated again."""
        evaluate(llama, self.tokens(llama, messages), reuse_prefix)
        return last_logits(llama)

    def score(self, llama: Any, messages: list[dict[str, str]], reuse_prefix: bool = True) -> float:
        yes = self.shares(llama, messages, [self.yes, self.no], reuse_prefix)[0]
        return float(2.0 * yes - 1.0)

    def shares(
        self, llama: Any, messages: list[dict[str, str]], groups: list[list[int]], reuse_prefix: bool = True
    ) -> list[float]:
        """How the reply's first-token probability divides among `groups` of token ids."""
        return divided(self._last_logits(llama, messages, reuse_prefix), groups)

    def label_tokens(self, llama: Any, labels: Sequence[str]) -> list[list[int]]:
        """Each label's first tokens as a reply may start with it ("3" and " 3", "fully" and " Fully"). A token
        two labels may start with tells them apart no more than any other: it counts for neither."""
        groups = [self._first_tokens(llama, spellings(label)) for label in labels]
        shared = {t for i, g in enumerate(groups) for other in groups[i + 1 :] for t in set(g) & set(other)}
        return [[t for t in g if t not in shared] for g in groups]


def evaluate(llama: Any, tokens: list[int], reuse_prefix: bool = True) -> None:
    """Put `tokens` in the context; with `reuse_prefix` the start it already holds is not evaluated again. At
    least the last token is evaluated, for its logits (`last_logits`)."""
    common = 0
    if reuse_prefix:
        for mine, theirs in zip(llama.input_ids[: llama.n_tokens].tolist(), tokens):
            if mine != theirs:
                break
            common += 1
    llama.n_tokens = min(common, len(tokens) - 1)  # eval() drops the cache from here on
    llama.eval(tokens[llama.n_tokens :])


def last_logits(llama: Any) -> np.ndarray:
    """The logits after the context's last token (float64), read without llama.cpp's `logits_all` table."""
    import llama_cpp

    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llama.ctx, -1), shape=(llama.n_vocab(),))
    return logits.astype("float64")


def spellings(label: str) -> tuple[str, ...]:
    """How a reply may begin with `label`: as it is or capitalised, with or without a leading space."""
    forms = dict.fromkeys((label, label.capitalize()))
    return tuple(dict.fromkeys(s for form in forms for s in (form, f" {form}")))


def divided(logits: np.ndarray, groups: list[list[int]]) -> list[float]:
    """Each group's share of the probability mass the group tokens hold (the softmax over them alone, as
    Self-RAG normalises its reflection tokens); equal shares when none holds any."""
    top = logits.max()
    mass = np.array([np.exp(logits[g] - top).sum() if g else 0.0 for g in groups])
    total = mass.sum()
    return (mass / total).tolist() if total > 0 else [1.0 / len(groups)] * len(groups)


__all__ = ["GradeDocuments", "LlamaYesNo", "grader_messages"]  # what callers outside the package use
