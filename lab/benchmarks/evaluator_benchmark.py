"""Score the retrieval evaluator on every validation slice, with and without titles, beside its baselines.

The slices (`python -m lab datasets build-slices`) are what the graph really grades: the project's retriever's
top 10 for PopQA questions as asked and in everyday phrasings, Contriever's top 10 for CRAG's Bio
questions, a documentation corpus ingested with `crag ingest` and hand-written questions, and
HotpotQA/MuSiQue. Every system is reported on the same pairs:

- the shipped evaluator and any `--checkpoint NAME=PATH`, at their own calibrated thresholds;
- the shipped evaluator's model alone, without the lexical blend (the ablation of `lexical.py`);
- the evaluator shipped before the slices existed (`--previous PATH`);
- zero-shot cosine of the base model (all-MiniLM-L6-v2) and BM25; these and the model alone have
  thresholds calibrated on a sample of the training pairs (never on a slice);
- the shipped evaluator's scores in `CRAGCompressor`'s order: each shifted by the passage's standing
  among the passages retrieved with it (`crag.knowledge.refinement.set_selection`, the retriever's own
  cosine). It orders and does not route (the graph routes on the evaluator's score), so its route
  mix is not one the graph takes.

Without titles, a slice our retriever builds is read from `SLICES/untitled/` when there: the same
questions retrieved from a titleless copy of the collection (`lab.datasets.relevance`), since
hybrid search also matches titles and a knowledge base without them gives it none.

Per slice: ROC-AUC with a 95% interval (its questions resampled, 1,000 times) and each system's
difference from zero-shot cosine and from BM25 with a paired interval (`evaluation.roc_auc_intervals`:
a gap whose interval holds 0 is not one these questions can tell), accuracy and F1 at the upper
threshold, top-1 and top-3 (share of questions with a relevant passage whose best-scored passage is
relevant, or one of the best three; "retriever order" is the retriever's own first results) and the
route mix (Correct / Ambiguous / Incorrect per question).

    python -m lab.benchmarks.evaluator_benchmark --slices artifacts/evaluator-slices --json artifacts/bench/evaluator.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from collections import Counter
from pathlib import Path

import numpy as np

from crag.evaluator import lexical as lexical_module
from crag.evaluator import model as model_module
from crag.evaluator import reading as reading_module
from crag.evaluator.pairs import Pair, read_pairs
from crag.evaluator.runnable import DEFAULT_CHECKPOINT, get_scorer
from crag.evaluator.training.calibration import calibrate
from crag.evaluator.training.evaluation import classification_metrics, roc_auc_intervals
from crag.knowledge.refinement import set_selection
from crag.knowledge.routing import decide_action
from crag.passages import titled
from crag.settings import Context
from crag.thresholds import Thresholds
from lab.datasets.relevance import UNTITLED


def slice_pairs(slices: Path, name: str, titles: bool) -> list[Pair]:
    """A slice's pairs as scored with or without titles (`untitled/` holds its titleless retrieval, if any)."""
    untitled = slices / UNTITLED / f"{name}.jsonl"
    return read_pairs(untitled if not titles and untitled.exists() else slices / f"{name}.jsonl")


def texts(pairs: list[Pair], titles: bool) -> list[str]:
    return [titled(p.passage, p.title) if titles else p.passage for p in pairs]


def cosine(pairs: list[Pair], titles: bool) -> list[float]:
    """Zero-shot cosine of the base sentence embedder (the retriever's own, normalised vectors): the
    untrained baseline every figure stands beside."""
    from crag.models.embeddings import LocalEmbeddings

    embedder = LocalEmbeddings(batch_size=64)
    questions = sorted({p.question for p in pairs})
    q = dict(zip(questions, np.asarray(embedder.embed_documents(questions))))
    d = np.asarray(embedder.embed_documents(texts(pairs, titles)))
    return [float(np.dot(q[p.question], v)) for p, v in zip(pairs, d)]


def bm25(pairs: list[Pair], titles: bool) -> list[float]:
    """BM25 of each passage for its question, with statistics over all passages of the set."""
    import bm25s

    scored = texts(pairs, titles)
    passages = sorted(set(scored))
    index = {text: i for i, text in enumerate(passages)}
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(passages, stopwords="en", show_progress=False), show_progress=False)
    out = []
    for pair, text in zip(pairs, scored):
        tokens = bm25s.tokenize([pair.question], stopwords="en", show_progress=False, return_ids=False)[0]
        out.append(float(retriever.get_scores(tokens)[index[text]]) if tokens else 0.0)
    return out


def squash(scores: list[float]) -> list[float]:
    """BM25 is unbounded; map it into [-1, 1] (monotone, so ROC-AUC is unchanged) to calibrate like the rest."""
    return [float(np.tanh(s / 10.0)) for s in scores]


def checkpoint(path: Path | None):
    scorer = get_scorer(path)

    def score(pairs: list[Pair], titles: bool) -> list[float]:
        return scorer.score(
            [(p.question, t) for p, t in zip(pairs, texts(pairs, titles))],
            batch_size=64,
            groups=[p.group for p in pairs],
        )

    return score, scorer.thresholds, weights_key(path)


MODEL_ALONE = "model alone, no blend"
COSINE = "cosine (zero-shot)"
BM25 = "BM25"


def _bracket(ci: list[float]) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _signed(difference: dict | None) -> str:
    """A paired difference as "+0.012 [−0.010, +0.034]"; "–" for a baseline beside itself."""
    if not difference:
        return "–"
    low, high = difference["ci"]
    return f"{difference['mean']:+.3f} [{low:+.3f}, {high:+.3f}]"


def auc_line(interval: dict, baselines: list[str]) -> str:
    """One system's ROC-AUC, its interval and its differences from the baselines, for the console."""
    return f"{interval['roc_auc']:.3f} {_bracket(interval['ci'])}" + "".join(
        f"  − {b} {_signed(interval.get(f'minus_{b}'))}" for b in baselines if f"minus_{b}" in interval
    )


def model_alone(path: Path | None):
    """The checkpoint's cross-encoder without its lexical blend: 2·sigmoid(logit) − 1."""
    scorer = get_scorer(path)

    def score(pairs: list[Pair], titles: bool) -> list[float]:
        return scorer.score([(p.question, t) for p, t in zip(pairs, texts(pairs, titles))], batch_size=64, blend=False)

    return score


def cached(cache: Path | None, system: str, pairs: list[Pair], titles: bool, fn) -> list[float]:
    """The system's scores for these pairs, from `cache` when an earlier run scored the very same pairs.

    Zero-shot cosine embeds every passage (minutes per slice on two cores) and does not change between
    runs; checkpoints are keyed by their folder's weights too, so a retrained model is scored afresh.
    """
    if cache is None:
        return fn(pairs, titles)
    digest = hashlib.sha256(json.dumps([system, titles, [(p.question, p.title, p.passage) for p in pairs]]).encode())
    path = cache / f"{digest.hexdigest()[:24]}.json"
    if path.is_file():
        return json.loads(path.read_text())
    scores = fn(pairs, titles)
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scores))
    return scores


# the code that turns a checkpoint's weights into scores: a change to it (what the model reads of a
# long passage, `reading`) scores afresh instead of serving the scores cached before it
SCORING_CODE = [model_module, reading_module, lexical_module]


def weights_key(path: Path | None) -> str:
    """A checkpoint's identity for the cache: its folder, the hash of its weight files and of the
    scoring code."""
    folder = Path(path) if path else DEFAULT_CHECKPOINT
    digest = hashlib.sha256()
    for file in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.json")):
        digest.update(file.read_bytes())
    for module in SCORING_CODE:
        digest.update(Path(module.__file__).read_bytes())
    return f"{folder.resolve()}:{digest.hexdigest()[:16]}"


def per_question(pairs: list[Pair], scores: list[float], thresholds: Thresholds) -> dict:
    groups: dict[str, list[tuple[float, int]]] = {}
    for pair, score in zip(pairs, scores):
        groups.setdefault(pair.group, []).append((score, pair.label))
    answerable = [g for g in groups.values() if any(label for _, label in g)]
    best = [sorted(g, key=lambda item: -item[0]) for g in answerable]  # stable: ties keep the retriever's order
    top1 = [g[0][1] for g in best]
    top3 = [any(label for _, label in g[:3]) for g in best]
    retriever_top1 = [g[0][1] for g in answerable]  # pairs are stored in the retriever's rank order
    retriever_top3 = [any(label for _, label in g[:3]) for g in answerable]
    routes = Counter(decide_action([s for s, _ in g], thresholds) for g in groups.values())
    mean = lambda values: float(np.mean(values)) if values else float("nan")  # noqa: E731
    return {
        "top1": mean(top1),
        "top3": mean(top3),
        "retriever_top1": mean(retriever_top1),
        "retriever_top3": mean(retriever_top3),
        "routes": {r: routes.get(r, 0) / len(groups) for r in ("correct", "ambiguous", "incorrect")},
        "questions": len(groups),
        "answerable": len(answerable),
    }


ORDERED = "shipped, in CRAGCompressor's order"


def in_set_order(pairs: list[Pair], scores: list[float], cosines: list[float]) -> list[float]:
    """`CRAGCompressor`'s selection scores (`refinement.set_selection`), each question's passages a set."""
    members: dict[str, list[int]] = {}
    for i, pair in enumerate(pairs):
        members.setdefault(pair.group, []).append(i)
    out = list(scores)
    for idx in members.values():
        for i, value in zip(
            idx, set_selection([scores[i] for i in idx], [cosines[i] for i in idx], Context.default("strip_set_weight"))
        ):
            out[i] = value
    return out


def latency_ms(path: Path | None, pairs: list[Pair], repeats: int = 30, engines=("onnx", "torch")) -> dict:
    """p50/p95 of scoring 10 documents of ~100 words for one question, warm, per engine. The engines
    take turns, one call each, so that a machine whose speed drifts during the run (these vary by a
    third between runs) slows both alike."""
    scorers = {engine: get_scorer(path, engine=engine) for engine in engines}
    long = [p for p in pairs if len(p.passage.split()) >= 100][:10]
    batch = [(long[0].question, " ".join(p.passage.split()[:100])) for p in long]
    times: dict[str, list[float]] = {engine: [] for engine in engines}
    for scorer in scorers.values():
        for _ in range(3):
            scorer.score(batch)
    for _ in range(repeats):
        for engine, scorer in scorers.items():
            started = time.perf_counter()
            scorer.score(batch)
            times[engine].append((time.perf_counter() - started) * 1000)
    result: dict = {"docs": len(batch)}
    for engine, values in times.items():
        values.sort()
        result[engine] = {"p50_ms": statistics.median(values), "p95_ms": values[int(0.95 * (len(values) - 1))]}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slices", type=Path, default=Path("artifacts/evaluator-slices"))
    parser.add_argument(
        "--train",
        type=Path,
        default=Path("artifacts/evaluator-data/train.jsonl"),
        help="training pairs on which the baselines' thresholds are calibrated",
    )
    parser.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="more evaluator checkpoints to compare (repeatable)",
    )
    parser.add_argument("--previous", type=Path, help="the evaluator shipped before these slices existed")
    parser.add_argument("--only", help="comma-separated slices to score (default: all in the manifest)")
    parser.add_argument(
        "--skip", action="append", default=[], help="systems to leave out: cosine, bm25, shipped, model-alone"
    )
    parser.add_argument("--baseline-sample", type=int, default=4000, help="training pairs the baselines calibrate on")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path("artifacts/bench/scores"),
        help="scores already computed for the same system and pairs (pairs/s then means nothing)",
    )
    args = parser.parse_args()

    import transformers

    transformers.logging.set_verbosity_error()
    manifest = json.loads((args.slices / "manifest.json").read_text())
    names = args.only.split(",") if args.only else list(manifest["slices"])
    systems: dict[str, tuple] = {}
    if "shipped" not in args.skip:
        systems["shipped"] = checkpoint(None)
    for spec in args.checkpoint:
        name, _, path = spec.partition("=")
        systems[name] = checkpoint(Path(path))
    if "shipped" in systems and "cosine" not in args.skip:
        shipped_fn, shipped_thresholds, shipped_ident = systems["shipped"]

        def ordered(pairs: list[Pair], titles: bool) -> list[float]:
            scores = cached(args.cache, shipped_ident, pairs, titles, shipped_fn)
            return in_set_order(pairs, scores, cached(args.cache, COSINE, pairs, titles, cosine))

        systems[ORDERED] = (ordered, shipped_thresholds, f"{ORDERED}:{shipped_ident}")
    if args.previous:
        systems["previous (v1)"] = checkpoint(args.previous)
    baselines = {}
    if "model-alone" not in args.skip and get_scorer(None).lexical is not None:
        baselines[MODEL_ALONE] = model_alone(None)
    if "cosine" not in args.skip:
        baselines[COSINE] = cosine
    if "bm25" not in args.skip:
        baselines[BM25] = lambda pairs, titles: squash(bm25(pairs, titles))
    if baselines:
        import random

        train = read_pairs(args.train)
        sample = random.Random(0).sample(train, min(args.baseline_sample, len(train)))
        for name, fn in baselines.items():
            ident = f"{name}:{weights_key(None)}" if name == MODEL_ALONE else name  # rescored when retrained
            cal = calibrate([p.label for p in sample], cached(args.cache, ident, sample, True, fn))
            systems[name] = (fn, cal.thresholds, ident)

    results: dict[str, dict] = {}
    lines = []
    for slice_name in names:
        titled_pairs = slice_pairs(args.slices, slice_name, True)
        for titles in (True, False):
            if not titles and not any(p.title for p in titled_pairs):
                continue
            pairs = titled_pairs if titles else slice_pairs(args.slices, slice_name, False)
            labels = [p.label for p in pairs]
            key = f"{slice_name} ({'titles' if titles else 'no titles'})"
            results[key] = {}
            scored: dict[str, list[float]] = {}
            for name, (fn, pair, ident) in systems.items():
                started = time.perf_counter()
                scores = scored[name] = cached(args.cache, ident, pairs, titles, fn)
                row = {
                    **classification_metrics(labels, scores, pair.upper),
                    **per_question(pairs, scores, pair),
                    "upper": pair.upper,
                    "lower": pair.lower,
                    "pairs_per_s": len(pairs) / (time.perf_counter() - started),
                }
                results[key][name] = row
                print(
                    f"{key:<32} {name:<28} ROC-AUC {row['roc_auc']:.3f}  acc {row['accuracy']:.3f}  "
                    f"F1 {row['f1']:.3f}  top1 {row['top1']:.3f}  top3 {row['top3']:.3f}  routes C/A/I "
                    + "/".join(f"{row['routes'][r]:.2f}" for r in ("correct", "ambiguous", "incorrect")),
                    flush=True,
                )
            baselines_here = [b for b in (COSINE, BM25) if b in scored]
            spread = roc_auc_intervals([p.group for p in pairs], labels, scored, against=baselines_here)
            for name, interval in spread.items():
                results[key][name]["roc_auc_ci"] = interval["ci"]
                results[key][name].update({f"roc_auc_{k}": v for k, v in interval.items() if k.startswith("minus_")})
                print(f"{key:<32} {name:<28} ROC-AUC {auc_line(interval, baselines_here)}", flush=True)
            first = next(iter(results[key].values()))
            lines += [
                "",
                f"**{key}**: {first['n']} pairs, {first['positive_rate']:.0%} relevant, "
                f"{first['questions']} questions ({first['answerable']} with a relevant passage); "
                f"retriever order top-1 {first['retriever_top1']:.3f}, top-3 {first['retriever_top3']:.3f}",
                "",
                "| system | ROC-AUC [95%] | − cosine [95%] | − BM25 [95%] | accuracy | F1 | top-1 | top-3 "
                "| Correct / Ambiguous / Incorrect |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
            for name, r in results[key].items():
                mix = " / ".join(f"{r['routes'][x]:.0%}" for x in ("correct", "ambiguous", "incorrect"))
                mix = "(orders, does not route)" if name == ORDERED else mix
                versus = [_signed(r.get(f"roc_auc_minus_{b}")) for b in (COSINE, BM25)]
                lines.append(
                    f"| {name} | {r['roc_auc']:.3f} {_bracket(r['roc_auc_ci'])} | {versus[0]} | {versus[1]} "
                    f"| {r['accuracy']:.3f} | {r['f1']:.3f} | {r['top1']:.3f} | {r['top3']:.3f} | {mix} |"
                )
    speed = {}
    if "shipped" in systems and "popqa-retrieved" in names:
        speed = latency_ms(None, read_pairs(args.slices / "popqa-retrieved.jsonl"))
        lines += [
            "",
            f"Shipped evaluator, {speed['docs']} documents of ~100 words: "
            + "; ".join(
                f"{e} p50 {v['p50_ms']:.0f} ms, p95 {v['p95_ms']:.0f} ms" for e, v in speed.items() if e != "docs"
            ),
        ]
    print("\n".join(lines))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"slices": str(args.slices), "results": results, "latency": speed, "table": lines}, indent=2)
        )


if __name__ == "__main__":
    main()
