"""Making and adapting the evaluator: training data (`data`, `mining`, `phrasings`, `faq`, the
generated questions of `generated` and `generated_pairs`, `selfsup` for a user's own collection),
the trainer and its `losses`, `calibration`, `evaluation`, and `adapt` with its heads.

Nothing here runs when a question is answered: the graph, the server and the LangChain components
import `crag.evaluator` (load and score) only, which never imports this package (an import
contract in pyproject.toml keeps it so).
"""
