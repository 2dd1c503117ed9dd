"""Optional packages: a missing one is an error naming the extra that installs it, and only where it is needed."""

from __future__ import annotations

import sys

import pytest

from crag.cli.main import main
from crag.models.chat import chat_model
from crag.runtime.extras import DISTRIBUTION, EXTRAS, MissingExtra, require
from crag.search.web import TavilyWebSearch


def missing(monkeypatch, *modules):
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)  # `import module` now fails as if it were not installed


def test_require_names_the_extra_of_a_missing_package(monkeypatch):
    missing(monkeypatch, "llama_cpp")
    with pytest.raises(
        MissingExtra, match=r"package 'llama_cpp' is not installed.*pip install 'crag-langgraph\[local\]'"
    ):
        require("llama_cpp", "local")
    assert isinstance(MissingExtra("x"), ImportError)  # code that catches ImportError still does
    assert require("json", "eval").dumps([]) == "[]"
    with pytest.raises(ValueError, match="unknown extra"):
        require("json", "everything")
    assert DISTRIBUTION == "crag-langgraph" and set(EXTRAS) == {
        "local",
        "local-small",
        "serve",
        "eval",
        "train",
        "openai",
        "anthropic",
        "ollama",
        "tavily",
        "postgres",
    }


def test_a_broken_dependency_inside_an_installed_package_is_not_called_missing(monkeypatch, tmp_path):
    (tmp_path / "brokenpkg.py").write_text("import a_module_nobody_has\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="a_module_nobody_has") as info:
        require("brokenpkg", "eval")
    assert not isinstance(info.value, MissingExtra)


def test_the_chat_model_and_tavily_say_which_extra_they_need(monkeypatch):
    missing(monkeypatch, "llama_cpp", "langchain_openai", "langchain_anthropic", "langchain_tavily")
    with pytest.raises(MissingExtra, match=r"\[local\]"):
        chat_model("local")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(MissingExtra, match=r"\[openai\]"):
        chat_model("openai:gpt-4o-mini")
    with pytest.raises(MissingExtra, match=r"\[anthropic\]"):
        chat_model("anthropic:claude-haiku-4-5")
    with pytest.raises(MissingExtra, match=r"\[tavily\]"):
        TavilyWebSearch(api_key="tvly-test")


def test_the_cli_prints_one_line_and_exits_2(monkeypatch, capsys):
    missing(monkeypatch, "uvicorn")
    monkeypatch.setattr(sys, "argv", ["crag", "serve"])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "error: the package 'uvicorn' is not installed; it is needed for crag serve (LangServe) and langgraph dev "
        "(LangGraph Studio): pip install 'crag-langgraph[serve]'"
    ]
