"""The retrieval evaluator: a fine-tuned sequence classifier scoring (question, document) pairs in [-1, 1].
Training and adapting it is in `crag.evaluator.training`, which nothing here imports; importing loads no model."""

from crag.evaluator.checkpoint import EvaluatorError
from crag.evaluator.model import load_scorer
from crag.evaluator.runnable import DEFAULT_CHECKPOINT, RetrievalEvaluator

__all__ = ["DEFAULT_CHECKPOINT", "EvaluatorError", "RetrievalEvaluator", "load_scorer"]
