"""Strip recall of refinement (issue 11): of the questions whose retrieved documents contain an
answer, the share whose kept strips still do, and what the kept strips cost in words.

No generator is involved (retrieve, score strips, select), so the selection rules can be compared in
minutes on every question of an eval set. Each question's documents are retrieved and cut once per
mode, every strip is scored once, and each selection rule is applied to the same scores:

    python -m lab.benchmarks.strip_recall --questions artifacts/eval/popqa-inputs/questions.jsonl \
        --kb artifacts/eval/popqa-inputs/kb.jsonl
    python -m lab.benchmarks.strip_recall --questions artifacts/eval/docs-inputs/questions.jsonl \
        --kb artifacts/eval/docs-inputs/kb.jsonl --chunk-size 1000

Rules: "top K ≥ T" keeps the K best strips scoring at least T; "+margin M" also keeps, up to 2K
strips, every strip scoring within M of the K-th best; "+best" keeps the best strip whatever it scores.
Each rule runs on two rankings: the evaluator's scores alone (`strip_set_weight` 0, the paper's) and
the shipped one, those scores shifted by each strip's standing among the question's strips
(`refinement.set_adjusted`, with the knowledge base's embeddings). The graph's default is
"top 5 ≥ -0.5 +best" on the shipped ranking.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import eval_kb  # lab/benchmarks/eval_kb.py: the eval run's knowledge base
from tqdm.auto import tqdm

from crag import resources
from crag.evaluation.answer_metrics import contains_answer
from crag.evaluation.inputs import read_questions
from crag.evaluator.runnable import RetrievalEvaluator
from crag.knowledge import refinement
from crag.passages import passage, title_of, titled_once
from crag.settings import Context

# (top K, margin, threshold, keep the best strip whatever it scores)
RULES = [
    (5, 0.0, -0.5, False),
    (5, 0.0, -0.5, True),
    (5, 0.0, -0.8, True),
    (5, 0.0, -0.9, True),
    (5, 0.0, -0.8, False),
    (5, 0.0, -0.9, False),
    (5, 0.0, -0.95, False),
    (5, 0.0, -1.0, False),
    (3, 0.0, -0.9, False),
    (8, 0.0, -0.9, False),
    (5, 0.2, -0.9, False),
]


def select(scores: list[float], top_k: int, margin: float, threshold: float, best: bool = False) -> list[int]:
    ranked = sorted(range(len(scores)), key=lambda i: scores[i], reverse=True)
    ranked = [i for n, i in enumerate(ranked) if scores[i] >= threshold or (best and n == 0)]
    if margin <= 0 or len(ranked) <= top_k:
        return ranked[:top_k]
    floor = scores[ranked[top_k - 1]] - margin
    return [i for n, i in enumerate(ranked[: 2 * top_k]) if n < top_k or scores[i] >= floor]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, required=True)
    eval_kb.add_arguments(parser)
    parser.add_argument("--modes", default="excerption,fixed_num")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--k", type=int, default=5, help="documents retrieved per question (as crag eval run)")
    args = parser.parse_args()

    questions = [q for q in read_questions(args.questions) if q.answerable][: args.limit]
    collection = eval_kb.collection(args)
    ctx = Context(chroma_dir=args.chroma_dir, collection=collection, web_backend="none", k=args.k)
    evaluator = RetrievalEvaluator()
    embed = resources.strip_embedder(ctx)
    modes = args.modes.split(",")
    rankings = {"evaluator": 0.0, "set-adjusted": Context.default("strip_set_weight")}
    keys = [(m, ranking, rule) for m in modes for ranking in rankings for rule in RULES]
    found, words = dict.fromkeys(keys, 0), dict.fromkeys(keys, 0)
    had = 0
    for question in tqdm(questions, desc="questions", unit="q"):
        documents = resources.retrieve(ctx, question.question)
        if not any(contains_answer(f"{title_of(d)} {d.page_content}", question.answers) for d in documents):
            continue
        had += 1
        for mode in modes:
            strips = [
                (title_of(d), s)
                for d in documents
                for s in refinement.decompose(d.page_content, mode)
                if len(s.split()) >= refinement.MIN_STRIP_WORDS
            ]
            scores = evaluator.invoke(
                {"question": question.question, "documents": [passage(s, title=t) for t, s in strips]}
            )
            texts = [titled_once(s, t) for t, s in strips]
            for ranking, weight in rankings.items():
                ranked = refinement.selection_scores(question.question, texts, scores, embed, weight)
                for rule in RULES:
                    kept = [strips[i] for i in select(ranked, *rule)]
                    key = (mode, ranking, rule)
                    found[key] += contains_answer(" ".join(f"{t} {s}" for t, s in kept), question.answers)
                    words[key] += sum(len(s.split()) for _, s in kept)
    print(
        f"\n{args.questions}: {had} of {len(questions)} answerable questions have an answer in the top {ctx.k} documents"
    )
    print("| mode | ranking | rule | strip recall % | words kept / question |\n|---|---|---|---|---|")
    for mode, ranking, key in keys:
        top_k, margin, threshold, best = key
        rule = f"top {top_k} ≥ {threshold}" + (f" +margin {margin}" if margin else "") + (" +best" if best else "")
        cell = (mode, ranking, key)
        print(
            f"| {mode} | {ranking} | {rule} | {100 * found[cell] / max(had, 1):.1f} | {words[cell] / max(had, 1):.0f} |"
        )


if __name__ == "__main__":
    main()
