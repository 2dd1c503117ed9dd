"""Entry points: the `crag` command line (typer). Nothing below this layer imports typer."""
