"""Building training pairs by the paper's recipe and training tiny evaluators end to end."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from crag.cli.main import app
from crag.evaluator.checkpoint import METADATA_FILE
from crag.evaluator.model import load_scorer
from crag.evaluator.pairs import read_pairs
from crag.evaluator.training.trainer import TrainConfig, train
from crag.thresholds import Thresholds
from lab.cli import app as lab_app
from lab.evaluator.data import data_dir, norm_title
from lab.evaluator.llm_teacher import passage_key


def test_titles_compare_like_wikipedia_page_names():
    assert norm_title("El honorable Señor Valdez") == norm_title("El_honorable señor Valdez")
    assert norm_title("George Lewis (politician)") != norm_title("George Lewis")


def test_missing_shared_data_says_how_to_point_at_it(tmp_path, monkeypatch):
    monkeypatch.delenv("CRAG_DATA_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match="CRAG_DATA_DIR"):
        data_dir(tmp_path)


def test_build_data_labels_by_gold_page_and_keeps_splits_question_disjoint(built_data):
    out, manifest = built_data
    train, validation = read_pairs(out / "train.jsonl"), read_pairs(out / "validation.jsonl")
    assert {p.group for p in train}.isdisjoint({p.group for p in validation})
    popqa_val = {p.group for p in validation if p.group.startswith("popqa-")}
    assert popqa_val == {"popqa-100", "popqa-250"}
    for pair in train + validation:
        if pair.source == "popqa-web":
            assert pair.label == int(
                norm_title(pair.title) == norm_title(pair.question.split("What is ")[1].split("'s")[0])
            )
        if pair.source.startswith("popqa-bm25"):
            assert pair.label == 0
    assert not any(p.passage == "Stub." for p in train + validation)
    assert any(p.source == "hotpotqa" for p in train) and any(p.source == "hotpotqa" for p in validation)
    # BM25 negatives of a validation question never come from a training question's strips
    train_texts = {p.passage for p in train if p.source == "popqa-web"}
    assert not any(p.passage in train_texts for p in validation if p.source == "popqa-bm25-web")
    assert manifest["splits"]["train"]["pairs"] == len(train)
    # question-swap negatives: a training gold passage asked about another training question's subject
    swaps = [p for p in train if p.source == "popqa-swap"]
    assert swaps and all(p.label == 0 for p in swaps)
    assert not any(p.source == "popqa-swap" for p in validation)
    for swap in swaps:
        assert swap.title.upper() not in swap.question.upper()
    # CRAG's own format is written beside the JSONL
    assert (out / "train.tsv").read_text().splitlines()[0].count(" [SEP] ") == 1


def test_build_data_adds_real_retrieval_bio_phrasings_and_a_dev_split(built_data):
    out, manifest = built_data
    train, dev, validation = (read_pairs(out / f"{name}.jsonl") for name in ("train", "dev", "validation"))
    groups = {name: {p.group for p in pairs} for name, pairs in (("train", train), ("dev", dev), ("val", validation))}
    assert groups["train"].isdisjoint(groups["dev"]) and groups["train"].isdisjoint(groups["val"])
    assert groups["dev"].isdisjoint(groups["val"])
    retrieved = [p for p in train + dev if p.source == "popqa-retrieved"]
    assert retrieved and {p.label for p in retrieved} == {0, 1}
    for pair in (p for p in retrieved if p.title):  # labelled by gold page: the title is the subject's page, or not
        subject = next(
            q for q in ("Anna Berg", "Carl Dahl", "Eva Falk", "Gus Holm", "Ida Juhl", "Karl Lund") if q in pair.question
        )
        assert pair.label == int(norm_title(pair.title) == norm_title(subject)), pair
    # no passage of a validation question is in the retrieval pool training draws from
    validation_subjects = ("Anna Berg", "Carl Dahl")  # q_index 100 and 250
    assert not any(s in p.passage or s.upper() in p.title.upper() for p in retrieved for s in validation_subjects)
    # each question is also asked in a training phrasing; Bio pairs keep Contriever's labels
    assert len({p.question for p in retrieved}) > len({p.group for p in retrieved})
    bio = [p for p in train + dev if p.source == "bio"]
    assert bio and all(p.label == int("(singer)" not in p.title) for p in bio if p.title)
    assert len({p.question for p in bio}) > len({p.group for p in bio})
    # dev pairs come with and without titles; only training pairs carry the teacher's probability
    assert any(p.title for p in dev) and any(not p.title for p in dev)
    assert all(p.teacher is not None and 0.0 <= p.teacher <= 1.0 for p in train)
    assert all(p.teacher is None for p in dev + validation)
    assert manifest["splits"]["dev"]["pairs"] == len(dev)


def _train(built_data, tmp_path, **kw):
    out, _ = built_data
    cfg = TrainConfig(
        train=out / "train.jsonl",
        validation=out / "validation.jsonl",
        out=tmp_path / "model",
        epochs=1,
        batch_size=4,
        max_length=48,
        **kw,
    )
    return train(cfg), cfg.out


@pytest.mark.parametrize("kind", ["full", "lora"])
def test_train_bert_full_and_lora_save_a_loadable_calibrated_checkpoint(built_data, tmp_path, tiny_bert, kind):
    meta, out = _train(built_data, tmp_path, base=str(tiny_bert), lora_rank=4 if kind == "lora" else 0)
    assert meta["kind"] == kind and meta["calibrated"] and meta["data_hash"]
    assert set(meta["validation_metrics"]) >= {"accuracy", "roc_auc", "f1", "history", "calibration"}
    assert meta["hyperparameters"]["seed"] == 42
    assert (out / METADATA_FILE).is_file()
    if kind == "lora":
        assert (out / "adapter_model.safetensors").is_file() and not (out / "model.safetensors").exists()
    scorer = load_scorer(out)
    assert scorer.thresholds == Thresholds.from_mapping(meta["thresholds"])
    assert all(-1 <= s <= 1 for s in scorer.score([("What is Anna Berg's occupation?", "Anna Berg was a painter.")]))


@pytest.mark.parametrize("read_long", [False, True])
def test_training_reads_long_passages_as_the_scorer_does_when_asked(
    built_data, tmp_path, tiny_bert, monkeypatch, read_long
):
    """With read_long, every training batch goes through `reading.readings` (the scorer's own reading,
    at the training length) before it is encoded; without, passages are cut at their end as before."""
    import crag.evaluator.training.trainer as trainer

    seen = []

    def spy(tokenizer, max_length, pairs, idf=None):
        seen.append((max_length, len(pairs), idf("zzzunseen") if idf else None))
        return readings(tokenizer, max_length, pairs, idf)

    from crag.evaluator.reading import readings

    monkeypatch.setattr(trainer, "readings", spy)
    meta, _ = _train(built_data, tmp_path, base=str(tiny_bert), read_long=read_long)
    assert meta["hyperparameters"]["read_long"] is read_long
    if not read_long:
        assert not seen
        return
    n = len(trainer.read_pairs(built_data[0] / "train.jsonl"))
    assert sum(count for _, count, _ in seen) == n  # every training pair, once, at the training length
    assert {length for length, _, _ in seen} == {48}
    assert all(weight is not None and weight > 0 for _, _, weight in seen)  # IDF of the training passages


def test_random_t5_trains_in_crag_format(built_data, tmp_path):
    meta, out = _train(built_data, tmp_path, base="random-t5-tiny", loss="mse")
    assert meta["input_format"] == "sep" and meta["score_transform"] == "clip"
    scorer = load_scorer(out)
    assert scorer.model.config.model_type == "t5"


def test_training_is_reproducible_with_a_fixed_seed(built_data, tmp_path, tiny_bert):
    first, _ = _train(built_data, tmp_path / "a", base=str(tiny_bert))
    second, _ = _train(built_data, tmp_path / "b", base=str(tiny_bert))
    assert first["validation_metrics"]["history"] == second["validation_metrics"]["history"]


def test_cli_build_data_train_calibrate_eval(mini_shared_data, tmp_path, tiny_bert):
    runner = CliRunner()
    data = tmp_path / "pairs"
    result = runner.invoke(
        lab_app, ["evaluator", "build-data", "--data-dir", str(mini_shared_data), "--out", str(data)]
    )
    assert result.exit_code == 0, result.output
    assert "train" in result.output and "validation" in result.output
    model = tmp_path / "model"
    result = runner.invoke(
        lab_app,
        [
            "evaluator",
            "train",
            "--base",
            str(tiny_bert),
            "--data",
            str(data),
            "--out",
            str(model),
            "--epochs",
            "1",
            "--max-length",
            "48",
            "--validation",
            "validation",
            "--teacher-weight",
            "0.5",
        ],
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(
        lab_app,
        [
            "evaluator",
            "blend",
            "--model",
            str(model),
            "--pairs",
            str(data / "dev.jsonl"),
            "--pairs",
            str(data / "validation.tsv"),
            "--corpus",
            str(data / "train.jsonl"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "overlap" in result.output and "now run `calibrate`" in result.output
    meta = json.loads((model / METADATA_FILE).read_text())
    assert set(meta["blend"]) == {
        "model",
        "lexical",
        "contrast",
        "logit_standing",
        "overlap_standing",
        "bias",
        "idf_file",
    }
    assert not meta["calibrated"]
    assert meta["validation_metrics"]["blend"]["pairs"] == [str(data / "dev.jsonl"), str(data / "validation.tsv")]
    assert (model / meta["blend"]["idf_file"]).is_file()
    result = runner.invoke(
        lab_app,
        [
            "evaluator",
            "calibrate",
            "--model",
            str(model),
            "--pairs",
            str(data / "validation.tsv"),
            "--false-relevant-cost",
            "3",
        ],
    )
    assert result.exit_code == 0, result.output
    meta = json.loads((model / METADATA_FILE).read_text())
    assert meta["validation_metrics"]["calibration"]["false_relevant_cost"] == 3 and meta["calibrated"]
    assert meta["blend"]  # calibrating keeps the blend
    uncapped = meta["thresholds"]
    common = ["evaluator", "calibrate", "--model", str(model), "--pairs", str(data / "dev.jsonl")]
    result = runner.invoke(lab_app, [*common, "--max-discard", "0.0", "--discard-pairs", str(data / "dev.jsonl")])
    assert result.exit_code == 0, result.output
    calibration = json.loads((model / METADATA_FILE).read_text())["validation_metrics"]["calibration"]
    assert calibration["max_discard"] == 0.0 and calibration["discard_pairs"] == [str(data / "dev.jsonl")]
    assert calibration["lower"] <= (calibration["utility_lower"] or calibration["lower"])
    result = runner.invoke(lab_app, [*common, "--max-discard", "0.05", "--discard-pairs", str(data / "validation.tsv")])
    assert result.exit_code == 2 and "has no groups" in result.output
    result = runner.invoke(lab_app, [*common, "--discard-pairs", str(data / "dev.jsonl")])
    assert result.exit_code == 2 and "needs --max-discard" in result.output
    assert uncapped
    result = runner.invoke(
        app, ["evaluator", "eval", "--model", str(model), "--pairs", str(data / "validation.tsv"), "--json"]
    )
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert list(figures) == ["accuracy", "balanced_accuracy", "f1", "roc_auc", "n", "pairs_per_s", "engine"]
    assert figures["n"] == len(read_pairs(data / "validation.tsv")) and figures["pairs_per_s"] > 0
    assert figures["engine"] == "onnx"
    result = runner.invoke(app, ["evaluator", "eval", "--model", str(model), "--pairs", str(data / "validation.tsv")])
    assert result.exit_code == 0 and "roc_auc" in result.output


def test_cli_errors_are_clear_and_exit_2(tmp_path):
    runner = CliRunner()
    result = runner.invoke(
        app, ["evaluator", "eval", "--model", str(tmp_path / "none"), "--pairs", str(tmp_path / "p.tsv")]
    )
    assert result.exit_code == 2 and "not found" in result.output
    (tmp_path / "p.tsv").write_text("q [SEP] p\t1\n")
    result = runner.invoke(
        app, ["evaluator", "eval", "--model", str(tmp_path / "none"), "--pairs", str(tmp_path / "p.tsv")]
    )
    assert result.exit_code == 2 and "python -m lab evaluator train" in result.output
    result = runner.invoke(
        lab_app, ["evaluator", "train", "--out", str(tmp_path / "m"), "--data", str(tmp_path / "empty")]
    )
    assert result.exit_code == 2 and "build-data" in result.output


def test_full_fine_tune_exports_to_a_compact_int8_checkpoint(built_data, tmp_path, tiny_bert):
    from crag.evaluator.compact import WEIGHTS_FILE, export_compact

    _meta, full = _train(built_data, tmp_path, base=str(tiny_bert), use_title=True)
    info = export_compact(full, tmp_path / "compact", base=str(tiny_bert))
    compact = load_scorer(tmp_path / "compact")
    assert compact.meta.kind == "int8" and compact.meta.use_title
    assert compact.thresholds == load_scorer(full).thresholds
    # the frozen word embeddings are not stored: they come from the base
    assert info["parameters"] < sum(p.numel() for p in load_scorer(full).model.parameters())
    assert (tmp_path / "compact" / WEIGHTS_FILE).stat().st_size < (full / "model.safetensors").stat().st_size / 2
    pairs = [
        ("What is Anna Berg's occupation?", t)
        for t in ("Anna Berg was a painter.", "A village with a mill.", "Karl Lund plays football.")
    ]
    assert compact.score(pairs) == pytest.approx(load_scorer(full).score(pairs), abs=0.02)
    export_compact(full, tmp_path / "short", base=str(tiny_bert), max_length=32)
    assert load_scorer(tmp_path / "short").meta.max_length == 32 and compact.meta.max_length == 48


def test_export_refuses_what_is_not_a_full_fine_tune(tiny_bert, tmp_path):
    from crag.evaluator.checkpoint import EvaluatorError
    from crag.evaluator.compact import export_compact

    with pytest.raises(EvaluatorError, match="not a full fine-tune"):
        export_compact(tiny_bert, tmp_path / "out", base=str(tiny_bert))


def test_title_dropout_is_seeded_and_partial():
    import random

    from crag.evaluator.pairs import Pair
    from crag.evaluator.training.trainer import _texts

    pairs = [Pair("q", f"passage {i}", 1, "Title") for i in range(200)]
    first = _texts(pairs, True, random.Random(1), 0.5)
    assert first == _texts(pairs, True, random.Random(1), 0.5)
    titled = sum(text.startswith("Title: ") for _, text in first)
    assert 60 < titled < 140
    assert all(text.startswith("Title: ") for _, text in _texts(pairs, True))
    assert not any(text.startswith("Title: ") for _, text in _texts(pairs, False))


def test_teacher_labels_replace_the_cosine_teacher_of_the_pairs_they_cover(mini_shared_data, tmp_path):
    runner = CliRunner()
    build = ["evaluator", "build-data", "--data-dir", str(mini_shared_data)]
    assert runner.invoke(lab_app, [*build, "--out", str(tmp_path / "first")]).exit_code == 0
    before = read_pairs(tmp_path / "first" / "train.jsonl")
    keys = {(p.question, passage_key(p.passage)) for p in before[:2]}
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"question": q, "passage": k, "p_yes": 0.0123}) + "\n" for q, k in keys))
    result = runner.invoke(lab_app, [*build, "--out", str(tmp_path / "second"), "--teacher-labels", str(labels)])
    assert result.exit_code == 0, result.output
    after = read_pairs(tmp_path / "second" / "train.jsonl")
    covered = [(p.question, passage_key(p.passage)) in keys for p in after]
    assert f"the chat model's grade for {sum(covered)} training pairs" in result.output and sum(covered) >= 2
    assert [p.teacher == 0.0123 for p in after] == covered  # graded ones carry the grade
    assert [p.teacher for p, c in zip(after, covered) if not c] == [p.teacher for p, c in zip(before, covered) if not c]
    missing = runner.invoke(
        lab_app, [*build, "--out", str(tmp_path / "third"), "--teacher-labels", str(tmp_path / "no")]
    )
    assert missing.exit_code == 2 and "teacher labels not found" in missing.output
