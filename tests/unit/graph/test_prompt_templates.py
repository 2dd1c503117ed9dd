"""The prompts a user may replace (`Context.prompts`, `crag.templates`): the defaults render today's text byte for
byte, a replacement by name reaches the model, and a name or a variable that does not fit is a clear error when
the Context is made."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate

from crag.graphs.crag import graph
from crag.models.yes_no import grader_messages
from crag.prompts import (
    CONDENSE_PROMPT,
    GENERATE_PROMPTS,
    NO_KNOWLEDGE_PROMPTS,
    REQUERY_PROMPTS,
    REWRITE_PROMPT,
    condense_prompt,
    generation_prompt,
)
from crag.settings import Context
from crag.templates import TEMPLATES, answer_prompt, filled, replacements
from tests.fakes import fake_chat, fake_context

QUESTION = "What is {Anna} Berg's occupation?"  # braces in a value are text, never a variable
KNOWLEDGE = "Anna Berg: a Swedish painter.\n\nUppsala: a city {in} Sweden."
HISTORY = [{"question": "Who was Anna Berg?", "answer": "A Swedish painter."}]


@pytest.mark.parametrize("name", list(GENERATE_PROMPTS))
@pytest.mark.parametrize("style", ["short", "long"])
def test_the_default_answer_prompts_render_todays_text_byte_for_byte(name, style):
    old = generation_prompt(name, knowledge=KNOWLEDGE, question=QUESTION, style=style)
    new = answer_prompt(name, None, knowledge=KNOWLEDGE, question=QUESTION, style=style)
    assert new.to_messages() == [HumanMessage(old)]
    assert answer_prompt(name, None, knowledge="", question=QUESTION, style=style).to_messages() == [
        HumanMessage(NO_KNOWLEDGE_PROMPTS[style].format(question=QUESTION))
    ]


def test_the_other_default_prompts_render_todays_text_byte_for_byte():
    for name, old in [
        ("rewrite", REWRITE_PROMPT),
        ("requery", REQUERY_PROMPTS["rewrite"]),
        ("hyde", REQUERY_PROMPTS["hyde"]),
    ]:
        assert filled(name, None, question=QUESTION).to_messages() == [HumanMessage(old.format(question=QUESTION))]
    condensed = filled("condense", None, question=QUESTION, history=HISTORY).to_messages()
    assert condensed == [HumanMessage(condense_prompt(QUESTION, HISTORY))]
    assert CONDENSE_PROMPT.split("{history}")[0] in condensed[0].content
    system, human = grader_messages(QUESTION, KNOWLEDGE)
    graded = filled("grade", None, document=KNOWLEDGE, question=QUESTION).to_messages()
    assert graded == [SystemMessage(system["content"]), HumanMessage(human["content"])]


def test_a_replaced_prompt_reaches_the_model_by_name():
    chat = fake_chat("Anna Berg was a painter.")
    mine = ChatPromptTemplate.from_messages([("system", "Be brief."), ("human", "Q: {question}\nFacts: {knowledge}")])
    context = fake_context(chat_model=chat, prompts={"compact": mine})
    result = graph.invoke({"question": "What is Anna Berg's occupation?"}, context=context)
    assert result["answer"] == "Anna Berg was a painter."
    assert chat.prompts[-1].startswith("Q: What is Anna Berg's occupation?\nFacts: ")
    assert "Swedish painter" in chat.prompts[-1]


def test_a_prompts_file_in_yaml_or_json_replaces_by_name(tmp_path):
    yaml_file = tmp_path / "prompts.yaml"
    yaml_file.write_text(
        "rewrite: 'Keywords for: {question}'\n"
        "grade:\n  - [system, Grade strictly.]\n  - {role: human, content: 'Doc: {document} Q: {question}'}\n"
    )
    loaded = replacements(str(yaml_file))
    assert set(loaded) == {"rewrite", "grade"}
    assert filled("rewrite", str(yaml_file), question="x").to_string() == "Human: Keywords for: x"
    assert [m.type for m in filled("grade", str(yaml_file), document="d", question="q").to_messages()] == [
        "system",
        "human",
    ]
    assert filled("hyde", str(yaml_file), question="x").to_messages()[0].content.startswith("Write a short passage")
    json_file = tmp_path / "prompts.json"
    json_file.write_text(json.dumps({"no_knowledge": "Answer from memory: {question}"}))
    assert Context(prompts=str(json_file)).prompts == str(json_file)
    assert (
        answer_prompt("compact", str(json_file), knowledge="", question="q").to_string()
        == "Human: Answer from memory: q"
    )


@pytest.mark.parametrize(
    ("prompts", "message"),
    [
        ({"answer": "{question}"}, "unknown prompt 'answer'; the prompts are paper, compact, marked, no_knowledge"),
        ({"compact": "Just answer."}, r"prompt 'compact' must use \{knowledge\}, \{question\}"),
        ({"rewrite": "Keywords for {question} in {language}"}, r"uses \{language\}, which crag does not fill"),
        ({"grade": [["system", "x"], "y"]}, "a message is a \\(role, text\\) pair"),
        ({"grade": 3}, "a text, a list of .* or a ChatPromptTemplate, not int"),
        (["compact"], "prompts must be a mapping of names to templates"),
        ("/nowhere/prompts.yaml", "cannot read the prompts file '/nowhere/prompts.yaml'"),
    ],
)
def test_a_prompt_that_does_not_fit_is_a_clear_error_when_the_context_is_made(prompts, message):
    with pytest.raises(ValueError, match=message):
        Context(prompts=prompts)


def test_a_bad_prompts_file_names_the_file(tmp_path, monkeypatch):
    bad = tmp_path / "bad.yaml"
    bad.write_text("condense: 'Rewrite {question}'\n")
    with pytest.raises(ValueError, match=r"the prompts file '.*bad.yaml': prompt 'condense' must use \{history\}"):
        Context(prompts=str(bad))
    monkeypatch.setenv("CRAG_PROMPTS", str(bad))  # the environment's value is checked as well
    with pytest.raises(ValueError, match="must use"):
        Context()
    listed = tmp_path / "list.yaml"
    listed.write_text("- compact\n")
    with pytest.raises(ValueError, match="must map prompt names to templates"):
        Context(prompts=str(listed))


def test_every_template_uses_exactly_the_variables_it_must_or_may():
    for name, slot in TEMPLATES.items():
        used = set(slot.default.input_variables)
        assert slot.needs <= used <= slot.needs | slot.may, name


def test_an_evaluation_redoes_answers_when_a_prompt_is_replaced(tmp_path):
    from crag.evaluation.runner import prompt_digest

    built_in = prompt_digest(Context())
    assert prompt_digest(Context(prompts={})) == built_in  # nothing replaced: the digests recorded so far stand
    mine = prompt_digest(Context(prompts={"rewrite": "Keywords: {question}"}))
    assert mine != built_in != prompt_digest(Context(prompts={"rewrite": "Search words: {question}"}))


def test_a_replaced_grade_is_what_the_local_model_reads(monkeypatch):
    from langchain_core.documents import Document

    from crag import resources
    from crag.models.chat import LocalChatModel

    read: list = []
    monkeypatch.setattr(LocalChatModel, "_yes_no", lambda self, messages: read.append(messages) or 0.5)
    local = LocalChatModel(model="local")  # its llama.cpp contexts load on first use, which _yes_no stands in for
    document = [Document("Anna Berg was a painter.")]
    assert resources.relevance(fake_context(chat_model=local), QUESTION, document) == [0.5]
    assert read[-1] == grader_messages(QUESTION, "Anna Berg was a painter.")  # the tutorial's, as before
    mine = {"grade": [("system", "Strict grader."), ("human", "D: {document}\nQ: {question}\nyes or no?")]}
    resources.relevance(fake_context(chat_model=local, prompts=mine), QUESTION, document)
    assert read[-1] == [
        {"role": "system", "content": "Strict grader."},
        {"role": "user", "content": f"D: Anna Berg was a painter.\nQ: {QUESTION}\nyes or no?"},
    ]
