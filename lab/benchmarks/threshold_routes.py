"""CRAG's answers at any (upper, lower) thresholds, without answering again: accuracy, abstention,
knowledge recall, support and the route mix, from the three forced-route runs of `crag eval run`.

A threshold only chooses which route a question takes, and each route's answer is deterministic
(greedy generation, a deterministic local web), so a question's record at some thresholds is the
one its route gave when forced (`crag.evaluation.report.from_routes`, which Table 2 is made with).
The forced runs cost three answers per question once; every threshold pair after that is free:

    crag eval run --questions artifacts/eval/docs-inputs/questions-with-unanswerable.jsonl \\
        --kb artifacts/eval/docs-inputs/kb.jsonl --web artifacts/eval/docs-inputs/web.jsonl \\
        --chunk-size 1000 --chunk-overlap 100 --out artifacts/eval/sweep-docs \\
        --systems route_correct,route_incorrect,route_ambiguous
    python -m lab.benchmarks.threshold_routes --run artifacts/eval/sweep-docs \\
        --pair 0.625,-0.385 --pair 0.625,-0.8 --pair 0.625,-0.94
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from crag.evaluation.answer_metrics import summarize
from lab.paper import DERIVED, from_routes


def by_system(run: Path, keep: set[str] | None = None) -> dict[str, list[dict]]:
    """A run's prediction records by system (only the questions in `keep`, when given)."""
    found: dict[str, list[dict]] = defaultdict(list)
    with (run / "predictions.jsonl").open() as lines:
        for record in map(json.loads, lines):
            if keep is None or str(record["qid"]) in keep:
                found[record["system"]].append(record)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="An eval folder with the three forced routes.")
    parser.add_argument("--pair", action="append", required=True, help="upper,lower (repeatable).")
    parser.add_argument(
        "--questions", type=Path, help="Only the run's questions that are also in this file (e.g. a rebuilt set)."
    )
    parser.add_argument("--json", type=Path, help="Also write the figures here.")
    args = parser.parse_args()
    keep = None
    if args.questions:
        keep = {str(q["id"]) for q in map(json.loads, args.questions.read_text().splitlines()) if q}
    records = by_system(args.run, keep)
    answered = from_routes(records, 0.0, 0.0)  # {} unless all three forced routes have run
    if not answered:
        raise SystemExit(f"{args.run} lacks route_correct, route_incorrect or route_ambiguous: run the three")
    print(f"{args.run}: {len(answered['crag' + DERIVED])} questions")
    print(
        "upper   lower  | accuracy | abstained: answerable, unanswerable, answer in knowledge | knowledge recall"
        " | supported | citation precision | C / A / I (answerable) | knowledge tokens"
    )
    rows = []
    for text in args.pair:
        upper, lower = (float(v) for v in text.split(","))
        derived = from_routes(records, upper, lower)["crag" + DERIVED]  # Thresholds checks the pair
        s = summarize(derived, resamples=200)
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
