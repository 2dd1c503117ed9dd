"""Which attribution rule to trust (issue 11): lexical overlap, the evaluator, or both, measured on
the drafts a real run wrote.

For every CRAG answer in an eval run's predictions.jsonl whose model wrote a draft, the run's
knowledge is rebuilt by running the graph again with the recorded rewrite and draft played back
(retrieval, grading, refinement and the local web are deterministic), and each rule decides which
strips support each sentence. A good rule supports the drafts that hold an answer, rejects those
that do not (and those to questions the sources cannot answer), and cites strips that hold the answer:

    python -m lab.benchmarks.attribution --run artifacts/eval/honesty-popqa \\
        --kb artifacts/eval/popqa-inputs/kb.jsonl --web artifacts/eval/popqa-inputs/web.jsonl
    python -m lab.benchmarks.attribution --run artifacts/eval/honesty-docs --chunk-size 1000 \\
        --kb artifacts/eval/docs-inputs/kb.jsonl --web artifacts/eval/docs-inputs/web.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import eval_kb  # lab/benchmarks/eval_kb.py: the eval run's knowledge base
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from tqdm.auto import tqdm

from crag.answers import attribution
from crag.evaluation.answer_metrics import contains_answer
from crag.evaluator.runnable import RetrievalEvaluator
from crag.graphs.crag import graph
from crag.knowledge.refinement import sentence_spans
from crag.knowledge.routing import final_knowledge
from crag.passages import passage
from crag.settings import Context

Rule = Callable[[str, str, list, list[list[float]]], list[list[int]]]  # cited strip indices per sentence


def lexical(minimum: float) -> Rule:
    def rule(draft, question, strips, _scores):
        stated = [attribution.states(s) for s in strips]
        cited = []
        for sentence, _, _ in sentence_spans(draft):
            support = [attribution.support(attribution.claim(sentence, question), words) for words in stated]
            best = max(support, default=0.0)
            cited.append([] if best < minimum else [i for i, s in enumerate(support) if s == best][:2])
        return cited

    return rule


def evaluator_rule(threshold: float) -> Rule:
    def rule(_draft, _question, _strips, scores):
        return [sorted((i for i, s in enumerate(row) if s >= threshold), key=lambda i: -row[i])[:2] for row in scores]

    return rule


def both(minimum: float, threshold: float) -> Rule:
    def rule(draft, question, strips, scores):
        return [
            [i for i in lex if scores[n][i] >= threshold]
            for n, lex in enumerate(lexical(minimum)(draft, question, strips, scores))
        ]

    return rule


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="an eval run's folder (predictions.jsonl)")
    eval_kb.add_arguments(parser)
    parser.add_argument("--web", type=Path, required=True)
    parser.add_argument("--systems", default="crag,crag_compact_prompt")
    args = parser.parse_args()

    records = [json.loads(line) for line in (args.run / "predictions.jsonl").open()]
    records = [
        r
        for r in records
        if r["system"] in args.systems.split(",")
        and r.get("draft")
        and not attribution.abstains(r["draft"])
        and not r.get("error")
    ]
    collection = eval_kb.collection(args)
    evaluator = RetrievalEvaluator()
    upper, lower = evaluator.thresholds.upper, evaluator.thresholds.lower
    settings = json.loads((args.run / "run.json").read_text()) if (args.run / "run.json").exists() else {}
    rules: dict[str, Rule] = {
        "lexical ≥ 0.5 (shipped)": lexical(attribution.SUPPORT_MIN),
        "lexical ≥ 0.34": lexical(0.34),
        "lexical ≥ 0.67": lexical(0.67),
        f"evaluator ≥ lower ({lower:.2f})": evaluator_rule(lower),
        f"evaluator ≥ upper ({upper:.2f})": evaluator_rule(upper),
        "lexical ≥ 0.5 and evaluator ≥ lower": both(attribution.SUPPORT_MIN, lower),
    }
    tally = {name: {"right": [0, 0], "wrong": [0, 0], "unanswerable": [0, 0], "precision": [0, 0]} for name in rules}
    for record in tqdm(records, desc="drafts", unit="draft"):
        replies = GenericFakeChatModel(messages=iter([AIMessage(content=record["draft"])]))
        rewrites = GenericFakeChatModel(messages=iter([AIMessage(content=record.get("rewritten_query") or "")] * 2))
        ctx = Context(
            evaluator=evaluator,
            chat_model=replies,
            rewrite_model=rewrites,
            chroma_dir=args.chroma_dir,
            collection=collection,
            web_backend="local",
            web_index=str(args.web),
            k=settings.get("k", 5),
            generate_prompt="compact" if "compact" in record["system"] else "paper",
        )
        output = graph.invoke({"question": record["question"]}, context=ctx)
        strips = final_knowledge(output)
        if not strips:
            continue
        question = output["question"]
        sentences = [s for s, _, _ in sentence_spans(record["draft"])]
        documents = [passage(s["text"], title=s["title"]) for s in strips]
        scores = [list(evaluator.invoke({"question": sentence, "documents": documents})) for sentence in sentences]
        holds = [contains_answer(f"{s['title']} {s['text']}", record["answers"]) for s in strips]
        kind = ("right" if record.get("draft_correct") else "wrong") if record["answerable"] else "unanswerable"
        for name, rule in rules.items():
            cited = rule(record["draft"], question, strips, scores)
            tally[name][kind][0] += any(cited)
            tally[name][kind][1] += 1
            if record["answerable"]:
                for row in cited:
                    tally[name]["precision"][0] += sum(holds[i] for i in row)
                    tally[name]["precision"][1] += len(row)

    def pct(pair):
        return f"{100 * pair[0] / pair[1]:.1f}" if pair[1] else "–"

    first = next(iter(tally.values()))
    print(
        f"\n{args.run}: drafts holding an answer {first['right'][1]}, answerable drafts without one "
        f"{first['wrong'][1]}, drafts to unanswerable questions {first['unanswerable'][1]}"
    )
    print(
        "| rule | supported: draft holds an answer % | supported: draft without one % | supported: unanswerable % "
        "| citation precision % |\n|---|---|---|---|---|"
    )
    for name, t in tally.items():
        print(f"| {name} | {pct(t['right'])} | {pct(t['wrong'])} | {pct(t['unanswerable'])} | {pct(t['precision'])} |")


if __name__ == "__main__":
    main()
