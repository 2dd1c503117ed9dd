"""The paper's figures from runs on fakes (lab/paper.py): the threshold sweep, Table 2 derived from the forced
routes, the plots, and the robustness curve."""

from __future__ import annotations

import json

import numpy as np
import pytest

from crag.evaluation.runner import run
from lab.paper import paper_report, robustness, threshold_sweep
from tests.unit.experiments.test_runner import predictions, settings


def test_a_run_s_plots_are_drawn_from_its_records(inputs, tmp_path, make_context):
    out = tmp_path / "run"
    run(settings(inputs, out, make_context, "rag,crag"))
    paper_report(out)
    report = (out / "paper.md").read_text()
    for name in ("actions.png", "scores.png"):
        assert (out / name).stat().st_size > 1000 and f"({name})" in report
    assert not (out / "sweep.png").exists()


def test_forced_routes_give_the_threshold_sweep(inputs, tmp_path, make_context):
    out = tmp_path / "run"
    run(settings(inputs, out, make_context, "crag,route_correct,route_incorrect,route_ambiguous"))
    paper_report(out)
    sweep = json.loads((out / "sweep.json").read_text())
    assert sweep["best"]["accuracy"] == 1.0 and len(sweep["grid"]) == 41
    assert (out / "sweep.png").stat().st_size > 1000 and "Threshold sweep" in (out / "paper.md").read_text()


def test_table_2_derived_from_the_forced_routes_matches_running_it(inputs, tmp_path, make_context):
    out = tmp_path / "run"
    names = ["crag", "crag_no_correct", "crag_no_incorrect", "crag_no_ambiguous"]
    run(settings(inputs, out, make_context, ",".join([*names, "route_correct", "route_incorrect", "route_ambiguous"])))
    results = paper_report(out)
    rows = predictions(out)
    for name in names:
        derived = results[f"{name} (routes)"]
        assert derived["n"] == 2 and derived["actions"] == results[name]["actions"]
        assert derived["accuracy"] == results[name]["accuracy"]
        assert derived["knowledge_tokens"] == results[name]["knowledge_tokens"]
    # the ablations really route differently here, so the check above has something to catch
    assert results["crag_no_correct"]["actions"] == {"correct": 0, "ambiguous": 1, "incorrect": 1}
    assert results["crag_no_incorrect"]["actions"] == {"correct": 1, "ambiguous": 1, "incorrect": 0}
    assert len(rows) == 14  # derived rows are reported, never written as predictions
    report = (out / "paper.md").read_text()
    assert "| crag_no_correct (routes) | 2 |" in report
    assert "- crag_no_ambiguous: run and derived equally right on 2 of 2 questions." in report


def test_derived_rows_need_all_three_routes(inputs, tmp_path, make_context):
    out = tmp_path / "run"
    run(settings(inputs, out, make_context, "crag,route_correct,route_incorrect"))
    results = paper_report(out)
    assert not any(name.endswith("(routes)") for name in results)


def test_robustness_runs_each_fraction_and_draws_the_curve(inputs, tmp_path, make_context):
    out = tmp_path / "robust"
    summary = robustness(settings(inputs, out, make_context), [0.0, 0.5, 1.0])
    assert [p["drop_gold"] for p in summary["points"]["crag"]] == [0.0, 0.5, 1.0]
    for fraction in ("0.00", "0.50", "1.00"):
        assert (out / f"drop-{fraction}" / "results.json").is_file()
    assert json.loads((out / "drop-1.00" / "run.json").read_text())["kb_dropped"] == 1  # the Anna passage
    assert (out / "robustness.png").stat().st_size > 1000
    assert "| crag |" in (out / "robustness.md").read_text() and "loss_at_half" in summary


def test_threshold_sweep_picks_the_outcome_of_the_action_the_pair_implies():
    scores = {"a": [0.9, -0.9], "b": [-0.95], "c": [0.1]}
    outcomes = {
        "correct": {"a": True, "b": False, "c": False},
        "incorrect": {"a": False, "b": True, "c": False},
        "ambiguous": {"a": False, "b": False, "c": True},
    }
    grid = np.array([-1.0, 0.0, 0.5, 1.0])
    table = threshold_sweep(outcomes, scores, grid)
    assert np.isnan(table[2, 1])  # lower 0.5 above upper 0.0
    assert table[1, 2] == pytest.approx(1.0)  # upper 0.5, lower 0.0: every outcome right
    assert table[0, 3] == pytest.approx(1 / 3)  # nothing reaches upper 1.0 or falls below -1.0: all ambiguous
