"""The lab's command line: `python -m lab datasets …` (validation sets), `python -m lab evaluator …` (making the
shipped evaluator) and `python -m lab corpora …` (the documentation corpora)."""

from __future__ import annotations

import typer

from lab.datasets.cli import app as datasets_app
from lab.evaluator.cli import app as evaluator_app
from lab.paper import app as paper_app

app = typer.Typer(help="What the crag project uses to measure and train itself.", no_args_is_help=True)
app.add_typer(datasets_app, name="datasets")
app.add_typer(evaluator_app, name="evaluator")
app.add_typer(paper_app, name="paper")
