"""Does the answer reach the generator? Strip recall and knowledge tokens per setting, through the whole graph.

`strip_recall.py` scores refinement's selection rules on the retrieved documents alone; this runs the
graph as a user's question does, routing included: on Incorrect the retrieved strips are dropped for the
web's, on Ambiguous both are kept, so the figure is the one `crag eval` reports as `strip_recall`.

For every answerable question this runs the CRAG graph up to its knowledge (retrieve, grade, refine,
and the web where the route searches it; no answer is written) with a chat model that writes nothing, so
that the web query falls back to the question's own keywords and the chat model's second opinion on an
Incorrect grade keeps nothing (the "model rewrite" and "requery" settings have the default local model
write the web query or the knowledge base's second search, and "second opinion" has it grade the
documents the evaluator rejected, as `crag eval` does), and reports, per setting:

- strip recall: of the questions whose retrieved documents hold an answer, the share whose final
  knowledge does (the generator issue's target: >= 95%);
- knowledge recall over all answerable questions, and knowledge tokens against RAG's (the top-k
  documents whole; target <= 0.6x);
- the share of answerable questions whose graded documents hold an answer (after a second search,
  with requery), how many were searched again, seconds per question (no answer is written) and the
  action mix.

    python -m lab.benchmarks.knowledge_recall --inputs artifacts/eval/docs-inputs --chunk-size 1000 --chunk-overlap 100
    python -m lab.benchmarks.knowledge_recall --inputs artifacts/eval/popqa-inputs
    python -m lab.benchmarks.knowledge_recall --inputs artifacts/eval/docs-inputs --chunk-size 1000 --chunk-overlap 100 \\
        --evaluator artifacts/models/t6 --set-weight 1.45   # another evaluator, its own strip set weight
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from tqdm.auto import tqdm

from crag.evaluation import answer_metrics as metrics
from crag.evaluation.inputs import read_passages, read_questions
from crag.evaluation.kb import DEFAULT_CHROMA_DIR, DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, ensure_collection
from crag.evaluator.runnable import RetrievalEvaluator
from crag.graphs.crag import build_graph
from crag.knowledge.routing import final_knowledge
from crag.nodes.answering import format_knowledge
from crag.passages import title_of
from crag.settings import Context

# name -> Context settings on top of the shipped defaults (k as `crag eval run`: the graph's)
VARIANTS: dict[str, dict] = {
    "shipped: 5 excerption strips": {},
    "8 strips": {"top_k_strips": 8},
    "10 strips": {"top_k_strips": 10},
    "fixed 50-word windows": {"refine_mode": "fixed_num"},
    "whole passages (selection)": {"refine_mode": "selection"},
    "no strip threshold": {"strip_threshold": -1.01},
    # the web query written by the default local model (the paper's rewrite) instead of the question's keywords
    "model rewrite": {"rewrite_model": "local", "rewrite": "model"},
    # on Incorrect or Ambiguous, the knowledge base searched again with the default local model's query or
    # hypothetical passage (`Context.requery`, the evaluator issue)
    "requery rewrite": {"rewrite_model": "local", "requery": "rewrite"},
    "requery hyde": {"rewrite_model": "local", "requery": "hyde"},
    # the kept strips, then whole documents by retrieval rank within a budget of tokens (issue 75)
    "budget 600": {"knowledge_tokens": 600},
    "budget 900": {"knowledge_tokens": 900},
    "budget 1200": {"knowledge_tokens": 1200},
    # on Incorrect, the default local model grades each rejected document (`Context.recheck_threshold`, shipped)
    "second opinion": {"chat_model": "local"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=Path, required=True, help="a build-popqa / build-docs output folder")
    parser.add_argument("--questions", default="questions.jsonl")
    parser.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE)
    parser.add_argument("--chunk-overlap", type=int, default=DEFAULT_CHUNK_OVERLAP)
    parser.add_argument("--chroma-dir", default=DEFAULT_CHROMA_DIR)
    parser.add_argument("--k", type=int, default=Context.default("k"))
    parser.add_argument("--limit", type=int)
    parser.add_argument("--variants", help="comma-separated names from VARIANTS (default: all)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--evaluator", help="an evaluator checkpoint folder (default: the shipped one)")
    parser.add_argument(
        "--set-weight",
        type=float,
        help="refinement's strip_set_weight, for an evaluator whose logits are on another scale "
        "(lab/experiments/set_weight.py fits it; default: the shipped SET_WEIGHT)",
    )
    args = parser.parse_args()

    questions = [q for q in read_questions(args.inputs / args.questions) if q.answerable][: args.limit]
    collection, _, _ = ensure_collection(
        read_passages(args.inputs / "kb.jsonl", "kb"),
        args.chroma_dir,
        chunk_size=args.chunk_size,
        chunk_overlap=args.chunk_overlap,
    )
    evaluator = RetrievalEvaluator(checkpoint=args.evaluator)
    tuned = {} if args.set_weight is None else {"strip_set_weight": args.set_weight}
    graph = build_graph(answer=False).compile()  # up to the knowledge: the answer is not what is measured
    names = args.variants.split(",") if args.variants else list(VARIANTS)
    results = {}
    for name in names:
        settings = {
            "evaluator": evaluator,
            "chat_model": FakeListChatModel(responses=[""]),  # writes nothing, however often asked (it cycles)
            "chroma_dir": str(args.chroma_dir),
            "collection": collection,
            "web_backend": "local",
            "web_index": str(args.inputs / "web.jsonl"),
            "k": args.k,
        }
        ctx = Context(**{**settings, **tuned, **VARIANTS[name]})
        rows = []
        for q in tqdm(questions, desc=name, leave=False):
            clock = time.perf_counter()
            out = graph.invoke({"question": q.question}, context=ctx)
            seconds = time.perf_counter() - clock
            documents = out.get("documents") or []
            knowledge = format_knowledge(final_knowledge(out))
            rag = "\n\n".join(f"{title_of(d)}: {d.page_content}" for d in documents)
            rows.append(
                {
                    "retrieved": any(
                        metrics.contains_answer(f"{title_of(d)} {d.page_content}", q.answers) for d in documents
                    ),
                    "kept": metrics.contains_answer(knowledge, q.answers),
                    "tokens": metrics.count_tokens(knowledge),
                    "rag_tokens": metrics.count_tokens(rag),
                    "action": out.get("action"),
                    "requeried": bool(out.get("requeried")),
                    "seconds": seconds,
                }
            )
        had = [r for r in rows if r["retrieved"]]
        results[name] = {
            "n": len(rows),
            "retrieved": len(had),
            "strip_recall": sum(r["kept"] for r in had) / max(len(had), 1),
            "knowledge_recall": sum(r["kept"] for r in rows) / max(len(rows), 1),
            "token_ratio": sum(r["tokens"] for r in rows) / max(sum(r["rag_tokens"] for r in rows), 1),
            "reachable": len(had) / max(len(rows), 1),
            "requeried": sum(r["requeried"] for r in rows),
            "seconds_mean": sum(r["seconds"] for r in rows) / max(len(rows), 1),
            "actions": {a: sum(r["action"] == a for r in rows) for a in ("correct", "ambiguous", "incorrect")},
        }
        r = results[name]
        print(
            f"{name:34s} strip recall {100 * r['strip_recall']:5.1f}% ({r['retrieved']} with the answer retrieved)  "
            f"knowledge recall {100 * r['knowledge_recall']:5.1f}%  tokens {r['token_ratio']:.2f}x RAG's  "
            f"answer in the documents {100 * r['reachable']:5.1f}%  searched again {r['requeried']}  "
            f"{r['seconds_mean']:.2f} s/question  C/A/I {r['actions']['correct']}/{r['actions']['ambiguous']}/"
            f"{r['actions']['incorrect']}",
            flush=True,
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
