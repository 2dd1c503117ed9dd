"""The retrieval evaluator: a fine-tuned sequence classifier scoring (question, document) pairs in [-1, 1].

What answering a question needs lives here: `model` (load and score), `checkpoint`, `compact`
(the int8 weights), `onnx_engine`, `reading` (long passages), `lexical` (the overlap blend), `pairs`
(the pair format) and `runnable` (the LangChain face). Making and adapting the evaluator is in
`crag.evaluator.training` (data, trainer, losses, calibration, adapt), kept apart as in
sentence-transformers' cross_encoder; nothing here imports it. Importing this package loads no model.
"""

from crag.evaluator.checkpoint import EvaluatorError
from crag.evaluator.model import load_scorer
from crag.evaluator.runnable import DEFAULT_CHECKPOINT, RetrievalEvaluator

__all__ = ["DEFAULT_CHECKPOINT", "EvaluatorError", "RetrievalEvaluator", "load_scorer"]
