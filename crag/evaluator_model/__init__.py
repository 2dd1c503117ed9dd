"""The retrieval evaluator: a fine-tuned sequence classifier scoring (question, document) pairs in [-1, 1].

Kept apart as in sentence-transformers' cross_encoder: `model` (load and score), `losses`,
`trainer`, `metrics` and `calibration` (evaluation), `data` (training pairs), `runnable`
(the LangChain face). Importing this package loads no model.
"""

from crag.evaluator_model.checkpoint import EvaluatorError
from crag.evaluator_model.model import load_scorer
from crag.evaluator_model.runnable import DEFAULT_CHECKPOINT, RetrievalEvaluator

__all__ = ["DEFAULT_CHECKPOINT", "EvaluatorError", "RetrievalEvaluator", "load_scorer"]
