"""Making and adapting the evaluator: the trainer and its `losses`, `calibration`, `evaluation`, and `adapt`
with its head, its checks and the pairs it makes from a user's own collection (`selfsup`).

Nothing here runs when a question is answered: the graph, the server and the components import
`crag.evaluator` only, which never imports this package (an import contract in pyproject.toml keeps it so).
"""
