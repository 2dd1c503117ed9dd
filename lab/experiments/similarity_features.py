"""Set-relative embedding similarity as evaluator features (issue 10; docs/reports/2026-11-23-evaluator-set-relative-similarity.md).

Not a product feature yet: it measures whether the retriever's own embedding model, read *within*
the set of passages retrieved for one question, ranks documentation chunks where the shipped
cross-encoder does not. Per (question, passage) pair it computes

- `logit`, `overlap`, `contrast`: the shipped evaluator's model logit and its lexical features
  (`crag.evaluator.lexical`, the shipped IDF table);
- `cos`: cosine of all-MiniLM-L6-v2 (the retriever's embedder) between question and passage;
- `maxsim`: the best cosine between the question and one sentence of the passage (a man-page chunk
  lists many options; the one that answers is one sentence of it);
- `cos_z`, `maxsim_z`: the same minus their mean over the passages of the pair's group (the
  passages retrieved for the question). A question whose words are all over the corpus gives every
  chunk a high cosine; what stands out is the chunk that is closer than its neighbours.

then fits logistic heads on the evaluator's dev pairs and the FAQ pairs (`make evaluator-faq`; both
held apart from every validation slice) and reports ROC-AUC on every slice, with the shipped
evaluator, cosine and each single feature beside them; then the best head's route mix at thresholds
calibrated as `make evaluator` calibrates, beside the shipped evaluator's, and the cost of the
embedding pass:

    python -m lab.experiments.similarity_features --out /tmp/simfeat            # titles
    python -m lab.experiments.similarity_features --out /tmp/simfeat --no-titles
    # heads fitted on `crag evaluator adapt`'s self-made pairs of the docs collection (make bench-adapt)
    python -m lab.experiments.similarity_features --out /tmp/simfeat --self-made docs-domain

Features are cached per file in `--out` (about 45 minutes for all files on 2 cores, mostly
sentence embeddings).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from crag.evaluator import lexical
from crag.evaluator.pairs import Pair, read_pairs
from crag.evaluator.runnable import get_scorer
from crag.evaluator.training.calibration import calibrate, cap_discards, question_maxima
from crag.knowledge.refinement import MIN_STRIP_WORDS, decompose
from crag.models.embeddings import LocalEmbeddings
from crag.passages import titled
from crag.settings import Context
from crag.thresholds import score_of

SLICES = ["popqa-retrieved", "popqa-phrased", "bio", "bio-phrased", "multihop", "docs"]
FIT_ON = ["dev", "faq"]
HEADS = {
    "shipped head refitted (logit, overlap)": ["logit", "overlap"],
    "+ contrast": ["logit", "overlap", "contrast"],
    "+ contrast, cos_z": ["logit", "overlap", "contrast", "cos_z"],
    "+ contrast, maxsim_z": ["logit", "overlap", "contrast", "maxsim_z"],
    "+ contrast, cos_z, maxsim_z": ["logit", "overlap", "contrast", "cos_z", "maxsim_z"],
    "+ contrast, cos, cos_z, maxsim, maxsim_z": ["logit", "overlap", "contrast", "cos", "cos_z", "maxsim", "maxsim_z"],
}


def sentences(passage: str) -> list[str]:
    """The passage's sentences as refinement cuts them (too short ones left out), or the passage."""
    found = [s for s in decompose(passage, "sentences") if len(s.split()) >= MIN_STRIP_WORDS]
    return found or [" ".join(passage.split())]


def features(pairs: list[Pair], titles: bool) -> list[dict]:
    text = (lambda s, p: titled(s, p.title)) if titles else (lambda s, p: s)
    scorer, embedder = get_scorer(None), LocalEmbeddings(batch_size=64)
    _, table = scorer.lexical  # the shipped head's inputs; the experiment fits its own heads
    scored = [(p.question, text(p.passage, p)) for p in pairs]
    questions = sorted({p.question for p in pairs})
    q = dict(zip(questions, np.asarray(embedder.embed_documents(questions))))
    whole = np.asarray(embedder.embed_documents([t for _, t in scored]))
    parts = [sentences(p.passage) for p in pairs]
    flat = np.asarray(embedder.embed_documents([text(s, p) for p, ss in zip(pairs, parts) for s in ss]))
    logits = scorer.model_logits(scored, batch_size=64)
    contrasts = lexical.contrasts(table, scored, [p.group for p in pairs])
    out, at = [], 0
    for i, (p, ss) in enumerate(zip(pairs, parts)):
        sims = flat[at : at + len(ss)] @ q[p.question]
        at += len(ss)
        out.append(
            {
                "label": p.label,
                "group": p.group or p.question,
                "logit": float(logits[i]),
                "overlap": lexical.overlap(table, *scored[i]),
                "contrast": contrasts[i],
                "cos": float(whole[i] @ q[p.question]),
                "maxsim": float(sims.max()),
            }
        )
    members = defaultdict(list)
    for i, row in enumerate(out):
        members[row["group"]].append(i)
    for indices in members.values():
        for name in ("cos", "maxsim"):
            mean = statistics.fmean(out[i][name] for i in indices)
            for i in indices:
                out[i][f"{name}_z"] = out[i][name] - mean
    return out


def cached_features(path: Path, out: Path, titles: bool) -> list[dict]:
    cache = out / f"{path.stem}-{'titles' if titles else 'no-titles'}.json"
    if cache.is_file():
        return json.loads(cache.read_text())
    started = time.perf_counter()
    rows = features(read_pairs(path), titles)
    cache.write_text(json.dumps(rows))
    print(f"{path.stem}: {len(rows)} pairs in {time.perf_counter() - started:.0f} s", flush=True)
    return rows


def matrix(rows: list[dict], names: list[str]) -> np.ndarray:
    return np.array([[r[n] for n in names] for r in rows])


def self_made(collection: str, chroma_dir: Path, queries: int) -> dict[str, list[Pair]]:
    """`crag evaluator adapt`'s queries on a collection, two ways (`selfsup.self_supervised_sets`):
    with the negatives adapt picks, and graded in the ten chunks the retriever returns for the query
    (its own chunk, the query's text cut out, in place of the original). Each query's pairs are one
    group."""
    from dataclasses import replace

    from crag.evaluator.training.selfsup import collection_chunks, self_supervised_sets
    from crag.search.store import open_existing

    store = open_existing(persist_dir=chroma_dir, collection=collection, embedder=Context.default("embeddings"))
    picked, retrieved = self_supervised_sets(
        collection_chunks(store), store.embeddings.embed_documents, seed=0, max_queries=queries
    )
    return {
        "adapt's negatives": [replace(p, group=p.question) for p in picked],
        "retrieved sets": [replace(p, group=p.question) for p in retrieved],
    }


def squash(z: np.ndarray) -> np.ndarray:
    """A head's logits on the evaluator's [-1, 1] scale (`core.thresholds.score_of`, elementwise)."""
    return np.vectorize(score_of, otypes=[float])(z)


def routes(rows: list[dict], scores: np.ndarray, thresholds) -> dict[str, str]:
    """Route mix (Correct / Ambiguous / Incorrect, %) of the questions with a relevant passage among
    theirs, and of those without one: the graph's decision, read off the best score per question."""
    relevant, best = question_maxima([r["group"] for r in rows], [r["label"] for r in rows], scores.tolist())
    out = {}
    for name, chosen in (("with", relevant == 1), ("without", relevant == 0)):
        picked = best[chosen]
        if len(picked) == 0:
            continue
        mix = [np.mean(picked >= thresholds.upper), 0.0, np.mean(picked < thresholds.lower)]
        mix[1] = 1.0 - mix[0] - mix[2]
        out[name] = f"{len(picked)}: " + " / ".join(f"{100 * m:.0f}" for m in mix)
    return out


def calibrated(fit: list[dict], scores: np.ndarray):
    """Thresholds as `make evaluator` sets them: the utility on dev, the lower capped so that at most
    5% of the dev and of the FAQ questions with a relevant passage go to Incorrect."""
    faq = [str(r["group"]).startswith("faq") for r in fit]
    dev = [i for i, is_faq in enumerate(faq) if not is_faq]
    calibration = calibrate([fit[i]["label"] for i in dev], scores[dev].tolist())
    sets = []
    for chosen in (dev, [i for i, is_faq in enumerate(faq) if is_faq]):
        sets.append(
            question_maxima(
                [fit[i]["group"] for i in chosen], [fit[i]["label"] for i in chosen], scores[chosen].tolist()
            )
        )
    return cap_discards(calibration, sets, 0.05).thresholds


def embedding_cost_ms(slices: Path, repeats: int = 10) -> dict[str, float]:
    """p50 of the extra pass for 10 documents of ~100 words: the passages, and their sentences."""
    pairs = read_pairs(slices / "popqa-retrieved.jsonl")[:10]
    docs = [" ".join(p.passage.split()[:100]) for p in pairs]
    embedder = LocalEmbeddings(batch_size=64)
    embedder.embed_documents(docs)
    cost = {}
    for name, texts in (("passages", docs), ("passages and sentences", docs + [s for d in docs for s in sentences(d)])):
        runs = []
        for _ in range(repeats):
            started = time.perf_counter()
            embedder.embed_documents([pairs[0].question, *texts])
            runs.append(time.perf_counter() - started)
        cost[name] = round(statistics.median(runs) * 1000, 1)
    return cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slices", type=Path, default=Path("artifacts/evaluator-slices"))
    parser.add_argument("--data", type=Path, default=Path("artifacts/evaluator-data"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--no-titles", action="store_true")
    parser.add_argument(
        "--self-made", metavar="COLLECTION", help="also fit heads on adapt's pairs from this collection"
    )
    parser.add_argument("--chroma-dir", type=Path, default=Path(".crag/eval/relevance-chroma"))
    parser.add_argument("--queries", type=int, default=400, help="self-made queries (--self-made)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    titles = not args.no_titles
    fit = [r for name in FIT_ON for r in cached_features(args.data / f"{name}.jsonl", args.out, titles)]
    slices = {name: cached_features(args.slices / f"{name}.jsonl", args.out, titles) for name in SLICES}
    slices["faq"] = [r for r in fit if str(r["group"]).startswith("faq")]
    report: dict[str, dict[str, float]] = {}
    for name in ("logit", "overlap", "contrast", "cos", "maxsim", "cos_z", "maxsim_z"):
        report[f"{name} alone"] = {
            s: roc_auc_score([r["label"] for r in rows], [r[name] for r in rows]) for s, rows in slices.items()
        }
    for head, names in HEADS.items():
        model = LogisticRegression(max_iter=3000).fit(matrix(fit, names), [r["label"] for r in fit])
        report[head] = {
            s: roc_auc_score([r["label"] for r in rows], model.decision_function(matrix(rows, names)))
            for s, rows in slices.items()
        }
        report[head]["weights"] = dict(zip(names, np.round(model.coef_[0], 3).tolist()))
    faq = slices["faq"]
    names = HEADS["+ contrast, cos_z, maxsim_z"]
    model = LogisticRegression(max_iter=3000).fit(matrix(faq, names), [r["label"] for r in faq])
    report["+ contrast, cos_z, maxsim_z, fitted on faq only"] = {
        s: roc_auc_score([r["label"] for r in rows], model.decision_function(matrix(rows, names)))
        for s, rows in slices.items()
    }
    columns = list(slices)
    print(f"ROC-AUC ({'titles' if titles else 'no titles'}); heads fitted on {' + '.join(FIT_ON)} ({len(fit)} pairs)")
    print("| system | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for system, figures in report.items():
        print(f"| {system} | " + " | ".join(f"{figures[c]:.3f}" for c in columns) + " |")
    for system, figures in report.items():
        if "weights" in figures:
            print(system, figures["weights"])
    best = "+ contrast, cos_z, maxsim_z"
    names = HEADS[best]
    model = LogisticRegression(max_iter=3000).fit(matrix(fit, names), [r["label"] for r in fit])
    new = calibrated(fit, squash(model.decision_function(matrix(fit, names))))
    shipped = get_scorer(None)
    print("routes, % Correct / Ambiguous / Incorrect of the questions with / without a relevant passage")
    print(f"shipped evaluator at {shipped.thresholds}; head '{best}' at {new}")
    for s, rows in slices.items():
        old_scores = squash(
            np.array(shipped.lexical[0].logits([r["logit"] for r in rows], [r["overlap"] for r in rows]))
        )
        new_scores = squash(model.decision_function(matrix(rows, names)))
        print(f"| {s} | {routes(rows, old_scores, shipped.thresholds)} | {routes(rows, new_scores, new)} |")
    print("embedding pass, ms p50 for 10 documents of ~100 words:", embedding_cost_ms(args.slices))
    if args.self_made:
        print(f"heads fitted on {args.queries} self-made queries of {args.self_made} (ROC-AUC, titles):")
        for kind, pairs in self_made(args.self_made, args.chroma_dir, args.queries).items():
            rows = features(pairs, titles=True)
            for head in ("+ contrast", "+ contrast, cos_z, maxsim_z"):
                names = HEADS[head]
                model = LogisticRegression(max_iter=3000).fit(matrix(rows, names), [r["label"] for r in rows])
                figures = {
                    s: round(roc_auc_score([r["label"] for r in rs], model.decision_function(matrix(rs, names))), 3)
                    for s, rs in slices.items()
                }
                print(f"{kind} ({len(pairs)} pairs), {head}: {figures}")
                print("   weights", dict(zip(names, np.round(model.coef_[0], 2).tolist())))
    (args.out / f"report-{'titles' if titles else 'no-titles'}.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
