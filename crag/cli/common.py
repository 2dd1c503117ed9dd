"""What every `crag` command shares: how a failure is reported (one line on stderr, exit code 2,
the code argparse and typer use for bad usage), so scripts can tell a refused input from a crash."""

from __future__ import annotations

from typing import NoReturn

import typer


def fail(message: str) -> NoReturn:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=2)
