"""What the `crag` commands share: how a failure is reported (one line on stderr, exit code 2, the code
argparse and typer use for bad usage, so scripts can tell a refused input from a crash), and quiet model
loading. Their settings' options come from the settings' declarations (`crag.cli.settings`)."""

from __future__ import annotations

from typing import NoReturn

import typer


def error_line(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)


def fail(message: str) -> NoReturn:
    error_line(message)
    raise typer.Exit(code=2)


def quiet_transformers() -> None:
    """Keep the output to our own lines: no load reports or weight-loading progress bars."""
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


__all__ = ["fail", "quiet_transformers"]  # what callers outside the package use
