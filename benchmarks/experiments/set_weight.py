"""Where refinement's `SET_WEIGHT` comes from (docs/reports/2026-11-24-strips-ranked-within-their-set.md).

A logistic head over two features of a (question, passage) pair, fitted on the evaluator's dev pairs
and the FAQ pairs (`make evaluator-faq`; neither is a validation slice, and neither is a set of strips):
the shipped evaluator's logit (its blended score before the squash) and the passage's standing among
the passages retrieved with it (`refinement.standings_of` over their cosines with the question, the
retriever's all-MiniLM-L6-v2). Refinement adds `weight × standing` to the evaluator's logit, so the
weight is the ratio of the two coefficients. It reads the features `similarity_features.py` caches:

    python benchmarks/experiments/set_weight.py --features /tmp/simfeat

(a missing cache file is computed first, about 25 minutes for dev and FAQ on 2 cores).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np
from similarity_features import FIT_ON, cached_features  # this folder's experiment, same cache
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from crag.evaluator_model.runnable import get_scorer
from crag.methods.refinement import SET_WEIGHT, standings_of


def rows_with_standing(rows: list[dict]) -> list[dict]:
    members = defaultdict(list)
    for i, row in enumerate(rows):
        members[row["group"]].append(i)
    for indices in members.values():
        for i, z in zip(indices, standings_of([rows[i]["cos"] for i in indices])):
            rows[i]["standing"] = z
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("artifacts/evaluator-data"))
    parser.add_argument("--features", type=Path, required=True, help="similarity_features.py's --out")
    args = parser.parse_args()
    args.features.mkdir(parents=True, exist_ok=True)
    head = get_scorer(None).lexical[0]
    rows = rows_with_standing(
        [r for name in FIT_ON for r in cached_features(args.data / f"{name}.jsonl", args.features, True)]
    )
    logits = head.logits([r["logit"] for r in rows], [r["overlap"] for r in rows])
    x = np.column_stack([logits, [r["standing"] for r in rows]])
    y = [r["label"] for r in rows]
    model = LogisticRegression(max_iter=3000).fit(x, y)
    a, b = model.coef_[0]
    print(
        f"{len(rows)} pairs ({' + '.join(FIT_ON)}): P(relevant) = σ({a:.3f}·logit + {b:.3f}·standing {model.intercept_[0]:+.3f})"
    )
    print(f"weight = {b:.3f} / {a:.3f} = {b / a:.2f} (refinement's SET_WEIGHT: {SET_WEIGHT})")
    for name, score in (("evaluator alone", logits), ("with standing", x @ model.coef_[0])):
        print(f"ROC-AUC on the pairs fitted on, {name}: {roc_auc_score(y, score):.3f}")


if __name__ == "__main__":
    main()
