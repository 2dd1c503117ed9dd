"""The evaluator on ONNX Runtime against torch: the same scores, and how much sooner.

Scores every pair of every validation slice (with and without titles) with the shipped evaluator
on both engines (`crag.evaluator.onnx_engine`) and prints, per slice, the largest difference
between their scores, ROC-AUC on each, and how often the two put a pair on different sides of a
threshold; then pairs per second over all slices, and the latency of one graded set (10 documents
of ~100 words, warm, the engines taking turns) as `make bench-evaluator` measures it. Nothing is
cached: both engines score every pair here.

    python -m lab.benchmarks.evaluator_engines --slices artifacts/evaluator-slices [--only docs,bio] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from evaluator_benchmark import latency_ms, slice_pairs, texts

from crag.evaluator.pairs import read_pairs
from crag.evaluator.runnable import get_scorer
from crag.evaluator.training.evaluation import classification_metrics

ENGINES = ("onnx", "torch")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slices", type=Path, default=Path("artifacts/evaluator-slices"))
    parser.add_argument("--only", help="comma-separated slices (default: all in the manifest)")
    parser.add_argument("--repeats", type=int, default=30, help="timed calls per engine for the latency")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    import transformers

    transformers.logging.set_verbosity_error()
    manifest = json.loads((args.slices / "manifest.json").read_text())
    names = args.only.split(",") if args.only else list(manifest["slices"])
    scorers = {engine: get_scorer(None, engine=engine) for engine in ENGINES}  # "onnx" raises if it cannot load
    thresholds = scorers["torch"].thresholds
    seconds = dict.fromkeys(ENGINES, 0.0)
    rows, total, flipped = [], 0, 0
    print(
        "| slice | titles | pairs | max abs difference | ROC-AUC onnx | ROC-AUC torch | pairs on another side of a threshold |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in names:
        for titles in (True, False):
            pairs = slice_pairs(args.slices, name, titles)
            labels = [p.label for p in pairs]
            batch = [(p.question, t) for p, t in zip(pairs, texts(pairs, titles))]
            groups = [p.group for p in pairs]
            scores = {}
            for engine, scorer in scorers.items():
                started = time.perf_counter()
                scores[engine] = scorer.score(batch, batch_size=64, groups=groups)
                seconds[engine] += time.perf_counter() - started
            a, b = scores["onnx"], scores["torch"]
            gap = max(abs(x - y) for x, y in zip(a, b))
            sides = sum((x >= t) != (y >= t) for x, y in zip(a, b) for t in (thresholds.upper, thresholds.lower))
            roc = {e: classification_metrics(labels, scores[e], thresholds.upper)["roc_auc"] for e in ENGINES}
            rows.append(
                {
                    "slice": name,
                    "titles": titles,
                    "pairs": len(pairs),
                    "max_abs_difference": gap,
                    "roc_auc": roc,
                    "threshold_flips": sides,
                }
            )
            total += len(pairs)
            flipped += sides
            print(
                f"| {name} | {'yes' if titles else 'no'} | {len(pairs)} | {gap:.1e} | {roc['onnx']:.4f} "
                f"| {roc['torch']:.4f} | {sides} |"
            )
    speed = {e: total / seconds[e] for e in ENGINES}
    print("\npairs per second (batches of 64): " + ", ".join(f"{e} {v:.0f}" for e, v in speed.items()))
    latency = latency_ms(None, read_pairs(args.slices / "popqa-retrieved.jsonl"), repeats=args.repeats)
    print(
        f"{latency['docs']} documents of ~100 words: "
        + "; ".join(f"{e} p50 {latency[e]['p50_ms']:.1f} ms, p95 {latency[e]['p95_ms']:.1f} ms" for e in ENGINES)
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {"slices": rows, "pairs_per_s": speed, "latency": latency, "threshold_flips": flipped, "pairs": total},
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
