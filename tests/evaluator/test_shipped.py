"""The evaluator committed to the repository: small, loadable on the packaged base, calibrated."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from crag.evaluator_model.model import PACKAGED_BASE, load_scorer
from crag.evaluator_model.runnable import DEFAULT_CHECKPOINT, RetrievalEvaluator

pytestmark = pytest.mark.skipif(not DEFAULT_CHECKPOINT.is_dir(), reason="the shipped evaluator is not built yet")
MAX_BYTES = 10 * 1024 * 1024


def test_shipped_artifact_is_at_most_10_mb():
    total = sum(p.stat().st_size for p in DEFAULT_CHECKPOINT.rglob("*") if p.is_file())
    assert total <= MAX_BYTES


def test_shipped_evaluator_loads_on_the_packaged_base_and_is_calibrated():
    scorer = load_scorer(DEFAULT_CHECKPOINT)
    assert scorer.meta.kind == "int8" and scorer.meta.base == PACKAGED_BASE and scorer.meta.calibrated
    upper, lower = scorer.thresholds
    assert -1 <= lower <= upper <= 1
    assert scorer.meta.validation_metrics["roc_auc"] > 0.5


def test_shipped_evaluator_prefers_the_relevant_passage():
    evaluator = RetrievalEvaluator()
    scores = evaluator.invoke({
        "question": "What is Ada Lovelace's occupation?",
        "documents": [
            "Ada Lovelace was an English mathematician and writer, known for her work on the Analytical Engine.",
            "The Danube is the second-longest river in Europe and flows into the Black Sea.",
        ],
    })
    assert scores[0] > scores[1]


@pytest.mark.slow
def test_shipped_evaluator_on_the_popqa_validation_split(tmp_path):
    """Regression floor on real data (the benchmark script reports the actual figures)."""
    from crag.evaluator_model.data import build_data
    from crag.evaluator_model.metrics import classification_metrics
    from crag.evaluator_model.pairs import read_pairs

    shared = Path(os.environ.get("CRAG_DATA_DIR", Path(__file__).parents[3] / "shared" / "data"))
    if not shared.is_dir():
        pytest.skip(f"no shared data at {shared}")
    build_data(shared, tmp_path)
    pairs = read_pairs(tmp_path / "validation-popqa.jsonl")
    scorer = load_scorer(DEFAULT_CHECKPOINT)
    scores = scorer.score([(p.question, scorer.passage_text(p.passage, p.title)) for p in pairs])
    metrics = classification_metrics([p.label for p in pairs], scores, scorer.thresholds[0])
    assert metrics["roc_auc"] >= 0.85 and metrics["accuracy"] >= 0.85
