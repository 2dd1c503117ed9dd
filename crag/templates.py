"""The prompts a user may replace (`Context.prompts`), as LangChain chat prompt templates with named variables,
by name. The defaults render `crag.prompts`' constants byte for byte (a test).

The prompts the local model is read by the logits of (Self-RAG's critiques, "answers" and "choose", Self-Reasoning's
steps) and FLARE's stay fixed: their thresholds were chosen on their exact text. The grade is replaceable although
the recheck threshold was chosen on it too: a replaced grade may need its own (`Context.recheck_threshold`)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate

from crag import prompts as fixed
from crag.models.yes_no import GRADER_HUMAN, GRADER_SYSTEM
from crag.prompts import ANSWER_LENGTHS, MARKED_PROMPTS, PASSAGE_MARK
from crag.questions.followup import format_history


class Slot(NamedTuple):
    messages: Callable[[], tuple[tuple[str, str], ...]]  # the default's (role, text), read from crag.prompts when used
    needs: frozenset[str]  # the variables a replacement must use
    may: frozenset[str] = frozenset()  # the others it may use

    @property
    def default(self) -> ChatPromptTemplate:
        return _template(self.messages())


@functools.lru_cache(maxsize=64)
def _template(messages: tuple[tuple[str, str], ...]) -> ChatPromptTemplate:
    return ChatPromptTemplate.from_messages(list(messages))


def _human(text: Callable[[], str]) -> Callable[[], tuple[tuple[str, str], ...]]:
    return lambda: (("human", text()),)


def _answer(name: str) -> Slot:
    """A generation prompt: its short answer's instruction is the {length} a long answer asks its own in."""
    text = _human(lambda: fixed.GENERATE_PROMPTS[name].replace(fixed.ANSWER_LENGTHS["short"], "{length}"))
    return Slot(text, frozenset({"knowledge", "question"}), frozenset({"length"}))


QUESTION = frozenset({"question"})
TEMPLATES: dict[str, Slot] = {
    # the answer's prompts by `Context.generate_prompt` (and `retry_prompt`), and without knowledge by answer_style
    **{name: _answer(name) for name in fixed.GENERATE_PROMPTS},
    "no_knowledge": Slot(_human(lambda: fixed.NO_KNOWLEDGE_PROMPTS["short"]), QUESTION),
    "no_knowledge_long": Slot(_human(lambda: fixed.NO_KNOWLEDGE_PROMPTS["long"]), QUESTION),
    # the web query (`Context.rewrite` 'model'), the knowledge base's second query and passage (`Context.requery`)
    "rewrite": Slot(_human(lambda: fixed.REWRITE_PROMPT), QUESTION),
    "requery": Slot(_human(lambda: fixed.REQUERY_PROMPTS["rewrite"]), QUESTION),
    "hyde": Slot(_human(lambda: fixed.REQUERY_PROMPTS["hyde"]), QUESTION),
    # a follow-up made self-contained; history: the last turns as "Q: …\nA: …" lines
    "condense": Slot(_human(lambda: fixed.CONDENSE_PROMPT), frozenset({"history", "question"})),
    # LangGraph's CRAG tutorial grade: the chat model's second opinion, and the reader-grade system's grade
    "grade": Slot(lambda: (("system", GRADER_SYSTEM), ("human", GRADER_HUMAN)), frozenset({"document", "question"})),
}


def template(name: str, prompts: Any = None) -> ChatPromptTemplate:
    """The prompt `name` of `TEMPLATES`: its replacement in `prompts` (`Context.prompts`), else the default."""
    return replacements(prompts).get(name) or TEMPLATES[name].default


def replaced(name: str, prompts: Any) -> bool:
    return name in replacements(prompts)


def replaced_text(prompts: Any) -> str:
    """The replaced prompts, each by name and as it reads: what an evaluation's answers depend on beyond the
    built-in prompts (empty when none is replaced, so earlier digests stand)."""
    return "\0".join(f"{name}\0{chosen.pretty_repr()}" for name, chosen in sorted(replacements(prompts).items()))


def replacements(prompts: Any) -> dict[str, ChatPromptTemplate]:
    """`Context.prompts` read and checked: a mapping of names to templates, or a YAML or JSON file of one; a
    ValueError that says what is wrong (a name that is no prompt, a variable missing or never filled)."""
    if prompts is None or (isinstance(prompts, str) and not prompts.strip()):
        return {}
    if isinstance(prompts, str | Path):
        return _from_file(str(prompts))
    if not isinstance(prompts, Mapping):
        raise ValueError(
            f"prompts must be a mapping of names to templates or a YAML/JSON file, got {type(prompts).__name__}"
        )
    return {name: _checked(name, value) for name, value in prompts.items()}


@functools.lru_cache(maxsize=8)
def _from_file(path: str) -> dict[str, ChatPromptTemplate]:
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read the prompts file {path!r}: {exc.strerror or exc}") from None
    try:  # YAML reads JSON too
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"the prompts file {path!r} is not YAML or JSON: {exc}") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"the prompts file {path!r} must map prompt names to templates, got {json.dumps(loaded)[:80]}")
    try:
        return replacements(loaded)
    except ValueError as exc:
        raise ValueError(f"the prompts file {path!r}: {exc}") from None


def _checked(name: str, value: Any) -> ChatPromptTemplate:
    """A replacement as a template: a ChatPromptTemplate, a text (one human message), or a list of messages as
    (role, text) pairs or {role, content} mappings; its variables checked against the default's."""
    if name not in TEMPLATES:
        raise ValueError(f"unknown prompt {name!r}; the prompts are {', '.join(TEMPLATES)}")
    try:
        if isinstance(value, str):
            chosen = ChatPromptTemplate.from_messages([("human", value)])
        elif isinstance(value, list):
            chosen = ChatPromptTemplate.from_messages([_message(m) for m in value])
        elif isinstance(value, ChatPromptTemplate):
            chosen = value
        else:
            raise ValueError(
                f"a text, a list of (role, text) messages or a ChatPromptTemplate, not {type(value).__name__}"
            )
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"prompt {name!r}: {exc}") from None
    slot, used = TEMPLATES[name], set(chosen.input_variables)
    if missing := slot.needs - used:
        raise ValueError(
            f"prompt {name!r} must use {_listed(missing)}: crag fills it with {_listed(slot.needs | slot.may)}"
        )
    if unknown := used - slot.needs - slot.may:
        raise ValueError(
            f"prompt {name!r} uses {_listed(unknown)}, which crag does not fill: it fills {_listed(slot.needs | slot.may)}"
        )
    return chosen


def _message(message: Any) -> tuple[str, str]:
    if isinstance(message, Mapping) and set(message) == {"role", "content"}:
        return str(message["role"]), str(message["content"])
    if isinstance(message, list | tuple) and len(message) == 2:
        return str(message[0]), str(message[1])
    raise ValueError(f"a message is a (role, text) pair or a {{role, content}} mapping, not {message!r}")


def _listed(names: set[str] | frozenset[str]) -> str:
    return ", ".join("{" + n + "}" for n in sorted(names))


def answer_prompt(name: str, prompts: Any, *, knowledge: str, question: str, style: str = "short") -> PromptValue:
    """The answer's prompt `name` (or, without knowledge, "no_knowledge") filled in, as `generation_prompt`
    fills the default: a marked prompt's passages datamarked, the length asked for by `style`."""
    if not knowledge:
        return template("no_knowledge_long" if style == "long" else "no_knowledge", prompts).invoke(
            {"question": question}
        )
    if name in MARKED_PROMPTS:
        knowledge = "\n\n".join(PASSAGE_MARK.join(p.split()) for p in knowledge.split("\n\n"))
    return template(name, prompts).invoke(
        {"knowledge": knowledge, "question": question, "length": ANSWER_LENGTHS[style]}
    )


def filled(name: str, prompts: Any, **variables: Any) -> PromptValue:
    """The prompt `name` filled in (condense's `history`: the turns, formatted as its default shows them)."""
    if "history" in variables:
        variables["history"] = format_history(variables["history"])
    return template(name, prompts).invoke(variables)
