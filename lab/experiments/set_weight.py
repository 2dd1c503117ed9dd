"""Where refinement's `SET_WEIGHT` comes from (docs/reports/2026-11-24-strips-ranked-within-their-set.md).

A logistic head over two features of a (question, passage) pair, fitted on the evaluator's dev pairs
and the FAQ pairs (`make evaluator-faq`; neither is a validation slice, and neither is a set of strips):
the evaluator's logit (its blended score before the squash) and the passage's standing among the
passages retrieved with it (`refinement.standings_of` over their cosines with the question, the
retriever's all-MiniLM-L6-v2). Refinement adds `weight × standing` to the evaluator's logit, so the
weight is the ratio of the two coefficients, and it belongs to the evaluator whose logit scale it was
fitted on: an evaluator trained otherwise needs its own (`--evaluator`).

    python -m lab.experiments.set_weight --data artifacts/evaluator-data --features /tmp/setweight
    python -m lab.experiments.set_weight --data artifacts/evaluator-data --features /tmp/setweight \\
        --evaluator artifacts/models/t6

Features are cached per pairs file and evaluator in `--features` (a few minutes for dev and FAQ on 2
cores: one scoring pass and one embedding pass).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from similarity_features import FIT_ON  # this folder's experiment: the same pairs
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from crag.evaluator.pairs import Pair, read_pairs
from crag.evaluator.runnable import get_scorer
from crag.knowledge.refinement import cosines, standings_of
from crag.models.embeddings import LocalEmbeddings
from crag.passages import titled_once
from crag.settings import Context
from crag.thresholds import logit_of

SET_WEIGHT = Context.default("strip_set_weight")
INSIDE = 1 - 1e-6  # ±1 has no logit


def features(pairs: list[Pair], evaluator: str | None) -> list[dict]:
    """Per pair: its label, its group, the evaluator's blended logit (scored with its group, as a request
    scores its documents together) and the question's cosine with the titled passage."""
    scorer = get_scorer(evaluator)
    groups = [p.group or p.question for p in pairs]
    scores = scorer.score([(p.question, scorer.passage_text(p.passage, p.title)) for p in pairs], groups=groups)
    embedder = LocalEmbeddings(batch_size=64)
    questions = sorted({p.question for p in pairs})
    q = dict(zip(questions, np.asarray(embedder.embed_documents(questions))))
    passages = embedder.embed_documents([titled_once(p.passage, p.title) for p in pairs])
    return [
        {
            "label": p.label,
            "group": group,
            "logit": logit_of(min(max(s, -INSIDE), INSIDE)),
            "cos": cosines(q[p.question], [v])[0],
        }
        for p, group, s, v in zip(pairs, groups, scores, passages)
    ]


def cached_features(path: Path, out: Path, evaluator: str | None) -> list[dict]:
    tag = hashlib.sha1(str(Path(evaluator).resolve() if evaluator else "shipped").encode()).hexdigest()[:8]
    cache = out / f"{path.stem}-{tag}.json"
    if cache.is_file():
        return json.loads(cache.read_text())
    rows = features(read_pairs(path), evaluator)
    cache.write_text(json.dumps(rows))
    return rows


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
    parser.add_argument("--features", type=Path, required=True, help="where the features are cached")
    parser.add_argument("--evaluator", help="a checkpoint folder (default: the shipped evaluator)")
    args = parser.parse_args()
    args.features.mkdir(parents=True, exist_ok=True)
    rows = rows_with_standing(
        [r for name in FIT_ON for r in cached_features(args.data / f"{name}.jsonl", args.features, args.evaluator)]
    )
    logits = np.array([r["logit"] for r in rows])
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
