"""What the `crag` commands share: a failure is one line on stderr and exit code 2 (as for bad usage, so
scripts can tell a refused input from a crash), and quiet model loading."""

from __future__ import annotations

from typing import NoReturn

import typer

from crag.cli.terminal import secho


def error_line(message: str) -> None:
    secho(f"error: {message}", fg=typer.colors.RED, err=True)  # a server's or a page's words, made printable


def fail(message: str) -> NoReturn:
    error_line(message)
    raise typer.Exit(code=2)


def quiet_transformers() -> None:
    """No transformers load reports or progress bars."""
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


__all__ = ["fail", "quiet_transformers"]  # what callers outside the package use
