"""Loading checkpoints and scoring pairs: formats, batching, range and the defined edge cases."""

from __future__ import annotations

import json
import math

import pytest

from crag.evaluator.checkpoint import METADATA_FILE, EvaluatorError
from crag.evaluator.model import EMPTY_SCORE, load_scorer
from crag.thresholds import PRESETS, Thresholds

QUESTION = "What is Robert Jonckheere's occupation?"
PASSAGES = [
    "Robert Jonckheere was a French astronomer known for discovering double stars.",
    "Iron River is a city in Wisconsin.",
    "The telenovela was directed by Manolo Garcia.",
]


def test_bert_cross_encoder_loads_with_pair_input_and_sigmoid_range(tiny_bert):
    scorer = load_scorer(tiny_bert)
    assert scorer.meta.input_format == "pair" and scorer.meta.score_transform == "sigmoid"
    scores = scorer.score([(QUESTION, p) for p in PASSAGES])
    assert len(scores) == 3 and all(-1.0 <= s <= 1.0 for s in scores)
    assert len(set(scores)) == 3  # real model outputs, not a constant


def test_t5_checkpoint_loads_in_crag_format(tiny_t5):
    scorer = load_scorer(tiny_t5)
    assert scorer.meta.input_format == "sep" and scorer.meta.score_transform == "clip"
    assert scorer.thresholds == PRESETS["popqa"]  # uncalibrated: the paper's PopQA pair
    scores = scorer.score([(QUESTION, p) for p in PASSAGES])
    assert all(-1.0 <= s <= 1.0 for s in scores)


def test_clip_transform_bounds_raw_regression_outputs(tiny_t5):
    scorer = load_scorer(tiny_t5)
    assert [scorer._transform(z) for z in (-3.0, 0.25, 7.0)] == [-1.0, 0.25, 1.0]


def test_sigmoid_transform_is_two_sigmoid_minus_one_without_overflow(tiny_bert):
    scorer = load_scorer(tiny_bert)
    assert scorer._transform(0.0) == 0.0
    assert scorer._transform(2.0) == pytest.approx(2 / (1 + math.exp(-2.0)) - 1)
    assert scorer._transform(-1e6) == -1.0 and scorer._transform(1e6) == 1.0


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_t5"])
def test_one_forward_pass_per_mini_batch_and_padding_does_not_change_scores(fixture, request):
    scorer = load_scorer(request.getfixturevalue(fixture))
    pairs = [(QUESTION, " ".join([p] * (i + 1))) for i, p in enumerate(PASSAGES * 4)]  # 12 lengths
    before = scorer.forward_passes
    together = scorer.score(pairs, batch_size=32)
    assert scorer.forward_passes - before == 1
    before = scorer.forward_passes
    scorer.score(pairs, batch_size=5)
    assert scorer.forward_passes - before == 3
    alone = [scorer.score([pair])[0] for pair in pairs]
    assert together == pytest.approx(alone, abs=1e-4)


def test_empty_passage_scores_minus_one_without_the_model(tiny_bert):
    scorer = load_scorer(tiny_bert)
    before = scorer.forward_passes
    assert scorer.score([(QUESTION, ""), (QUESTION, "   \n")]) == [EMPTY_SCORE, EMPTY_SCORE]
    assert scorer.forward_passes == before


def test_very_long_passage_reads_only_max_length_tokens(tiny_bert):
    scorer = load_scorer(tiny_bert)
    head = " ".join(["astronomer observatory telescope"] * 200)  # well over max_length tokens
    long_passage = head + " " + " ".join(["unrelated words follow here"] * 20000)
    assert scorer.score([(QUESTION, long_passage)]) == pytest.approx(scorer.score([(QUESTION, head)]), abs=1e-5)


@pytest.mark.parametrize(
    "pairs, error",
    [
        ([(QUESTION, 42)], TypeError),
        ([(None, "text")], TypeError),
        ([("  ", "text")], ValueError),
        (["just one string"], TypeError),
        ([(QUESTION, b"bytes")], TypeError),
    ],
)
def test_non_text_and_empty_questions_are_rejected(tiny_bert, pairs, error):
    with pytest.raises(error, match="pair 0"):
        load_scorer(tiny_bert).score(pairs)


def test_missing_checkpoint_names_path_and_command(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(EvaluatorError) as info:
        load_scorer(missing)
    assert str(missing) in str(info.value) and "python -m lab evaluator train" in str(info.value)


def test_folder_without_a_model_is_a_clear_error(tmp_path):
    with pytest.raises(EvaluatorError, match="neither"):
        load_scorer(tmp_path)


def test_corrupt_weights_are_a_clear_error(tiny_bert, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for item in tiny_bert.iterdir():
        (broken / item.name).write_bytes(item.read_bytes())
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(EvaluatorError) as info:
        load_scorer(broken)
    assert str(broken) in str(info.value) and "python -m lab evaluator train" in str(info.value)


def test_broken_metadata_is_a_clear_error(tiny_bert, tmp_path):
    broken = tmp_path / "meta"
    broken.mkdir()
    (broken / METADATA_FILE).write_text("{not json")
    with pytest.raises(EvaluatorError, match=METADATA_FILE):
        load_scorer(broken)


def test_multi_output_classifier_is_refused(tmp_path):
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(
        vocab_size=100, hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8, num_labels=2
    )
    BertForSequenceClassification(config).save_pretrained(tmp_path)
    with pytest.raises(EvaluatorError, match="num_labels=1"):
        load_scorer(tmp_path)


def test_metadata_sets_thresholds_title_and_transform(tiny_bert, tmp_path):
    folder = tmp_path / "with-meta"
    folder.mkdir()
    for item in tiny_bert.iterdir():
        (folder / item.name).write_bytes(item.read_bytes())
    (folder / METADATA_FILE).write_text(
        json.dumps({"kind": "full", "thresholds": {"upper": 0.3, "lower": -0.4}, "use_title": True, "max_length": 64})
    )
    scorer = load_scorer(folder)
    assert scorer.thresholds == Thresholds(0.3, -0.4)
    assert scorer.passage_text("text", "Title") == "Title: text"
    assert scorer.meta.max_length == 64


def test_int8_scores_stay_close_to_float(tiny_bert):
    exact = load_scorer(tiny_bert).score([(QUESTION, p) for p in PASSAGES])
    quantized = load_scorer(tiny_bert, dynamic_int8=True).score([(QUESTION, p) for p in PASSAGES])
    assert quantized == pytest.approx(exact, abs=0.1)
