"""`crag models`: the local chat models, whether each is ready here, and whose work each is (as their
licence asks); `--prepare` assembles one now, not at a server's first request."""

from __future__ import annotations

from typing import Annotated

import typer

from crag.cli.common import fail
from crag.models import gguf
from crag.runtime.extras import MissingExtra, install_hint


def _names(model: gguf.PackagedModel) -> str:
    short = [k for k, v in gguf.ALIASES.items() if v == model.name]
    return ", ".join(gguf.LOCAL + (f":{k}" if k else "") for k in short) + f", {gguf.LOCAL}:{model.name}"


def models_cmd(
    prepare: Annotated[
        str | None,
        typer.Option(help="Assemble (if needed) and check this local model now, e.g. 'local' or 'local:tiny'."),
    ] = None,
) -> None:
    """List the local chat models (chat_model 'local', 'local:tiny', …), or prepare one."""
    if prepare is not None:
        if not gguf.is_local(prepare):
            fail(f"--prepare takes a local model's name ('local', 'local:tiny', …), not {prepare!r}")
        try:
            if gguf.packaged(prepare) is None:
                fail("--prepare takes a packaged model's name; a GGUF file of your own needs no preparing")
            gguf.check(prepare)
            path = gguf.model_file(prepare)
        except (ValueError, gguf.ModelFileError, MissingExtra) as exc:
            fail(str(exc))
        typer.echo(f"{prepare}: {path} (SHA-256 checked)")
        return
    for model in gguf.MODELS.values():
        where = gguf.cached_file(model)
        if not gguf.installed(model):
            state = f"not installed: {install_hint(model.extra)}"
        elif where is None:
            state = "installed; assembled into the cache at its first use (or crag models --prepare)"
        else:
            state = f"ready: {where}"
        typer.echo(f"{model.title}  [{_names(model)}]")
        typer.echo(f"  {model.size / 2**20:,.0f} MiB, {state}")
        typer.echo(f"  {model.licence}, by {model.author}: {model.url}")
    typer.echo(f"Any other GGUF file: {gguf.LOCAL}:/path/to/model.gguf. Licences: the NOTICE file of crag-langgraph.")
