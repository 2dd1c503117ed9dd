"""`crag evaluator adapt` (issue 13): held-apart splits, the checks that refuse a worse model, and real
runs on a collection of this machine's own Python documentation (pydoc), with the shipped evaluator."""

from __future__ import annotations

import pydoc
import random

import pytest
from typer.testing import CliRunner

from crag.evaluator.pairs import Pair
from crag.evaluator.training.adapt import AdaptConfig, adapt
from crag.evaluator.training.adapt_checks import Check, check_labelled, split_pairs, verdict
from crag.evaluator.training.adapt_head import ANCHOR_WEIGHTS
from crag.evaluator.training.general import load_general_check

MODULES = [
    "json",
    "argparse",
    "shutil",
    "textwrap",
    "functools",
    "itertools",
    "heapq",
    "bisect",
    "string",
    "fnmatch",
    "glob",
    "csv",
]


def pair(group, question="q", label=0):
    return Pair(question, "passage text", label, "", group, "self:cloze")


def test_pairs_are_held_apart_by_document_when_there_are_enough_documents():
    pairs = [pair(f"doc{d}.md", f"question {q}", q % 2) for d in range(40) for q in range(6)]
    splits, held_by = split_pairs(pairs, 0.3)
    assert held_by == "document"
    where = {}
    for name, members in splits.items():
        for p in members:
            assert where.setdefault(p.group, name) == name  # a document's pairs stay together
    assert splits["check"] and splits["calibrate"] and len(splits["train"]) > len(pairs) / 2


def test_the_split_does_not_depend_on_the_folder_the_collection_was_ingested_from():
    def split(root):
        pairs = [pair(f"{root}/docs/doc{d}.md", f"question {q}", q % 2) for d in range(40) for q in range(2)]
        splits, _ = split_pairs(pairs, 0.3)
        return {name: sorted(p.group.rpartition("/")[2] for p in members) for name, members in splits.items()}

    # the pytest folder's number once decided which pydoc pages were held apart
    assert split("/tmp/pytest-of-root/pytest-7/pydoc0") == split("/home/me/work") == split("https://docs.example.org")


def test_few_documents_are_held_apart_by_query():
    pairs = [pair(f"doc{d}.md", f"question {q}", q % 2) for d in range(3) for q in range(60)]
    splits, held_by = split_pairs(pairs, 0.3)
    assert held_by == "query"
    assert all(splits[name] for name in ("train", "calibrate", "check"))
    assert sum(map(len, splits.values())) == len(pairs)


def test_a_worse_or_forgetful_model_is_refused_and_some_forgetting_is_a_warning():
    drops = {"refuse_general_drop": 0.05, "max_general_drop": 0.02}
    assert verdict([Check("held-apart sets", 100, 0.70, 0.75), Check("general set", 900, 0.98, 0.965)], **drops) == (
        [],
        [],
    )
    problems, warnings = verdict(
        [Check("held-apart sets", 100, 0.70, 0.69), Check("general set", 900, 0.98, 0.92)], **drops
    )
    assert (
        len(problems) == 2 and "held-apart" in problems[0] and "forgot more than 0.05" in problems[1] and not warnings
    )
    problems, warnings = verdict(
        [Check("held-apart sets", 100, 0.70, 0.75), Check("general set", 900, 0.98, 0.95)], **drops
    )
    assert not problems and len(warnings) == 1 and "forgot more than 0.02" in warnings[0]
    problems, _ = verdict([Check("labelled pairs", 20, 0.9, 0.8)], **drops)
    assert problems[0].startswith("worse than the starting evaluator on your labelled")


def test_labelled_pairs_need_both_labels_and_enough_of_them():
    with pytest.raises(ValueError, match="at least 10 pairs"):
        check_labelled([pair("d", label=1)] * 12)
    with pytest.raises(ValueError, match="at least 10 pairs"):
        check_labelled([pair("d", label=1), pair("d", label=0)])
    check_labelled([pair("d", label=i % 2) for i in range(10)])


def test_the_shipped_general_set_mixes_domains_and_labels():
    general = load_general_check()
    assert {p.source for p in general} == {"popqa-retrieved", "bio"}
    assert 0.1 < sum(p.label for p in general) / len(general) < 0.5
    assert 0 < sum(bool(p.title) for p in general) < len(general)  # with and without titles, as passages come


def test_training_stops_at_the_deadline(tiny_bert):
    import time

    from crag.evaluator.model import load_scorer
    from crag.evaluator.training.losses import LOSSES
    from crag.evaluator.training.trainer import Optimiser, train_epoch

    scorer = load_scorer(tiny_bert)
    pairs = [Pair(f"question {i}", f"passage {i}", i % 2) for i in range(32)]
    before = [p.detach().clone() for p in scorer.model.parameters()]
    optimiser = Optimiser.create(scorer.model, 1e-3, 0.0, 0.0, 4)
    loss, stopped = train_epoch(
        scorer.model,
        scorer.tokenizer,
        scorer.meta,
        pairs,
        optimiser,
        LOSSES["bce"],
        order_rng=random.Random(0),
        title_rng=random.Random(1),
        batch_size=8,
        use_title=False,
        title_dropout=0.0,
        teacher_weight=0.0,
        desc="t",
        deadline=time.perf_counter() - 1,
        progress=False,
    )
    assert stopped and loss == 0.0
    assert all((a == b).all() for a, b in zip(before, scorer.model.parameters()))


@pytest.fixture(scope="module")
def pydoc_collection(tmp_path_factory):
    """This machine's pydoc pages for twelve standard modules, ingested with `crag ingest`'s code."""
    from crag.indexing.pipeline import ingest
    from crag.search.store import open_store

    root = tmp_path_factory.mktemp("pydoc")
    docs = root / "docs"
    docs.mkdir()
    for name in MODULES:
        (docs / f"{name}.txt").write_text(pydoc.render_doc(__import__(name), renderer=pydoc.plaintext)[:5000])
    store = open_store(persist_dir=root / "db", collection="pydoc")
    ingest([docs], store, progress=False)
    return root / "db", store


def info_forced(result):
    return result.meta.hyperparameters["adapt"]["forced"]


def _general_part() -> list[Pair]:
    """Ten subjects of the shipped general set, six with a relevant passage: quick to score, and each
    half (`adapt_head.split_general`) holds relevant and irrelevant pairs."""
    general = load_general_check()
    relevant = sorted({p.group for p in general if p.label})
    other = sorted({p.group for p in general} - set(relevant))
    kept = set(relevant[:6] + other[:4])
    return [p for p in general if p.group in kept]


def _config(out, **extra):
    return AdaptConfig(out=out, max_queries=40, general=_general_part(), progress=False, **extra)


def test_adapting_writes_a_normal_compact_checkpoint_with_its_checks(pydoc_collection, tmp_path):
    from crag.evaluator.model import load_scorer
    from crag.evaluator.runnable import RetrievalEvaluator
    from crag.evaluator.training.selfsup import collection_chunks

    _, store = pydoc_collection
    out = tmp_path / "adapted"
    # forced: forty queries make a held-apart check too small to pass or fail on; the checks and the
    # refusal are the next test's
    result = adapt(
        collection_chunks(store), store.embeddings.embed_documents, _config(out, force=True), collection="pydoc"
    )
    assert result.written and info_forced(result) == bool(result.problems)
    info = result.meta.hyperparameters["adapt"]
    assert info["held_apart_by"] == "document" and info["counts"]["documents"] == len(MODULES)
    assert info["fitted_on"] == "self-made pairs" and info["seed"] == 0 and info["epochs"] == 0
    how = result.meta.validation_metrics["calibration"]
    assert how["method"] == "match_rates" and how["head"]["anchor_weight"] in ANCHOR_WEIGHTS
    assert len(how["head"]["candidates"]) == len(ANCHOR_WEIGHTS)
    assert result.meta.blend["logit_standing"] and result.meta.blend["overlap_standing"]  # a head that reads sets
    checks = {c["name"]: c for c in result.meta.validation_metrics["adapt_checks"] if "name" in c}
    assert set(checks) == {"held-apart sets", "general set"}
    assert sorted(p.name for p in out.iterdir()) == [
        "compact.safetensors",
        "crag_evaluator.json",
        "lexical_idf.json.gz",
    ]
    assert (out / "compact.safetensors").stat().st_size < 8_000_000
    assert [p.name for p in tmp_path.iterdir()] == ["adapted"]  # no staging folder left behind
    assert out.stat().st_mode & 0o777 == tmp_path.stat().st_mode & 0o777  # readable as its parent, not 0700
    scorer = load_scorer(out)
    assert scorer.meta.kind == "int8" and scorer.meta.calibrated
    assert scorer.meta.thresholds.lower <= scorer.meta.thresholds.upper
    evaluator = RetrievalEvaluator(checkpoint=str(out))
    scores = evaluator.invoke(
        {
            "question": "How do I sort keys when writing JSON?",
            "documents": [
                "If sort_keys is true, the output of dictionaries is sorted by key.",
                "The heap queue algorithm keeps the smallest item first.",
            ],
        }
    )
    assert scores[0] > scores[1] and all(-1 <= s <= 1 for s in scores)


def test_a_model_that_fails_a_check_is_not_written(pydoc_collection, tmp_path):
    from crag.evaluator.training.selfsup import collection_chunks

    _, store = pydoc_collection
    chunks = collection_chunks(store)
    labelled = [
        Pair("How do I sort keys when writing JSON?", chunks[i].text, int("sort_keys" in chunks[i].text))
        for i in range(len(chunks))
    ]
    out = tmp_path / "adapted"
    # no model can gain a whole point of ROC-AUC; one epoch of fine-tuning goes through the training path
    cfg = _config(out, refuse_general_drop=-1.0, labelled=labelled, epochs=1)
    result = adapt(chunks, store.embeddings.embed_documents, cfg)
    assert not result.written and not out.exists() and list(tmp_path.iterdir()) == []
    assert any("forgot" in p for p in result.problems)
    assert result.meta.hyperparameters["adapt"]["fitted_on"] == "labelled pairs"
    assert {c.name for c in result.checks} == {"held-apart sets", "general set", "labelled pairs"}


def test_the_command_refuses_to_overwrite_and_names_a_missing_collection(pydoc_collection, tmp_path):
    from crag.cli.main import app

    db, _ = pydoc_collection
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    runner = CliRunner()
    result = runner.invoke(
        app, ["evaluator", "adapt", "--collection", "pydoc", "--chroma-dir", str(db), "--out", str(taken)]
    )
    assert result.exit_code == 2 and "--overwrite" in result.output and (taken / "notes.txt").read_text() == "mine"
    result = runner.invoke(
        app, ["evaluator", "adapt", "--collection", "pydocs", "--chroma-dir", str(db), "--out", str(tmp_path / "new")]
    )
    assert result.exit_code == 2 and "'pydoc'" in result.output and not (tmp_path / "new").exists()


def test_questions_written_by_a_chat_model_join_the_self_made_ones(pydoc_collection, tmp_path):
    """A writer (here a function) is asked about sampled chunks; its readable questions are added, and a
    writer that fails three times is given up without failing the run."""
    from crag.evaluator.training.selfsup import collection_chunks

    _, store = pydoc_collection
    chunks = collection_chunks(store)
    asked = []

    def writer(prompt: str) -> str:
        asked.append(prompt)
        words = [w for w in prompt.split("\n\n")[1].split() if w.isalpha() and len(w) > 4][:6]
        return f"1. How do I use {' '.join(words[:3])}?\n2. What does {' '.join(words[3:6])} do?\n3. {words[0]} help"

    cfg = _config(tmp_path / "a", force=True, question_writer=writer, max_question_chunks=6)
    result = adapt(chunks, store.embeddings.embed_documents, cfg, log=lambda line: None)
    assert len(asked) == 6 and result.written
    assert result.counts["pairs"] > 0

    def broken(prompt: str) -> str:
        asked.append(prompt)
        raise TimeoutError("no answer")

    asked.clear()
    lines = []
    cfg = _config(tmp_path / "b", force=True, question_writer=broken, max_question_chunks=6)
    assert adapt(chunks, store.embeddings.embed_documents, cfg, log=lines.append).written
    assert len(asked) == 3 and any("failed three times" in line for line in lines)
