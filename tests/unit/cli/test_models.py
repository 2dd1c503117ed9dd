"""`crag models`: the list a user reads, and --prepare's refusals (the assembly itself: test_gguf.py)."""

from __future__ import annotations

from typer.testing import CliRunner

from crag.cli.main import app
from crag.models import gguf


def test_the_list_names_every_model_its_names_and_its_licence():
    result = CliRunner().invoke(app, ["models"])
    assert result.exit_code == 0
    for model in gguf.MODELS.values():
        assert model.title in result.output and f"local:{model.name}" in result.output
        assert f"{model.licence}, by {model.author}: {model.url}" in result.output
    assert "[local, local:qwen2.5-coder-1.5b]" in result.output and "local:/path/to/model.gguf" in result.output


def test_prepare_refuses_what_is_not_a_packaged_local_model(tmp_path):
    for spec, said in [
        ("gpt-4o", "takes a local model's name"),
        ("local:huge", "unknown local model 'local:huge'"),
        (f"local:{tmp_path / 'own.gguf'}", "a GGUF file of your own needs no preparing"),
    ]:
        result = CliRunner().invoke(app, ["models", "--prepare", spec])
        assert result.exit_code == 2 and said in result.output, result.output
