"""The documentation corpora's table for the results page: per corpus, each system beside RAG.

Reads `crag eval run` folders (complete or still running: `paired_runs.records` skips a torn line) under
ROOT/CORPUS/ (any sub-folders too, so runs made from different checkouts can sit side by side), keeps the
questions every listed system has answered on that corpus, and prints one markdown table: accuracy on the
answerable questions with the paired difference to RAG and its 95% bootstrap interval, unanswerable
declined, knowledge recall, strip recall (of the questions whose retrieved documents hold an answer),
knowledge tokens p50, seconds per question p50 and its ratio to RAG's; then each system's mean over the
corpora (the mean of per-corpus accuracies, its difference to RAG with an interval from resampling
within each corpus).

    python -m lab.benchmarks.corpora_table --systems rag,crag,crag_budget_900 [--root artifacts/eval/corpora]
"""

from __future__ import annotations

import argparse
import glob
from pathlib import Path

import numpy as np

from crag.evaluation.answer_metrics import retrieved_answer
from crag.evaluation.runner import PREDICTIONS
from lab.experiments.paired_runs import records

BASELINE = "rag"


def corpus_runs(folder: Path, systems: list[str]) -> dict[str, dict[str, dict]]:
    """{system: {qid: record}} for one corpus, from every run folder under it (the later folder wins a repeat)."""
    found: dict[str, dict[str, dict]] = {s: {} for s in systems}
    # glob, not Path.rglob: a run folder may be a symbolic link to where a job wrote it
    for predictions in sorted(Path(p) for p in glob.glob(str(folder / "**" / PREDICTIONS), recursive=True)):
        for system in systems:
            found[system].update(records(predictions.parent, system))
    return found


def row(runs: dict[str, dict], system: str, answerable: list[str], unanswerable: list[str], rng) -> dict:
    mine, base = runs[system], runs[BASELINE]
    right = np.array([bool(mine[q]["correct"]) for q in answerable], dtype=float)
    diff = right - np.array([bool(base[q]["correct"]) for q in answerable], dtype=float)
    draws = rng.integers(0, len(diff), (2000, len(diff)))
    holding = [q for q in answerable if retrieved_answer(base[q])]
    seconds = np.median([mine[q]["wall_s"] for q in answerable + unanswerable])
    return {
        "accuracy": right.mean(),
        "diff": diff.mean(),
        "ci": np.percentile(diff[draws].mean(axis=1), [2.5, 97.5]),
        "diff_samples": diff[draws].mean(axis=1),
        "declined": (sum(bool(mine[q]["abstained"]) for q in unanswerable), len(unanswerable)),
        "knowledge": np.mean([bool(mine[q]["knowledge_recall"]) for q in answerable]),
        "strips": (sum(bool(mine[q]["knowledge_recall"]) for q in holding), len(holding)),
        "tokens": np.median([mine[q]["knowledge_tokens"] for q in answerable]),
        "seconds": seconds,
        "ratio": seconds / np.median([base[q]["wall_s"] for q in answerable + unanswerable]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", default="rag,crag", help="comma-separated; rag is always the baseline")
    parser.add_argument("--root", type=Path, default=Path("artifacts/eval/corpora"))
    parser.add_argument("--corpora", default="", help="comma-separated (default: every folder under --root)")
    args = parser.parse_args()
    systems = list(dict.fromkeys([BASELINE, *args.systems.split(",")]))
    names = args.corpora.split(",") if args.corpora else sorted(p.name for p in args.root.iterdir() if p.is_dir())
    rng = np.random.default_rng(0)
    print(
        "| corpus | system | n | accuracy | − RAG [95% interval] | unanswerable declined | knowledge recall "
        "| strip recall | knowledge tokens p50 | s/question p50 (× RAG) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows: dict[str, list[dict]] = {s: [] for s in systems}
    for name in names:
        runs = corpus_runs(args.root / name, systems)
        common = sorted(set.intersection(*(set(r) for r in runs.values())))
        if not common:
            print(f"| {name} | (no question answered by every system yet) ||||||||")
            continue
        answerable = [q for q in common if runs[BASELINE][q].get("answerable", True)]
        unanswerable = [q for q in common if q not in answerable]
        for system in systems:
            r = row(runs, system, answerable, unanswerable, rng)
            rows[system].append(r)
            versus = (
                ""
                if system == BASELINE
                else f"{100 * r['diff']:+.1f} [{100 * r['ci'][0]:+.1f}, {100 * r['ci'][1]:+.1f}]"
            )
            print(
                f"| {name} | {system} | {len(answerable)} + {len(unanswerable)} | {100 * r['accuracy']:.1f}% | {versus} "
                f"| {r['declined'][0]} of {r['declined'][1]} | {100 * r['knowledge']:.1f}% "
                f"| {r['strips'][0]} of {r['strips'][1]} | {r['tokens']:.0f} | {r['seconds']:.1f} ({r['ratio']:.2f}×) |"
            )
    print()
    for system, found in rows.items():
        if not found:
            continue
        mean = np.mean([r["accuracy"] for r in found])
        line = f"{system}: mean accuracy over {len(found)} corpora {100 * mean:.1f}%"
        if system != BASELINE:
            samples = np.mean([r["diff_samples"] for r in found], axis=0)
            low, high = np.percentile(samples, [2.5, 97.5])
            line += f", − RAG {100 * np.mean([r['diff'] for r in found]):+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"
        declined = sum(r["declined"][0] for r in found), sum(r["declined"][1] for r in found)
        print(f"{line}; unanswerable declined {declined[0]} of {declined[1]}")


if __name__ == "__main__":
    main()
