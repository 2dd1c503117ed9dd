"""Would more generated questions close the evaluator's gap on documentation? A learning curve.

`prep` writes the shipped evaluator as a plain checkpoint (a base `python -m lab evaluator train` can start from) and
training folders that hold the generated training pairs (with the chat model's teacher labels) of a seeded
share of their passages, each with the generated dev pairs (pages training never saw) to pick the epoch.
Each folder is then trained one epoch from the shipped evaluator with the recipe's settings. `score` gives
every checkpoint's model logit (no lexical blend, so that checkpoints compare alike) on the documentation
set's retrieved documents, as `teacher_window.py` grades them, and reports ROC-AUC pooled over the
documents and how often the top one holds an answer.

    python -m lab.experiments.generated_curve prep --data artifacts/evaluator-data-teacher --out artifacts/curve
    for p in 25 50 100; do python -m lab evaluator train --base artifacts/curve/shipped-full --data artifacts/curve/data-$p \\
        --validation dev --layers 3 --use-title --title-dropout 0.5 --lr 5e-5 --epochs 1 --teacher-weight 0.5 \\
        --read-long --max-length 128 --out artifacts/curve/m-$p; done
    python -m lab.experiments.generated_curve score --documents artifacts/bench/docs-retrieved.jsonl \\
        --checkpoint 25%=artifacts/curve/m-25 --checkpoint 50%=artifacts/curve/m-50 --checkpoint 100%=artifacts/curve/m-100

`overlap` compares how many of a question's terms its passage holds, in the generated dev pairs and in the
documentation set's retrieved documents (the lexical distance between a user's question and its answer).

`--documents` is a file `teacher_window.py` writes: every retrieved document (`--all-documents`) or the
graded sample (`--out`); only `question`, `q`, `title`, `text` and `label` are read.
"""

from __future__ import annotations

import argparse
import json
import zlib
from pathlib import Path

import numpy as np
from teacher_window import top_holds_answer

from crag.evaluator.model import load_scorer
from crag.evaluator.runnable import DEFAULT_CHECKPOINT
from crag.text import terms

SHARES = (25, 50, 100)
DOCUMENTATION = {"generated-man", "generated-pydoc", "generated-doc"}


def passage_id(pair: dict) -> str:
    """The generated passage a pair was asked about (`group` is "generated:<passage id>:<style>")."""
    return pair["group"].split(":")[1]


def share(question: str, passage: str) -> float:
    """The share of the question's distinct terms that the passage holds (unweighted; NaN without terms)."""
    wanted = set(terms(question))
    return len(wanted & set(terms(passage))) / len(wanted) if wanted else float("nan")


def prep(data: Path, out: Path) -> None:
    scorer = load_scorer(DEFAULT_CHECKPOINT, engine="torch")
    scorer.model.save_pretrained(out / "shipped-full")
    scorer.tokenizer.save_pretrained(out / "shipped-full")
    generated = [p for p in map(json.loads, (data / "train.jsonl").open()) if p["source"].startswith("generated")]
    dev = [line for line in (data / "dev.jsonl").open() if json.loads(line)["source"].startswith("generated")]
    for share in SHARES:
        folder = out / f"data-{share}"
        folder.mkdir(parents=True, exist_ok=True)
        kept = [p for p in generated if zlib.crc32(passage_id(p).encode()) % 1000 < share * 10]
        (folder / "train.jsonl").write_text("".join(json.dumps(p) + "\n" for p in kept))
        (folder / "dev.jsonl").write_text("".join(dev))
        print(f"{share}%: {len(kept)} pairs from {len({passage_id(p) for p in kept})} passages")


def score(documents: Path, checkpoints: list[str]) -> None:
    from sklearn.metrics import roc_auc_score

    rows = [json.loads(line) for line in documents.open()]
    y, q = np.array([r["label"] for r in rows]), np.array([r["q"] for r in rows])
    print(f"{len(set(q.tolist()))} questions, {len(rows)} documents, {int(y.sum())} hold an answer")
    for name, path in [("shipped", str(DEFAULT_CHECKPOINT)), *(c.split("=", 1) for c in checkpoints)]:
        model = load_scorer(path)
        v = np.array(model.model_logits([(r["question"], model.passage_text(r["text"], r["title"])) for r in rows]))
        print(f"| {name} | {roc_auc_score(y, v):.3f} | {top_holds_answer(y, v, q):.3f} |")


def overlap(data: Path, documents: Path) -> None:
    # the generated documentation pages (man, pydoc, /usr/share/doc), not their Wikipedia passages
    dev = [p for p in map(json.loads, (data / "dev.jsonl").open()) if p["source"] in DOCUMENTATION]
    rows = [json.loads(line) for line in documents.open()]
    groups = {
        "generated dev": [(p["label"], share(p["question"], f"{p['title']} {p['passage']}")) for p in dev],
        "documentation set": [(r["label"], share(r["question"], f"{r['title']} {r['text']}")) for r in rows],
    }
    print("| pairs | relevant: n, median / mean | not relevant: n, median / mean |\n|---|---|---|")
    for name, values in groups.items():
        cells = []
        for label in (1, 0):
            v = np.array([s for y, s in values if y == label])
            cells.append(f"{len(v)}, {np.nanmedian(v):.2f} / {np.nanmean(v):.2f}")
        print(f"| {name} | {cells[0]} | {cells[1]} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prep")
    p.add_argument("--data", type=Path, required=True, help="a build-data folder with the generated pairs")
    p.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("score")
    s.add_argument("--documents", type=Path, required=True)
    s.add_argument("--checkpoint", action="append", default=[], help="name=folder")
    o = sub.add_parser("overlap")
    o.add_argument("--data", type=Path, required=True, help="a build-data folder with the generated pairs")
    o.add_argument("--documents", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "prep":
        prep(args.data, args.out)
    elif args.command == "overlap":
        overlap(args.data, args.documents)
    else:
        score(args.documents, args.checkpoint)


if __name__ == "__main__":
    main()
