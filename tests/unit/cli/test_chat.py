"""`crag chat` on the fakes: the `/` command parser, `/set` validation (a bad value keeps the old one), the
views, threads (in memory, /new, and SQLite resumed by a second chat), Ctrl-C during an answer, and the
whole command driven through Typer's CliRunner with typed lines."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from typer.testing import CliRunner

from crag.cli import chat
from crag.cli.chat import ChatSession, Command, parse_command, run_chat
from crag.cli.main import app
from crag.cli.settings import field_of, parse_value
from crag.threads import memory_graph
from tests.fakes import ANSWER, ScriptedChat, fake_context

QUESTION = "What is Anna Berg's occupation?"
FOLLOW_UP = "Where do her works hang?"
RESOLVED = "Where do Anna Berg's works hang?"
SECONDS = re.compile(r"^\(\d+\.\d s\)$", re.MULTILINE)


@pytest.fixture()
def fakes(monkeypatch):
    """Every Context the chat builds is the fakes' with the chat's settings on top (models shared across /set)."""

    def use(**settings):
        base = fake_context(**settings)
        monkeypatch.setattr(chat, "Context", lambda **options: dataclasses.replace(base, **options))
        return base

    return use


def session(fakes, **settings) -> ChatSession:
    fakes(**settings)
    return ChatSession({}, memory_graph(), "t1")


@pytest.mark.parametrize(
    "line, expected",
    [
        (QUESTION, None),
        ("  /set k 5 ", Command("set", ["k", "5"])),
        ("/SET upper default", Command("set", ["upper", "default"])),
        ("/set chroma-dir '/tmp/my notes'", Command("set", ["chroma-dir", "/tmp/my notes"])),
        ("/set chroma_dir /tmp/my notes", Command("set", ["chroma_dir", "/tmp/my notes"])),
        ("/new", Command("new", [])),
        ("/new ada", Command("new", ["ada"])),
        ("/show", Command("show", [])),
        ("/quit", Command("quit", [])),
    ],
)
def test_commands_are_parsed(line, expected):
    assert parse_command(line) == expected


@pytest.mark.parametrize(
    "line, message",
    [
        ("/sett k 5", "unknown command /sett"),
        ("/set k", "usage: /set NAME VALUE"),
        ("/set", "usage: /set NAME VALUE"),
        ("/new a b", "/new takes 0 or 1 argument"),
        ("/show all", "/show takes 0 argument"),
    ],
)
def test_bad_commands_say_why(line, message):
    with pytest.raises(ValueError, match=message):
        parse_command(line)


@pytest.mark.parametrize(
    "name, field",
    [
        ("k", "k"),
        ("upper", "upper_threshold"),
        ("upper_threshold", "upper_threshold"),
        ("refine-mode", "refine_mode"),
        ("--prompt", "generate_prompt"),
        ("retry-prompt", "retry_prompt"),
        ("answer_without_knowledge", "answer_without_knowledge"),
        ("quote-threshold", "quote_threshold"),
    ],
)
def test_settings_are_named_as_options_or_context_fields(name, field):
    assert field_of(name) == field


def test_every_setting_ask_takes_can_be_set_and_nothing_else():
    assert field_of("web-timeout") == "web_timeout" and field_of("upper") == "upper_threshold"
    with pytest.raises(ValueError, match="unknown setting 'retriever'"):
        field_of("retriever")  # an object, for Python callers only
    with pytest.raises(ValueError, match="unknown setting 'temperature'"):
        field_of("temperature")


@pytest.mark.parametrize(
    "field, text, value",
    [
        ("k", "5", 5),
        ("upper_threshold", "-0.25", -0.25),
        ("upper_threshold", "default", None),
        ("answer_without_knowledge", "on", True),
        ("answer_without_knowledge", "No", False),
        ("web_backend", "none", "none"),
        ("refine_mode", "selection", "selection"),
        ("quote_threshold", "2", 2.0),
    ],
)
def test_values_are_read_as_the_field_holds_them(field, text, value):
    assert parse_value(field, text) == value


@pytest.mark.parametrize(
    "field, text, message",
    [
        ("k", "five", "k is a whole number, not 'five'"),
        ("upper_threshold", "nan", "upper_threshold must be a number"),
        ("lower_threshold", "high", "lower_threshold must be a number"),
        ("answer_without_knowledge", "maybe", "answer_without_knowledge is on or off"),
    ],
)
def test_unreadable_values_say_why(field, text, message):
    with pytest.raises(ValueError, match=message):
        parse_value(field, text)


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("k", "0", "k must be at least 1"),
        ("refine_mode", "paragraphs", "unknown refine_mode 'paragraphs'"),
        ("preset", "squad", "unknown preset 'squad'"),
        ("lower", "0.9", "lower"),  # a lone lower threshold above the evaluator's calibrated upper (0.5)
        ("web_backend", "local", "the local web backend needs web_index"),
    ],
)
def test_a_refused_setting_keeps_the_old_value(fakes, capsys, name, value, message):
    chat_session = session(fakes)
    chat_session.set("k", "1")
    before = (dict(chat_session.options), chat_session.context)
    with pytest.raises(ValueError, match=message):
        chat_session.set(name, value)
    assert (chat_session.options, chat_session.context) == before
    assert chat_session.context.k == 1


def test_set_show_and_default(fakes, capsys):
    chat_session = session(fakes)
    chat_session.set("upper", "0.7")
    chat_session.set("preset", "popqa")
    chat_session.show()
    shown = capsys.readouterr().out
    assert "upper = 0.7" in shown and "preset = popqa" in shown
    assert re.search(r"upper\s+0.7\n", shown) and re.search(r"lower\s+-0.990 \(popqa preset\)\n", shown)
    assert re.search(r"k\s+10 \(default\)\n", shown) and "thread                    t1 (in memory" in shown
    chat_session.set("upper", "default")
    assert "upper_threshold" not in chat_session.options and chat_session.context.upper_threshold is None
    chat_session.show()
    assert re.search(r"upper\s+\+0.590 \(popqa preset\)\n", capsys.readouterr().out)


def test_turns_keep_the_thread_and_new_starts_another(fakes, capsys):
    chat_session = session(fakes)
    first = chat_session.ask(QUESTION)
    second = chat_session.ask(FOLLOW_UP)
    assert first["answer"] == ANSWER and second["question"] == RESOLVED
    assert [t["asked"] for t in second["history"]] == [QUESTION, FOLLOW_UP]
    chat_session.handle("/new")
    assert chat_session.thread_id.startswith("chat-")
    alone = chat_session.ask(FOLLOW_UP)
    assert alone["question"] == FOLLOW_UP and len(alone["history"]) == 1
    captured = capsys.readouterr()
    assert f"· follow-up read as: {RESOLVED}" in captured.out and f"answer: {ANSWER}" in captured.out
    assert len(SECONDS.findall(captured.err)) == 3  # each turn's time, beside the answers


def test_ctrl_c_during_an_answer_drops_it_and_keeps_the_chat(fakes, capsys):
    base = fakes(chat_model=ScriptedChat(interrupt_at=2))
    lines = iter([QUESTION, "Who is Carl Dahl?", FOLLOW_UP, "/quit", "never read"])
    chat_session = ChatSession({}, memory_graph(), "t1")
    run_chat(chat_session, lambda prompt: next(lines))
    captured = capsys.readouterr()
    out = captured.out
    assert "interrupted: that answer was dropped" in captured.err
    assert f"· follow-up read as: {RESOLVED}" in out  # the thread goes on after the interrupted turn
    assert out.count(f"answer: {ANSWER}") == 2 and base.chat_model.answers == 3
    assert next(lines) == "never read"  # /quit ended the loop


def test_ctrl_d_and_ctrl_c_at_the_prompt_end_the_chat(fakes):
    for ending in (EOFError, KeyboardInterrupt):
        chat_session = session(fakes)

        def read(prompt, ending=ending):
            raise ending

        run_chat(chat_session, read)  # returns instead of raising


def test_errors_in_a_turn_are_one_line_and_the_chat_goes_on(fakes, capsys):
    chat_session = session(fakes)
    lines = iter(["/set k many", "/bogus", "x" * 3000, QUESTION, "/quit"])
    run_chat(chat_session, lambda prompt: next(lines))
    captured = capsys.readouterr()
    assert "error: k is a whole number, not 'many'" in captured.err
    assert "error: unknown command /bogus" in captured.err
    assert "error: the question has 3,000 characters" in captured.err
    assert f"answer: {ANSWER}" in captured.out


def test_crag_chat_through_the_cli(fakes):
    fakes()
    typed = [
        QUESTION,
        "/show",
        "/set k 1",
        "/set k zero",
        "/verbose",
        FOLLOW_UP,
        "/json",
        QUESTION,
        "/new ada",
        FOLLOW_UP,
        "/quit",
    ]
    result = CliRunner().invoke(app, ["chat", "--refine-mode", "selection"], input="\n".join(typed) + "\n")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "ready in" in out and "thread chat-" in out
    assert re.search(r"refine_mode\s+selection\n", out) and re.search(r"k\s+10 \(default\)\n", out)
    assert f"answer: {ANSWER}" in out and "k = 1" in out and "error: k is a whole number, not 'zero'" in out
    assert "verbose on" in out and "action: CORRECT" in out and "+0.900  correct    Anna Berg" in out
    assert f"· follow-up read as: {RESOLVED}" in out
    runs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [r["question"] for r in runs] == [QUESTION, FOLLOW_UP]
    assert len(runs[0]["documents"]) == 1 and len(runs[0]["history"]) == 3  # k 1 took effect; one thread
    assert len(runs[1]["history"]) == 1  # /new ada: a fresh thread
    assert "new thread ada" in out and len(SECONDS.findall(out)) == 4


def test_crag_chat_resumes_a_sqlite_thread(fakes, tmp_path):
    fakes()
    db = str(tmp_path / "threads.sqlite")
    runner = CliRunner()
    first = runner.invoke(app, ["chat", "--thread", "anna", "--threads-db", db], input=f"{QUESTION}\n")
    assert first.exit_code == 0, first.output  # Ctrl-D (end of input) leaves
    second = runner.invoke(app, ["chat", "--thread", "anna", "--threads-db", db, "--json"], input=f"{FOLLOW_UP}\n")
    assert second.exit_code == 0, second.output
    run = json.loads(next(line for line in second.output.splitlines() if line.startswith("{")))
    assert run["question"] == RESOLVED and [t["asked"] for t in run["history"]] == [QUESTION, FOLLOW_UP]


def test_crag_chat_refuses_bad_options_before_loading(fakes, tmp_path):
    fakes()
    bad_thread = CliRunner().invoke(app, ["chat", "--thread", "a/b"], input="")
    assert bad_thread.exit_code == 2 and "error: invalid thread id 'a/b'" in bad_thread.output
    bad_backend = CliRunner().invoke(app, ["chat", "--web-backend", "bogus"], input="")
    assert bad_backend.exit_code == 2 and "unknown web_backend 'bogus'" in bad_backend.output


def test_set_rewrite_reaches_the_context():
    from crag.cli.settings import field_of, parse_value

    assert field_of("rewrite") == "rewrite" and parse_value("rewrite", "model") == "model"
