"""The `crag` command line."""

from __future__ import annotations

import typer

from crag.evaluator_model.cli import app as evaluator_app

app = typer.Typer(help="Corrective Retrieval-Augmented Generation (CRAG) on LangGraph.", no_args_is_help=True)
app.add_typer(evaluator_app, name="evaluator")


def main() -> None:  # entry point of the `crag` script
    app()


if __name__ == "__main__":
    main()
