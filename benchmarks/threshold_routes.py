"""CRAG's answers at any (upper, lower) thresholds, without answering again: accuracy, abstention,
knowledge recall, support and the route mix, from the three forced-route runs of `crag eval run`.

A threshold only chooses which route a question takes, and each route's answer is deterministic
(greedy generation, a deterministic local web), so a question's record at some thresholds is the
one its route gave when forced (`crag.experiments.report.from_routes` does the same for Table 2).
The forced runs cost three answers per question once; every threshold pair after that is free:

    crag eval run --questions artifacts/eval/docs-inputs/questions-with-unanswerable.jsonl \\
        --kb artifacts/eval/docs-inputs/kb.jsonl --web artifacts/eval/docs-inputs/web.jsonl \\
        --chunk-size 1000 --chunk-overlap 100 --out artifacts/eval/sweep-docs \\
        --systems route_correct,route_incorrect,route_ambiguous
    python benchmarks/threshold_routes.py --run artifacts/eval/sweep-docs \\
        --pair 0.625,-0.385 --pair 0.625,-0.8 --pair 0.625,-0.94
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from crag.core.thresholds import Thresholds
from crag.experiments.answer_metrics import summarize
from crag.methods.routing import decide_action

ROUTES = ("correct", "incorrect", "ambiguous")


def forced(run: Path) -> tuple[dict[str, dict[str, dict]], list[str]]:
    """{route: {qid: record}} of a run's forced-route systems, and the questions all three answered."""
    records: dict[str, dict[str, dict]] = defaultdict(dict)
    with (run / "predictions.jsonl").open() as lines:
        for line in lines:
            record = json.loads(line)
            route = record["system"].removeprefix("route_")
            if route in ROUTES and not record.get("error"):
                records[route][record["qid"]] = record
    missing = [route for route in ROUTES if not records[route]]
    if missing:
        raise SystemExit(f"{run} has no records of route_{', route_'.join(missing)}: run the three forced routes")
    qids = [q for q in records["correct"] if all(q in records[route] for route in ROUTES)]
    return records, qids


def at(records: dict[str, dict[str, dict]], qids: list[str], thresholds: Thresholds) -> dict:
    """The figures CRAG would have had at `thresholds` (its `summarize` row)."""
    derived = []
    for q in qids:
        action = decide_action(records["correct"][q]["scores"], thresholds)
        derived.append({**records[action][q], "action": action})
    return summarize(derived, resamples=200)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="An eval folder with the three forced routes.")
    parser.add_argument("--pair", action="append", required=True, help="upper,lower (repeatable).")
    parser.add_argument(
        "--questions", type=Path, help="Only the run's questions that are also in this file (e.g. a rebuilt set)."
    )
    parser.add_argument("--json", type=Path, help="Also write the figures here.")
    args = parser.parse_args()
    records, qids = forced(args.run)
    if args.questions:
        keep = {str(q["id"]) for q in map(json.loads, args.questions.read_text().splitlines()) if q}
        qids = [q for q in qids if str(q) in keep]
    print(f"{args.run}: {len(qids)} questions")
    print(
        "upper   lower  | accuracy | abstained: answerable, unanswerable, answer in knowledge | knowledge recall"
        " | supported | citation precision | C / A / I (answerable) | knowledge tokens"
    )
    rows = []
    for text in args.pair:
        upper, lower = (float(v) for v in text.split(","))
        s = at(records, qids, Thresholds(upper=upper, lower=lower))
        actions = s["actions"]
        print(
            f"{upper:+.3f} {lower:+.3f} | {100 * s['accuracy']:5.1f} | {100 * s['abstention_answerable']:5.1f} "
            f"{100 * s['abstention_unanswerable']:5.1f} {100 * s['abstention_with_knowledge']:5.1f} | "
            f"{100 * s['knowledge_recall']:5.1f} | {100 * s['supported']:5.1f} | {100 * s['citation_precision']:5.1f} | "
            f"{actions.get('correct', 0)} / {actions.get('ambiguous', 0)} / {actions.get('incorrect', 0)} | "
            f"{s['knowledge_tokens']:.0f}"
        )
        rows.append({"upper": upper, "lower": lower, **s})
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
