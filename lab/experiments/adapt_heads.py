"""Refitting the evaluator's head on a collection's retrieved sets (issue 13; docs/reports/2026-11-23-adapt-refit-heads.md).

`crag evaluator adapt` fine-tunes the model on self-made pairs with picked negatives and fits its
head (logit, lexical overlap) on them. This measures the alternative the similarity experiment
pointed to: keep a model (the shipped one, or one adapt fine-tuned) and fit the head, with the
set-aware contrast feature, on the collection's self-made queries graded among the chunks the
retriever really returns for them (`selfsup.self_supervised_sets`), as the graph grades documents.

Two collections, neither one's questions ever seen: the `docs` slice's man and pydoc pages
(`docs-domain`, `make evaluator-slices`) and the FAQ answers of `make evaluator-faq` (put into a
collection here, chunks as in the FAQ pairs). Per collection and model, heads are fitted on up to
1,000 retrieved sets of the documents adapt would not check (its held-apart split), and scored on
the held-apart sets, the `docs` slice, the FAQ pairs, PopQA and Bio slices and half of adapt's
general set; the other half can anchor the fit (`anchor w`: its pairs weigh w times the domain's in
the fit), which trades the domain's gain against forgetting:

    python -m lab.experiments.adapt_heads --out /tmp/adapt-heads \\
        --adapted docs-domain=artifacts/models/adapted-docs --adapted faq-domain=/tmp/adapted-faq

(`--adapted COLLECTION=DIR`: a checkpoint `crag evaluator adapt` wrote for that collection, whose
fine-tuned model gets the same heads.) Features are cached in `--out` (about 15 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from crag.evaluator import lexical
from crag.evaluator.model import load_scorer
from crag.evaluator.pairs import Pair, read_pairs
from crag.evaluator.runnable import DEFAULT_CHECKPOINT
from crag.evaluator.training.adapt_checks import split_pairs
from crag.evaluator.training.general import load_general_check
from crag.evaluator.training.selfsup import collection_chunks, self_supervised_sets
from crag.search.store import open_existing, open_store
from crag.settings import Context
from crag.standing import grouped_standings

FIT_QUERIES = 1000
ANCHORS = (0.25, 1.0)  # the default --anchor values
COLUMNS = ["held-apart", "docs", "faq", "popqa-retrieved", "bio-phrased", "general-B"]


def faq_store(chroma_dir: Path, faq: Path):
    """The FAQ answers as a collection: the passages of the FAQ pairs, titled by their FAQ."""
    store = open_store(persist_dir=chroma_dir, collection="faq-domain")
    if not store.get(limit=1)["ids"]:  # filled once
        titles: dict[str, str] = {}
        for p in read_pairs(faq):
            titles.setdefault(p.passage, p.title)
        store.add_texts(list(titles), metadatas=[{"title": t, "source": t} for t in titles.values()])
    return store


def retrieved_sets(store, seed: int = 0) -> dict[str, list[Pair]]:
    """adapt's queries graded in retrieved sets: a sample for fitting (documents adapt trains or
    calibrates on), and the held-apart documents' sets."""
    _, sets = self_supervised_sets(
        collection_chunks(store), store.embeddings.embed_documents, seed=seed, max_queries=4000
    )
    graded, _ = split_pairs(sets, 0.3)
    fit = graded["train"] + graded["calibrate"]
    keys = sorted({(p.group, p.question) for p in fit})
    kept = set(random.Random(seed).sample(keys, min(FIT_QUERIES, len(keys))))
    return {"fit": [p for p in fit if (p.group, p.question) in kept], "held-apart": graded["check"]}


def features(scorer, pairs: list[Pair]) -> dict[str, list]:
    """The model's logit, overlap and contrast (its own IDF table), and its blended logit as served."""
    blend, table = scorer.lexical
    texts = [(p.question, scorer.passage_text(p.passage, p.title)) for p in pairs]
    logits = [float(z) for z in scorer.model_logits(texts, batch_size=64)]
    overlaps = [lexical.overlap(table, *t) for t in texts]
    sets: dict[tuple[str, str], int] = {}
    return {
        "label": [p.label for p in pairs],
        "logit": logits,
        "overlap": overlaps,
        "contrast": lexical.contrasts(table, texts, [p.group for p in pairs]),
        "served": blend.logits(logits, overlaps),
        "set": [sets.setdefault((p.group, p.question), len(sets)) for p in pairs],  # the pairs graded together
    }


def cached(out: Path, name: str, scorer, pairs: list[Pair]) -> dict[str, np.ndarray]:
    path = out / f"{name}.json"
    if not path.is_file() or "set" not in json.loads(path.read_text()):  # caches from before "set" existed
        path.write_text(json.dumps(features(scorer, pairs)))
    return {k: np.asarray(v, float) for k, v in json.loads(path.read_text()).items()}


# the heads' inputs: "standing" is a feature's distance from the mean of its set, in the set's spreads
# (`crag.standing`), as refinement reads the embedder's cosines; the first set is the one measured before
HEADS = {
    "logit, overlap, contrast": ("logit", "overlap", "contrast"),
    "logit, overlap, standing": ("logit", "overlap", "logit standing"),
    "logit, overlap, contrast, standing": ("logit", "overlap", "contrast", "logit standing"),
    "logit, overlap, contrast, both standings": ("logit", "overlap", "contrast", "logit standing", "overlap standing"),
}


def with_standings(row: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return row | {f"{k} standing": np.asarray(grouped_standings(row[k], row["set"])) for k in ("logit", "overlap")}


def heads(rows: dict[str, dict[str, np.ndarray]], anchors=ANCHORS):
    """(head, ROC-AUC per column, weights): the model's blend as served, then logistic heads over each
    of `HEADS` fitted on the retrieved sets, alone and anchored by general pairs."""
    rows = {name: with_standings(row) for name, row in rows.items()}

    def figures(score):
        return [roc_auc_score(rows[c]["label"], score(rows[c])) for c in COLUMNS]

    yield "as served", figures(lambda row: row["served"]), ""
    fit, anchor = rows["fit"], rows["general-A"]
    n, m = len(fit["label"]), len(anchor["label"])
    for inputs, columns in HEADS.items():

        def matrix(row, columns=columns):
            return np.column_stack([row[c] for c in columns])

        for w in (0.0, *anchors):
            x = np.vstack([matrix(fit), matrix(anchor)]) if w else matrix(fit)
            y = np.concatenate([fit["label"], anchor["label"]]) if w else fit["label"]
            weight = np.concatenate([np.ones(n), np.full(m, w * n / m)]) if w else None
            head = LogisticRegression(max_iter=3000).fit(x, y, sample_weight=weight)
            yield (
                f"{inputs}{f', anchor w={w}' if w else ''}",
                figures(lambda row, head=head, matrix=matrix: head.decision_function(matrix(row))),
                ", ".join(f"{c:+.2f}" for c in head.coef_[0]),
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--chroma-dir", type=Path, default=Path(".crag/eval/relevance-chroma"))
    parser.add_argument("--faq-chroma-dir", type=Path, default=Path(".crag/eval/faq-chroma"))
    parser.add_argument("--faq", type=Path, default=Path("artifacts/evaluator-data/faq.jsonl"))
    parser.add_argument("--slices", type=Path, default=Path("artifacts/evaluator-slices"))
    parser.add_argument("--adapted", action="append", default=[], metavar="COLLECTION=DIR")
    parser.add_argument("--anchor", type=float, action="append", help=f"anchor weights (default {ANCHORS})")
    parser.add_argument("--collection", action="append", choices=["docs-domain", "faq-domain"], help="default both")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    general = load_general_check()
    questions = sorted({p.question for p in general})
    anchor_half = set(random.Random(0).sample(questions, len(questions) // 2))  # by question
    evaluation = {
        "docs": read_pairs(args.slices / "docs.jsonl"),
        "faq": read_pairs(args.faq),
        "popqa-retrieved": read_pairs(args.slices / "popqa-retrieved.jsonl"),
        "bio-phrased": read_pairs(args.slices / "bio-phrased.jsonl"),
        "general-A": [p for p in general if p.question in anchor_half],
        "general-B": [p for p in general if p.question not in anchor_half],
    }
    stores = {
        "docs-domain": open_existing(
            persist_dir=args.chroma_dir, collection="docs-domain", embedder=Context.default("embeddings")
        ),
        "faq-domain": faq_store(args.faq_chroma_dir, args.faq),
    }
    adapted = dict(spec.split("=", 1) for spec in args.adapted)
    print("| collection | model | head | " + " | ".join(COLUMNS) + " | weights (in the head's order) |")
    print("|---" * (len(COLUMNS) + 4) + "|")
    for collection, store in stores.items():
        if args.collection and collection not in args.collection:
            continue
        sets = retrieved_sets(store)
        models = {"shipped": DEFAULT_CHECKPOINT, **({"adapted": adapted[collection]} if collection in adapted else {})}
        for model_name, checkpoint in models.items():
            scorer = load_scorer(checkpoint)
            tag = "shipped" if model_name == "shipped" else f"adapted-{collection}"
            rows = {name: cached(args.out, f"{tag}-{name}", scorer, pairs) for name, pairs in evaluation.items()}
            rows |= {name: cached(args.out, f"{tag}-{collection}-{name}", scorer, sets[name]) for name in sets}
            for head, figures, weights in heads(rows, tuple(args.anchor or ANCHORS)):
                cells = " | ".join(f"{v:.3f}" for v in figures)
                print(f"| {collection} | {model_name} | {head} | {cells} | {weights} |", flush=True)


if __name__ == "__main__":
    main()
