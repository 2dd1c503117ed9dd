"""The CRAG paper's figures from `crag eval run` folders: the threshold sweep and Table 2's ablations derived
from the three forced routes, the plots of a run, and Fig. 3's robustness curve (a run per --drop-gold).

    python -m lab paper report RUN            # sweep.json, the plots and paper.md beside the run's report
    python -m lab paper robustness --questions Q --kb KB --web WEB --out DIR [--fractions 0,0.25,0.5,0.75,1]
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from crag.evaluation import answer_metrics as metrics
from crag.evaluation.inputs import read_questions
from crag.evaluation.report import system_records
from crag.evaluation.runner import PREDICTIONS, PredictionStore, RunSettings, run
from crag.evaluation.systems import ROUTES, SYSTEMS, parse_systems
from crag.knowledge.routing import decide_action
from crag.thresholds import Thresholds
from lab import plots

SWEEP_GRID = np.round(np.linspace(-1.0, 1.0, 41), 3)
# the systems that differ from CRAG only in their thresholds, which the forced routes can stand in for
THRESHOLD_SYSTEMS = ("crag", "crag_no_correct", "crag_no_incorrect", "crag_no_ambiguous")
DERIVED = " (routes)"


def _ratio(x: float, y: float) -> float:
    return x / y if y else math.inf


def _pct(x: float | None) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x * 100:.1f}"


def threshold_sweep(
    outcomes: dict[str, dict[str, bool]], scores: dict[str, list[float]], grid: Sequence[float]
) -> np.ndarray:
    """Accuracy of CRAG for every (upper, lower) pair of `grid`, without running anything again.

    `outcomes[action][qid]` says whether the answer was right when that action was forced and
    `scores[qid]` are the question's document scores; since retrieval, refinement, search and
    greedy generation do not depend on the thresholds, the pair only decides which outcome
    counts. Rows are lower thresholds, columns upper ones; NaN where lower > upper.
    """
    qids = [q for q in scores if all(q in outcomes.get(a, {}) for a in metrics.ACTIONS)]
    table = np.full((len(grid), len(grid)), np.nan)
    if not qids:
        return table
    for row, lower in enumerate(grid):
        for col, upper in enumerate(grid):
            if lower <= upper:
                pair = Thresholds(upper=upper, lower=lower)
                table[row, col] = np.mean([outcomes[decide_action(scores[q], pair)][q] for q in qids])
    return table


def forced_routes(by_system: dict[str, list[dict]]) -> dict[str, dict[str, dict]] | None:
    """{action: {qid: record}} of the three forced-route runs (`--sweep`) without failed questions;
    None unless all three have run."""
    if not all(name in by_system for name in ROUTES.values()):
        return None
    return {action: {r["qid"]: r for r in by_system[name] if not r.get("error")} for action, name in ROUTES.items()}


def sweep(by_system: dict[str, list[dict]]) -> tuple[np.ndarray, dict] | None:
    """The threshold sweep, when the three forced-route systems have run (`--sweep`)."""
    forced = forced_routes(by_system)
    if forced is None:
        return None
    outcomes = {action: {q: bool(r["correct"]) for q, r in records.items()} for action, records in forced.items()}
    scores = {q: r["scores"] for q, r in forced["correct"].items()}
    table = threshold_sweep(outcomes, scores, SWEEP_GRID)
    best = np.unravel_index(np.nanargmax(table), table.shape) if not np.all(np.isnan(table)) else None
    info = {"grid": SWEEP_GRID.tolist(), "accuracy": [[None if math.isnan(v) else v for v in row] for row in table]}
    if best is not None:
        info["best"] = {
            "upper": float(SWEEP_GRID[best[1]]),
            "lower": float(SWEEP_GRID[best[0]]),
            "accuracy": float(table[best]),
        }
    return table, info


def from_routes(by_system: dict[str, list[dict]], upper: float, lower: float) -> dict[str, list[dict]]:
    """Records of CRAG and Table 2's ablations assembled from the forced-route runs (`--sweep`).

    A threshold chooses which route a question takes, and every route's answer is deterministic
    (greedy generation), so each question's record is the one its route gave when forced. The lower
    threshold also decides which documents are rejected (their strips are judged by their own score),
    and the forced routes reject by the run's pair: exact there (deriving `crag` checks the shortcut
    against the real run), an approximation at other lower thresholds. That gives Table 2 for the
    price of the sweep. Questions where a route failed are left out.
    """
    forced = forced_routes(by_system)
    if forced is None:
        return {}
    qids = [q for q in forced["correct"] if all(q in records for records in forced.values())]
    derived = {}
    for name in THRESHOLD_SYSTEMS:
        changes = SYSTEMS[name].changes(None, upper, lower)
        pair = Thresholds(upper=changes.get("upper_threshold", upper), lower=changes.get("lower_threshold", lower))
        derived[name + DERIVED] = [
            {**forced[action][q], "system": name + DERIVED}
            for q in qids
            for action in [decide_action(forced["correct"][q]["scores"], pair)]
        ]
    return derived


def agreement(by_system: dict[str, list[dict]]) -> dict[str, dict]:
    """For each system both run and derived: on how many questions the two were equally right."""
    found = {}
    for name in THRESHOLD_SYSTEMS:
        if name in by_system and name + DERIVED in by_system:
            ran = {r["qid"]: bool(r["correct"]) for r in by_system[name]}
            pairs = [(ran[r["qid"]], bool(r["correct"])) for r in by_system[name + DERIVED] if r["qid"] in ran]
            found[name] = {"n": len(pairs), "same": sum(a == b for a, b in pairs)}
    return found


def write_robustness(out: Path, points: dict[str, list[tuple[float, float, list[float]]]], n: int) -> dict:
    """robustness.json, robustness.png and robustness.md for a drop-gold sweep; returns the summary."""
    out = Path(out)
    summary: dict = {
        "points": {
            s: [{"drop_gold": f, "accuracy": a, "accuracy_ci": ci} for f, a, ci in sorted(series)]
            for s, series in points.items()
        }
    }
    loss = {}
    for system, series in points.items():
        accuracy = {f: a for f, a, _ in series}
        if 0.0 in accuracy and 0.5 in accuracy:
            loss[system] = accuracy[0.0] - accuracy[0.5]
    summary["loss_at_half"] = loss
    if "crag" in loss and "rag" in loss:
        summary["loss_ratio"] = _ratio(loss["crag"], loss["rag"]) if loss["rag"] > 0 else None
    (out / "robustness.json").write_text(json.dumps(summary, indent=2) + "\n")
    figure = plots.robustness_curve(points, out / "robustness.png")
    fractions = sorted({f for series in points.values() for f, _, _ in series})
    lines = [
        f"# Robustness: accuracy as answer-bearing passages are removed ({n} questions)",
        "",
        "| system | " + " | ".join(f"drop {f:g}" for f in fractions) + " |",
        "|---|" + "---|" * len(fractions),
    ]
    for system, series in points.items():
        accuracy = {f: a for f, a, _ in series}
        lines.append(f"| {system} | " + " | ".join(_pct(accuracy.get(f)) for f in fractions) + " |")
    if summary.get("loss_ratio") is not None:
        ratio = summary["loss_ratio"]
        lines += [
            "",
            f"With half dropped, CRAG loses {loss['crag'] * 100:.1f} points and RAG {loss['rag'] * 100:.1f}: "
            f"{ratio:.2f}× RAG's loss; target ≤ 0.5×: {'met' if ratio <= 0.5 else 'missed'}.",
        ]
    if figure:
        lines += ["", f"![robustness]({figure.name})"]
    (out / "robustness.md").write_text("\n".join(lines) + "\n")
    return summary


DEFAULT_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)


def robustness(settings: RunSettings, fractions=DEFAULT_FRACTIONS) -> dict:
    """The paper's Fig. 3: one run per drop-gold fraction (DIR/drop-0.50/...), then the curve."""
    fractions = sorted({float(f) for f in fractions})
    for f in fractions:
        if not 0.0 <= f <= 1.0:
            raise ValueError(f"drop-gold fractions must be between 0 and 1, got {f}")
    points: dict[str, list] = {s.name: [] for s in settings.systems}
    n = 0
    for fraction in fractions:
        results = run(replace(settings, drop_gold=fraction, out=Path(settings.out) / f"drop-{fraction:.2f}"))
        for name, series in points.items():
            if name in results:
                series.append((fraction, results[name]["accuracy"], results[name]["accuracy_ci"]))
                n = max(n, results[name]["n"])
    return write_robustness(Path(settings.out), points, n)


def paper_report(folder: Path) -> dict:
    """sweep.json, the plots and paper.md for a finished run: Table 2's rows derived from the forced routes
    (when they ran), the threshold sweep, the actions and the scores of its documents."""
    info = json.loads((folder / "run.json").read_text())
    questions = read_questions(info["questions"])
    store = PredictionStore(folder / PREDICTIONS)
    by_system = system_records(store.records, questions)
    thresholds = info.get("thresholds", {})
    calibrated = tuple(info.get("calibrated_thresholds") or (math.nan, math.nan))
    by_system.update(from_routes(by_system, *thresholds.get("crag", calibrated)))
    results = {name: metrics.summarize(rows) for name, rows in by_system.items()}
    figures = {"actions": plots.action_distribution(results, folder / "actions.png")}
    graded = next((n for n in ("crag", *SYSTEMS) if n in by_system and SYSTEMS[n].uses_graph), None)
    if graded:
        rows = [r for r in by_system[graded] if not r.get("error")]
        figures["scores"] = plots.score_histogram(
            [s for r in rows for s in r["scores"]],
            [h for r in rows for h in r["documents_with_answer"]],
            tuple(thresholds.get(graded, calibrated)),
            folder / "scores.png",
            graded,
        )
    lines = ["# The paper's figures", "", "| system | n | accuracy % | knowledge recall % |", "|---|---|---|---|"]
    lines += [f"| {n} | {r['n']} | {_pct(r['accuracy'])} | {_pct(r['knowledge_recall'])} |" for n, r in results.items()]
    swept = sweep(by_system)
    if swept:
        table, found = swept
        (folder / "sweep.json").write_text(json.dumps(found) + "\n")
        marks = {"calibrated": (calibrated[0], calibrated[1])}
        if "best" in found:
            marks["best"] = (found["best"]["upper"], found["best"]["lower"])
            best = found["best"]
            lines += [
                "",
                f"Threshold sweep: the best pair on these questions is upper {best['upper']:.2f}, lower "
                f"{best['lower']:.2f} ({best['accuracy'] * 100:.1f}%); chosen on the questions it is scored on.",
            ]
        figures["sweep"] = plots.threshold_sweep(table, SWEEP_GRID, folder / "sweep.png", marks)
    if any(name.endswith(DERIVED) for name in results):
        lines += [
            "",
            f"Rows marked '{DERIVED.strip()}' were not run: each question's record is the one of the forced "
            "route its scores and the system's thresholds choose (generation is greedy).",
        ]
        for name, seen in agreement(by_system).items():
            lines.append(f"- {name}: run and derived equally right on {seen['same']} of {seen['n']} questions.")
    lines += [""] + [f"![{name}]({Path(path).name})" for name, path in figures.items() if path]
    (folder / "paper.md").write_text("\n".join(lines) + "\n")
    return results


app = typer.Typer(help="The CRAG paper's figures from crag eval runs.", no_args_is_help=True)


@app.command("report")
def report_cmd(folder: Annotated[Path, typer.Argument(help="A finished `crag eval run` folder.")]) -> None:
    """Table 2's derived rows, the threshold sweep and the plots of a run, into FOLDER/paper.md."""
    paper_report(folder)
    typer.echo(f"report: {folder / 'paper.md'}")


@app.command("robustness")
def robustness_cmd(
    questions: Annotated[Path, typer.Option("--questions")],
    kb: Annotated[Path, typer.Option("--kb")],
    web: Annotated[Path, typer.Option("--web")],
    out: Annotated[Path, typer.Option("--out")],
    systems: Annotated[str, typer.Option("--systems")] = "rag,crag",
    fractions: Annotated[
        str, typer.Option("--fractions", help="Comma-separated drop-gold fractions.")
    ] = "0,0.25,0.5,0.75,1",
    limit: Annotated[int | None, typer.Option("--limit")] = None,
    chat_model: Annotated[str, typer.Option("--chat-model")] = "local",
) -> None:
    """Fig. 3: one run per --drop-gold fraction, then the curve (robustness.md, robustness.png)."""
    values = [float(f) for f in fractions.split(",") if f.strip()]
    settings = RunSettings(
        questions=questions, kb=kb, web=web, out=out, systems=parse_systems(systems), limit=limit, chat_model=chat_model
    )
    summary = robustness(settings, values)
    for system, series in summary["points"].items():
        typer.echo(f"{system:<8} " + "  ".join(f"{p['drop_gold']:g}: {p['accuracy'] * 100:.1f}%" for p in series))
    typer.echo(f"report: {out / 'robustness.md'}")
