"""One table of `crag eval run` folders side by side (`make eval-models`): per folder and system, the reader,
accuracy (and its drafts' accuracy, before the answer path's rules), abstention on answerable and
unanswerable questions, citation precision, strip recall, seconds per question and the run's peak memory.

    python -m lab.benchmarks.models_table artifacts/eval/models/*/
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from crag.evaluation.runner import PREDICTIONS, PredictionStore


def rows_of(folder: Path) -> list[dict]:
    results = json.loads((folder / "results.json").read_text())
    info = json.loads((folder / "run.json").read_text())
    records = list(PredictionStore(folder / PREDICTIONS).records.values())
    rows = []
    for system, r in results.items():
        answerable = [p for p in records if p["system"] == system and p.get("answerable", True) and not p.get("error")]
        n = max(len(answerable), 1)
        rows.append(
            {
                "set": folder.name,
                "reader": info.get("chat_model"),
                "system": system,
                "n": r["n"],
                "accuracy": r["accuracy"],
                "any_case": r["accuracy_insensitive"],
                "drafts_any_case": sum(bool(p.get("draft_correct")) for p in answerable) / n,
                "abstained_answerable": r.get("abstention_answerable"),
                "declined_unanswerable": r.get("abstention_unanswerable"),
                "citation_precision": r.get("citation_precision"),
                "strip_recall": r.get("strip_recall"),
                "p50": r["latency"].get("p50"),
                "p95": r["latency"].get("p95"),
                "peak_mib": info.get("peak_rss_mib"),
            }
        )
    return rows


def pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = [row for folder in args.folders if (folder / "results.json").exists() for row in rows_of(folder)]
    print(
        "| set | reader | system | n | accuracy % | any case % | drafts, any case % | abstained, answerable % | "
        "declined, unanswerable % | citation precision % | strip recall % | s/question p50 / p95 | peak MiB |"
    )
    print("|---" * 13 + "|")
    for r in rows:
        print(
            f"| {r['set']} | {r['reader']} | {r['system']} | {r['n']} | {pct(r['accuracy'])} | {pct(r['any_case'])} | "
            f"{pct(r['drafts_any_case'])} | {pct(r['abstained_answerable'])} | {pct(r['declined_unanswerable'])} | "
            f"{pct(r['citation_precision'])} | {pct(r['strip_recall'])} | {r['p50']:.1f} / {r['p95']:.1f} | "
            f"{r['peak_mib'] or 0:,.0f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
