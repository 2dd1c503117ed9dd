"""`python -m lab`: the project's own commands, from the repository's root (not installed with crag)."""

from lab.cli import app

app()
