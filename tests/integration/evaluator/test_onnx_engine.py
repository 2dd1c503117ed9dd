"""The evaluator's forward pass on ONNX Runtime: the same scores as torch, built once per checkpoint
and cached, and torch whenever it cannot be had (real tiny models, a real export, a real session)."""

from __future__ import annotations

import logging
import os
import threading
import warnings

import pytest

from crag.evaluator import onnx_engine
from crag.evaluator.model import load_scorer
from crag.evaluator.onnx_engine import EngineUnavailable, cache_dir, engine_from_env

QUESTION = "What is Robert Jonckheere's occupation?"
PASSAGES = [
    "Robert Jonckheere was a French astronomer known for discovering double stars.",
    "Iron River is a city in Wisconsin.",
    "The telenovela was directed by Manolo Garcia, and it ran for three seasons on national television "
    "before it was cancelled in the spring; its theme song became a hit.",
    "",
    "Paris",
]
PAIRS = [(QUESTION, p) for p in PASSAGES] + [("ls hidden files", "ls -a, --all: do not ignore entries starting with .")]


def graphs() -> list:
    return sorted(cache_dir().glob("*.onnx"))


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CRAG_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "evaluator-onnx"


def test_onnx_scores_equal_torch_in_any_batch_and_padding(tiny_bert, fresh_cache):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # exporting prints nothing a user would have to read
        fast = load_scorer(tiny_bert, engine="onnx")
    slow = load_scorer(tiny_bert, engine="torch")
    assert (fast.engine, slow.engine) == ("onnx", "torch")
    expected = slow.score(PAIRS)
    for batch_size in (1, 2, 32):  # padding to a batch's longest pair changes nothing
        assert fast.score(PAIRS, batch_size=batch_size) == pytest.approx(expected, abs=1e-5)
    assert fast.model_logits(PAIRS)[3] is None  # an empty passage still never reaches the model


def test_the_graph_is_built_once_and_read_from_the_cache_after(tiny_bert, fresh_cache, monkeypatch):
    load_scorer(tiny_bert, engine="onnx")
    [graph] = graphs()
    assert graph.parent == fresh_cache and oct(graph.stat().st_mode & 0o777) != oct(0o600)
    monkeypatch.setattr(onnx_engine, "_build", lambda *a: pytest.fail("exported again"))
    again = load_scorer(tiny_bert, engine="onnx")
    assert again.engine == "onnx" and graphs() == [graph]


def test_other_weights_get_their_own_graph(tiny_bert, fresh_cache, tmp_path):
    import torch

    first = load_scorer(tiny_bert, engine="onnx")
    with torch.no_grad():
        first.model.classifier.bias += 1.0  # different weights: a different key, never the stale graph
    onnx_engine.onnx_forward(first.model, lambda p: _encode(first, p), required=True)
    assert len(graphs()) == 2


def _encode(scorer, pairs):
    from crag.evaluator.model import encode_pairs

    return encode_pairs(scorer.tokenizer, scorer.meta, pairs)


def test_auto_falls_back_to_torch_with_a_warning_and_onnx_by_name_is_an_error(
    tiny_bert, fresh_cache, monkeypatch, caplog
):
    def broken(*args):
        raise RuntimeError("exporter says no")

    monkeypatch.setattr(onnx_engine, "_export", broken)
    with caplog.at_level(logging.WARNING, logger="crag.evaluator.onnx_engine"):
        scorer = load_scorer(tiny_bert)
    assert scorer.engine == "torch" and "exporter says no" in caplog.text and "runs on torch" in caplog.text
    assert scorer.score(PAIRS) == load_scorer(tiny_bert, engine="torch").score(PAIRS)
    with pytest.raises(EngineUnavailable, match="exporter says no"):
        load_scorer(tiny_bert, engine="onnx")
    assert graphs() == []  # nothing half-written left behind


def test_a_graph_that_disagrees_with_torch_is_not_used_and_is_removed(tiny_bert, fresh_cache, monkeypatch, caplog):
    load_scorer(tiny_bert, engine="onnx")
    assert len(graphs()) == 1
    real = onnx_engine.OnnxForward.__call__
    monkeypatch.setattr(onnx_engine.OnnxForward, "__call__", lambda self, enc: real(self, enc) + 0.5)
    with caplog.at_level(logging.WARNING, logger="crag.evaluator.onnx_engine"):
        scorer = load_scorer(tiny_bert)
    assert scorer.engine == "torch" and "differ from torch's by 0.5" in caplog.text
    assert graphs() == []


def test_engine_from_the_environment_and_unknown_names(tiny_bert, fresh_cache, monkeypatch):
    monkeypatch.setenv("CRAG_EVALUATOR_ENGINE", "torch")
    assert load_scorer(tiny_bert).engine == "torch" and graphs() == []
    assert load_scorer(tiny_bert, engine="onnx").engine == "onnx"  # an argument beats the environment
    monkeypatch.setenv("CRAG_EVALUATOR_ENGINE", "tensorrt")
    with pytest.raises(ValueError, match="auto, torch, onnx"):
        load_scorer(tiny_bert)
    monkeypatch.delenv("CRAG_EVALUATOR_ENGINE")
    assert engine_from_env() == "auto" and engine_from_env(" ONNX ") == "onnx"


def test_a_model_quantized_at_load_runs_on_torch(tiny_bert, fresh_cache):
    assert load_scorer(tiny_bert, dynamic_int8=True).engine == "torch"
    with pytest.raises(EngineUnavailable, match="dynamic_int8"):
        load_scorer(tiny_bert, dynamic_int8=True, engine="onnx")


def test_crag_format_t5_scores_the_same_on_any_engine(tiny_t5, fresh_cache):
    auto, slow = load_scorer(tiny_t5), load_scorer(tiny_t5, engine="torch")
    assert auto.engine == "onnx"  # the BERT tokenizer's token types, which T5 ignores, are left out
    assert auto.score(PAIRS) == pytest.approx(slow.score(PAIRS), abs=1e-5)


def test_a_cache_that_cannot_be_written_means_torch(tiny_bert, tmp_path, monkeypatch, caplog):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("CRAG_CACHE_DIR", str(blocked))
    with caplog.at_level(logging.WARNING, logger="crag.evaluator.onnx_engine"):
        assert load_scorer(tiny_bert).engine == "torch"
    assert "runs on torch" in caplog.text


def test_auto_leaves_big_models_on_torch(tiny_bert, fresh_cache, monkeypatch):
    monkeypatch.setattr(onnx_engine, "MAX_AUTO_PARAMETERS", 1000)
    assert load_scorer(tiny_bert).engine == "torch" and graphs() == []
    assert load_scorer(tiny_bert, engine="onnx").engine == "onnx"


def test_old_graphs_are_pruned_to_the_most_recently_used(fresh_cache):
    fresh_cache.mkdir(parents=True)
    for i in range(onnx_engine.KEEP_GRAPHS + 2):
        path = fresh_cache / f"{i}.onnx"
        path.write_bytes(b"x")
        os.utime(path, (1_000 + i, 1_000 + i))
    onnx_engine._prune(fresh_cache)
    assert sorted(p.name for p in graphs()) == sorted(f"{i}.onnx" for i in range(2, onnx_engine.KEEP_GRAPHS + 2))


def test_many_threads_share_one_session(tiny_bert, fresh_cache):
    scorer = load_scorer(tiny_bert, engine="onnx")
    expected = scorer.score(PAIRS)
    results, errors = [], []

    def work():
        try:
            results.append(scorer.score(PAIRS))
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and all(r == expected for r in results)
