"""Systems of several `crag eval run` folders, on the questions every one of them has answered so far.

`crag eval run` writes `report.md` and `results.json` when a run is complete. A long run (the documentation
set at k 10 takes hours on two cores) can be read before that: its `predictions.jsonl` is appended one
record at a time, question by question, each with every system. This reads the records only (never
rewriting the file, so it is safe beside a running job; a torn last line is skipped), keeps the
questions that every given system has answered, and prints, per system, accuracy on the answerable
ones, declines of the unanswerable ones, knowledge recall, strip recall (of the questions whose
retrieved documents hold an answer, how many kept one), knowledge tokens and seconds per question
(p50), then the first system minus each other on the answerable ones with a paired bootstrap interval.

    python -m lab.experiments.paired_runs artifacts/eval/models/local-docs-k10:crag \\
        artifacts/eval/models/local-docs-k10:rag artifacts/eval/models/local-docs-v36:crag \\
        artifacts/eval/models/local-docs-rag-v36:rag
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from crag.evaluation.answer_metrics import paired_difference, retrieved_answer
from crag.evaluation.runner import PREDICTIONS


def records(folder: Path, system: str) -> dict[str, dict]:
    """{qid: record} of one system, without errors; a torn last line (a job still writing) is skipped."""
    out: dict[str, dict] = {}
    for line in (folder / PREDICTIONS).read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("system") == system and not record.get("error"):
            out[record["qid"]] = record
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="FOLDER:SYSTEM, two or more; the first is compared with the rest")
    args = parser.parse_args()
    specs = [(Path(s.rsplit(":", 1)[0]), s.rsplit(":", 1)[1]) for s in args.runs]
    runs = {f"{folder.name}:{system}": records(folder, system) for folder, system in specs}
    common = sorted(set.intersection(*(set(r) for r in runs.values())))
    first = next(iter(runs.values()))
    answerable = [q for q in common if first[q].get("answerable", True)]
    unanswerable = [q for q in common if q not in answerable]
    print(f"{len(answerable)} answerable and {len(unanswerable)} unanswerable questions answered by every run\n")
    print(
        "| run:system | right, answerable | declined, unanswerable | knowledge recall | strip recall "
        "| knowledge tokens p50 | s/question p50 |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, run in runs.items():
        right = sum(bool(run[q]["correct"]) for q in answerable)
        declined = sum(bool(run[q]["abstained"]) for q in unanswerable)
        recall = sum(bool(run[q]["knowledge_recall"]) for q in answerable)
        holding = [q for q in answerable if retrieved_answer(run[q])]
        kept = sum(bool(run[q]["knowledge_recall"]) for q in holding)
        tokens = np.median([run[q]["knowledge_tokens"] for q in answerable]) if answerable else float("nan")
        seconds = np.median([run[q]["wall_s"] for q in common]) if common else float("nan")
        print(
            f"| {name} | {right} ({100 * right / max(len(answerable), 1):.1f}%) | {declined} of {len(unanswerable)} "
            f"| {recall} | {kept} of {len(holding)} | {tokens:.0f} | {seconds:.1f} |"
        )
    print()
    names = list(runs)
    for other in names[1:]:
        d = paired_difference(
            [float(runs[names[0]][q]["correct"]) for q in answerable],
            [float(runs[other][q]["correct"]) for q in answerable],
        )
        gained = sum(runs[names[0]][q]["correct"] and not runs[other][q]["correct"] for q in answerable)
        lost = sum(runs[other][q]["correct"] and not runs[names[0]][q]["correct"] for q in answerable)
        low, high = d["ci"]
        print(
            f"{names[0]} − {other}, answerable: {100 * d['mean']:+.1f} points [{100 * low:+.1f}, {100 * high:+.1f}], "
            f"{gained} gained, {lost} lost"
        )


if __name__ == "__main__":
    main()
