"""results.json, report.md and the plots of a run, from its prediction records.

Only the records of the run's current questions count (a resumed run with a smaller `--limit`
reports on those), and every system with predictions in the folder is reported, so ablations run
later into the same folder join the table.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from crag.evaluation import answer_metrics as metrics
from crag.evaluation import plots
from crag.evaluation.inputs import Question
from crag.evaluation.systems import ROUTES, SYSTEMS
from crag.knowledge.routing import decide_action
from crag.thresholds import Thresholds

SWEEP_GRID = np.round(np.linspace(-1.0, 1.0, 41), 3)
# the systems that differ from CRAG only in their thresholds, which the forced routes can stand in for
THRESHOLD_SYSTEMS = ("crag", "crag_no_correct", "crag_no_incorrect", "crag_no_ambiguous")
DERIVED = " (routes)"
TARGETS = {"accuracy_points": 5.0, "token_ratio": 0.5, "wall_ratio": 1.3}


def _order(names) -> list[str]:
    known = [n for n in SYSTEMS if n in names]
    return known + sorted(n for n in names if n not in SYSTEMS)


def system_records(records: dict, questions: list[Question]) -> dict[str, list[dict]]:
    """The records of each system, in question order, for the current questions only."""
    by_system: dict[str, list[dict]] = {}
    for name in _order({system for system, _ in records}):
        rows = [records[(name, q.qid)] for q in questions if (name, q.qid) in records]
        if rows:
            by_system[name] = rows
    return by_system


def comparison(
    by_system: dict[str, list[dict]], results: dict, a: str = "crag", b: str = "rag", resamples: int = 2000
) -> dict | None:
    """CRAG against RAG on the questions both answered: the issue's targets, met or not."""
    if a not in by_system or b not in by_system:
        return None
    mine = {r["qid"]: r for r in by_system[a]}
    pairs = [(mine[r["qid"]], r) for r in by_system[b] if r["qid"] in mine and r.get("answerable", True)]
    diff = metrics.paired_difference(
        [float(x["correct"]) for x, _ in pairs], [float(y["correct"]) for _, y in pairs], resamples=resamples
    )
    tokens = _ratio(results[a]["knowledge_tokens"], results[b]["knowledge_tokens"])
    wall = _ratio(sum(x["wall_s"] for x, _ in pairs), sum(y["wall_s"] for _, y in pairs))
    return {
        "n": len(pairs),
        "accuracy_points": diff["mean"] * 100,
        "accuracy_points_ci": [c * 100 for c in diff["ci"]],
        "token_ratio": tokens,
        "wall_ratio": wall,
        "met": {
            "accuracy_points": diff["mean"] * 100 >= TARGETS["accuracy_points"],
            "token_ratio": tokens <= TARGETS["token_ratio"],
            "wall_ratio": wall <= TARGETS["wall_ratio"],
        },
    }


def _ratio(x: float, y: float) -> float:
    return x / y if y else math.inf


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
    table = metrics.threshold_sweep(outcomes, scores, SWEEP_GRID)
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


def write_outputs(
    out: Path, records: dict, questions: list[Question], run_info: dict, *, resamples: int = 2000
) -> dict:
    """Write results.json, report.md and the PNG plots into `out`; returns the results."""
    out = Path(out)
    by_system = system_records(records, questions)
    thresholds = run_info.get("thresholds", {})
    calibrated = tuple(run_info.get("calibrated_thresholds") or (math.nan, math.nan))
    by_system.update(from_routes(by_system, *thresholds.get("crag", calibrated)))
    results = {name: metrics.summarize(rows, resamples=resamples) for name, rows in by_system.items()}
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")

    figures = {"actions": plots.action_distribution(results, out / "actions.png")}
    graded = next((n for n in ("crag", *SYSTEMS) if n in by_system and SYSTEMS[n].uses_graph), None)
    if graded:
        rows = [r for r in by_system[graded] if not r.get("error")]
        figures["scores"] = plots.score_histogram(
            [s for r in rows for s in r["scores"]],
            [h for r in rows for h in r["documents_with_answer"]],
            tuple(thresholds.get(graded, calibrated)),
            out / "scores.png",
            graded,
        )
    swept = sweep(by_system)
    if swept:
        table, info = swept
        (out / "sweep.json").write_text(json.dumps(info) + "\n")
        marks = {"calibrated": (calibrated[0], calibrated[1])}
        if "best" in info:
            marks["best"] = (info["best"]["upper"], info["best"]["lower"])
        figures["sweep"] = plots.threshold_sweep(table, SWEEP_GRID, out / "sweep.png", marks)
    versus = comparison(by_system, results, resamples=resamples)
    (out / "report.md").write_text(
        markdown(
            results,
            run_info,
            versus,
            swept[1] if swept else None,
            {k: v for k, v in figures.items() if v},
            agreement(by_system),
        )
    )
    return results


def _pct(x: float) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x * 100:.1f}"


def _ci(ci: list[float]) -> str:
    return f"[{_pct(ci[0])}, {_pct(ci[1])}]"


def markdown(
    results: dict,
    run_info: dict,
    versus: dict | None,
    sweep_info: dict | None,
    figures: dict,
    agreed: dict | None = None,
) -> str:
    """The report: settings, the results table, stage latencies, the CRAG/RAG targets and the plots."""
    lines = [f"# Evaluation: {Path(str(run_info.get('questions', ''))).name}", ""]
    lines.append(
        f"Knowledge base: {run_info.get('kb_passages')} passages ({run_info.get('kb_dropped', 0)} answer-bearing ones "
        f"dropped, --drop-gold {run_info.get('drop_gold')}), {run_info.get('kb_chunks')} chunks; k = {run_info.get('k')} "
        f"documents; generator {run_info.get('chat_model')}; evaluator {run_info.get('evaluator')} "
        f"(calibrated upper/lower {', '.join(f'{t:.3g}' for t in run_info.get('calibrated_thresholds', []))})."
    )
    lines += [
        "",
        "Accuracy is the paper's (an answer string occurs in the prediction, case-sensitive) and, beside it, "
        "case-insensitive; intervals are 95% bootstrap. Knowledge recall: an answer occurs (whole word, any case) "
        "in the knowledge given to the generator. Tokens are words and punctuation marks.",
        "",
    ]
    lines.append(
        "| system | n | accuracy % | 95% CI | any-case % | 95% CI | knowledge recall % | knowledge tokens | "
        "correct / ambiguous / incorrect | evaluator calls / q | s / question | p50 / p95 s | wall s | errors |"
    )
    lines.append("|---|" + "---|" * 13)
    for name, r in results.items():
        actions = " / ".join(str(r["actions"].get(a, 0)) for a in metrics.ACTIONS) if r["actions"] else "–"
        lines.append(
            f"| {name} | {r['n']} | {_pct(r['accuracy'])} | {_ci(r['accuracy_ci'])} | {_pct(r['accuracy_insensitive'])} | "
            f"{_ci(r['accuracy_ci_insensitive'])} | {_pct(r['knowledge_recall'])} | {r['knowledge_tokens']:.0f} | {actions} | "
            f"{r['evaluator_calls']:.1f} | {r['latency']['per_question']:.2f} | "
            f"{r['latency'].get('p50', 0.0):.2f} / {r['latency'].get('p95', 0.0):.2f} | {r['wall_s']:.0f} | {r['errors']} |"
        )
    lines += [
        "",
        "Honest answers: abstention on the questions the sources cannot answer (target ≥ 90%) and on those they "
        "can (target ≤ 10%): all answerable ones, and those whose knowledge (what the generator was given) holds "
        "an answer; withheld correct (answerable questions whose draft held an answer but no strip supported it); "
        "strip recall (answerable questions whose retrieved documents contain an answer and "
        "whose knowledge still does); supported (answerable questions answered with at least one citation, every "
        "citation being a strip that supports its sentence); citation precision (citations pointing at a strip "
        "that contains an answer); quoted (answerable questions answered by quoting a strip because the model's "
        "own answer was unsupported or declined) and how many of those quotes hold an "
        "answer; looping (drafts that repeat a 4-word run or echo the question):",
        "",
        "| system | unanswerable n | abstained, unanswerable % | abstained, answerable % | abstained, answer in "
        "knowledge % | withheld correct % | strip recall % | supported % | citation precision % | quoted % | "
        "quotes with an answer % | looping % |",
        "|---|" + "---|" * 11,
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r['n_unanswerable']} | {_pct(r['abstention_unanswerable'])} | "
            f"{_pct(r['abstention_answerable'])} | {_pct(r.get('abstention_with_knowledge', 0.0))} | "
            f"{_pct(r.get('withheld_correct', 0.0))} | {_pct(r['strip_recall'])} | {_pct(r['supported'])} | "
            f"{_pct(r['citation_precision'])} | {_pct(r.get('quoted', 0.0))} | {_pct(r.get('quotes_correct', 0.0))} | "
            f"{_pct(r.get('degenerate', 0.0))} |"
        )
    traced = {name: r for name, r in results.items() if r.get("abstained_by_cause")}
    if traced:
        lines += [
            "",
            "Where the abstentions on answerable questions come from, each as a share of those questions (they add "
            "up to the abstention on them): the answer was in the knowledge and the model declined or drifted, or "
            "its draft was withheld; the retrieved documents held it but the grade rejected them all (Incorrect) "
            "and the web had nothing; they held it but refinement kept other strips; nothing retrieved or searched "
            "held it, where declining is right; and the share of answerable questions whose retrieved documents or "
            "web results hold an answer at all (no honest system abstains on fewer than the rest):",
            "",
            "| system | answer in knowledge % | rejected by the grade % | lost in refinement % | not retrieved % | "
            "answer reachable % |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {name} | "
            + " | ".join(_pct(r["abstained_by_cause"].get(cause, 0.0)) for cause in metrics.ABSTENTION_CAUSES)
            + f" | {_pct(r.get('answer_reachable', float('nan')))} |"
            for name, r in traced.items()
        ]
    lines += [
        "",
        "Mean seconds per question in each stage (search includes the query rewrite, shown apart), and the "
        "generator's calls and tokens per question (prompt and output, as the model counts them; unlike "
        "seconds they do not depend on what else the CPU is doing). An Ambiguous run refines and searches "
        "in parallel, so its stages can add up to more than its total:",
        "",
        "| system | "
        + " | ".join(metrics.STAGES)
        + " | rewrite | total | model calls | prompt tokens | output tokens |",
        "|---|" + "---|" * (len(metrics.STAGES) + 5),
    ]
    for name, r in results.items():
        stages = " | ".join(f"{r['latency'][s]:.3f}" for s in metrics.STAGES)
        lines.append(
            f"| {name} | {stages} | {r['latency']['rewrite']:.3f} | {r['latency']['per_question']:.3f} | "
            f"{r['llm_calls']:.2f} | {r['llm_prompt_tokens']:.0f} | {r['llm_completion_tokens']:.0f} |"
        )
    by_action = [(name, r["accuracy_by_action"]) for name, r in results.items() if r.get("accuracy_by_action")]
    if by_action:
        lines += [
            "",
            "Accuracy % by the action taken (questions in brackets):",
            "",
            "| system | " + " | ".join(metrics.ACTIONS) + " |",
            "|---|" + "---|" * len(metrics.ACTIONS),
        ]
        for name, accuracy in by_action:
            counts = results[name]["actions"]
            cells = [f"{_pct(accuracy[a])} ({counts[a]})" if a in accuracy else "–" for a in metrics.ACTIONS]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if versus:
        verdict = {True: "met", False: "missed"}
        lines += [
            "",
            f"## CRAG against RAG ({versus['n']} questions)",
            "",
            f"- accuracy: {versus['accuracy_points']:+.1f} points (paired 95% CI "
            f"[{versus['accuracy_points_ci'][0]:+.1f}, {versus['accuracy_points_ci'][1]:+.1f}]); target ≥ +5: "
            f"{verdict[versus['met']['accuracy_points']]}",
            f"- knowledge tokens: {versus['token_ratio']:.2f}× RAG's; target ≤ 0.5×: {verdict[versus['met']['token_ratio']]}",
            f"- wall time: {versus['wall_ratio']:.2f}× RAG's; target ≤ 1.3×: {verdict[versus['met']['wall_ratio']]}",
        ]
    if any(name.endswith(DERIVED) for name in results):
        lines += [
            "",
            f"Rows marked '{DERIVED.strip()}' were not run: each question's record is the one of the "
            "forced route (route_correct, route_ambiguous, route_incorrect) its scores and the system's "
            "thresholds choose. Generation is greedy, so that is the answer the system would give; seconds are "
            "those of the forced run.",
        ]
        for name, seen in (agreed or {}).items():
            lines.append(f"- {name}: run and derived equally right on {seen['same']} of {seen['n']} questions.")
    if sweep_info and "best" in sweep_info:
        best = sweep_info["best"]
        lines += [
            "",
            f"Threshold sweep: the best pair on these questions is upper {best['upper']:.2f}, lower "
            f"{best['lower']:.2f} ({best['accuracy'] * 100:.1f}%); choosing thresholds on the questions they are "
            "scored on is optimistic.",
        ]
    if figures:
        lines += [""] + [f"![{name}]({Path(path).name})" for name, path in figures.items()]
    return "\n".join(lines) + "\n"


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


__all__ = ["DERIVED", "from_routes"]  # what callers outside the package use
