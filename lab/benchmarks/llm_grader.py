"""The LangGraph tutorial's grader as a baseline: the chat model asked "is this document relevant? yes/no".

LangGraph's CRAG tutorial (examples/rag/langgraph_crag.ipynb) grades each retrieved document by asking
the chat model, with a system prompt, for a binary 'yes' or 'no'. Its probability of "yes" makes it a
scorer like any other: here the default local model reads the tutorial's prompt through its own chat
template, and the score is P(yes) / (P(yes) + P(no)) from the logits of its first reply token (the
spellings "yes", "Yes", "no", "No" summed), mapped to [-1, 1]. Reported beside the shipped evaluator and
zero-shot cosine on the same pairs, with intervals over resampled questions, and its seconds per
document (one prompt evaluation each, as the tutorial makes one call per document).

    python -m lab.benchmarks.llm_grader --only docs --questions 40      # a seeded sample of the slice's questions
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from evaluator_benchmark import cosine, slice_pairs, texts

from crag.evaluator.runnable import get_scorer
from crag.evaluator.training.evaluation import roc_auc_intervals
from crag.models.gguf import model_file
from lab.evaluator.llm_teacher import YesNoGrader


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slices", type=Path, default=Path("artifacts/evaluator-slices"))
    parser.add_argument("--only", default="docs", help="comma-separated slices")
    parser.add_argument("--questions", type=int, default=40, help="a seeded sample of each slice's questions")
    parser.add_argument("--model", default="local")
    parser.add_argument("--titles", action="store_true", help="score passages with their titles")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    grader = YesNoGrader(model_file(args.model), reuse_prefix=False)  # each document its whole prompt, as the tutorial
    shipped = get_scorer()
    results = {}
    for name in args.only.split(","):
        pairs = slice_pairs(args.slices, name, args.titles)
        groups = sorted({p.group or p.question for p in pairs})
        picked = set(random.Random(0).sample(groups, min(args.questions, len(groups))))
        pairs = [p for p in pairs if (p.group or p.question) in picked]
        passages = texts(pairs, args.titles)
        seconds, llm = [], []
        for pair, passage in zip(pairs, passages):
            clock = time.perf_counter()
            llm.append(grader.score(pair.question, passage))
            seconds.append(time.perf_counter() - clock)
        clock = time.perf_counter()
        evaluator = [float(s) for s in shipped.score([(p.question, t) for p, t in zip(pairs, passages)])]
        evaluator_seconds = (time.perf_counter() - clock) / len(pairs)
        scores = {"shipped": evaluator, "llm-grader": llm, "cosine": cosine(pairs, args.titles)}
        intervals = roc_auc_intervals(
            [p.group or p.question for p in pairs], [p.label for p in pairs], scores, against=["llm-grader"]
        )
        results[name] = {
            "pairs": len(pairs),
            "questions": len(picked),
            "roc_auc": intervals,
            "llm_seconds_per_document": {"p50": statistics.median(seconds), "mean": statistics.fmean(seconds)},
            "evaluator_seconds_per_document": evaluator_seconds,
        }
        print(f"{name}: {len(pairs)} pairs of {len(picked)} questions")
        for system, interval in intervals.items():
            print(
                f"  {system:<11} ROC-AUC {interval['roc_auc']:.3f} [{interval['ci'][0]:.3f}, {interval['ci'][1]:.3f}]"
            )
            for key, diff in interval.items():
                if key.startswith("minus_"):
                    print(f"      − {key[6:]}: {diff['mean']:+.3f} [{diff['ci'][0]:+.3f}, {diff['ci'][1]:+.3f}]")
        print(
            f"  seconds per document: LLM grader p50 {statistics.median(seconds):.2f} s, "
            f"evaluator {evaluator_seconds * 1000:.1f} ms (batched)"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
