"""Does active retrieval reach every paragraph a multi-hop question needs? FLARE against single-time retrieval.

On `relevance/multihop_pairs.jsonl` (HotpotQA: 100 questions x 10 paragraphs; MuSiQue: 100 x 20; `label` 1 =
a supporting paragraph), every question's paragraphs go into one knowledge base (as the PopQA inputs put every
question's passages in one index; a paragraph two questions share is stored once), and each system answers each
question through its graph, with no web, so what reaches the generator comes from that index alone. Reported
per system and source: the share of questions whose every supporting paragraph reached the knowledge (the
strips the generator was given, from any of its searches: RAG's top-k documents, CRAG's refined strips, all of
FLARE's searches), the share with at least one, seconds per question (p50/p95) and model calls per question.
The issue's target: FLARE reaches every supporting paragraph for >= 10 points more questions than single-time.

    python -m lab.benchmarks.multihop_retrieval --limit 2                # a smoke run: 2 questions per source
    python -m lab.benchmarks.multihop_retrieval --systems rag,crag,flare,flare_previous --out artifacts/multihop

With `--limit` only the chosen questions' paragraphs are indexed (a smoke run: fewer distractors, so not the
full run's figures; `--whole-index` indexes all). Rows go to OUT/rows.jsonl as they are measured (a rerun skips the (system, question) pairs there) and the
summary to OUT/summary.json. The data is read by path (`CRAG_DATA_DIR`, default ../shared/data).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from crag.evaluation.inputs import Passage
from crag.evaluation.kb import DEFAULT_CHROMA_DIR, ensure_collection
from crag.evaluation.pipelines import run_question
from crag.evaluation.systems import parse_systems, system_contexts
from crag.evaluator.runnable import RetrievalEvaluator
from crag.jsonl import read_objects
from crag.settings import Context

PAIRS = Path("relevance") / "multihop_pairs.jsonl"


def read_questions(pairs: Sequence[dict]) -> list[dict]:
    """The questions in file order, each {qid, source, question, paragraphs: [{title, text, label}]}."""
    questions: dict[str, dict] = {}
    for pair in pairs:
        q = questions.setdefault(
            pair["qid"], {"qid": pair["qid"], "source": pair["source"], "question": pair["question"], "paragraphs": []}
        )
        q["paragraphs"].append({"title": pair["title"], "text": pair["text"], "label": int(pair["label"])})
    return list(questions.values())


def knowledge_base(questions: Sequence[dict]) -> tuple[list[Passage], dict[str, list[str]]]:
    """(every paragraph once, as a passage keyed "qid-n"; each question's supporting paragraphs' keys)."""
    keys: dict[tuple[str, str], str] = {}
    passages: list[Passage] = []
    supporting: dict[str, list[str]] = {}
    for q in questions:
        for n, p in enumerate(q["paragraphs"]):
            key = keys.setdefault((p["title"], p["text"]), f"{q['qid']}-{n}")
            if key == f"{q['qid']}-{n}":
                passages.append(Passage(key, p["title"], p["text"]))
            if p["label"]:
                supporting.setdefault(q["qid"], []).append(key)
    return passages, supporting


def limited(questions: Sequence[dict], limit: int | None) -> list[dict]:
    """The first `limit` questions of each source (all without a limit)."""
    if limit is None:
        return list(questions)
    taken: dict[str, int] = {}
    kept = []
    for q in questions:
        taken[q["source"]] = taken.get(q["source"], 0) + 1
        if taken[q["source"]] <= limit:
            kept.append(q)
    return kept


def measured(output: dict, supporting: Sequence[str]) -> dict:
    """What one answer's knowledge reached: its sources, and whether every / any supporting paragraph is among them."""
    sources = sorted({s.get("source", "") for s in output.get("given") or []})
    found = [key for key in supporting if key in sources]
    return {"knowledge_sources": sources, "supporting_reached": len(found), "all": len(found) == len(supporting),
            "any": bool(found)}  # fmt: skip


def measure(
    questions: Sequence[dict], supporting: dict[str, list[str]], ctx: Context, systems: str, rows_path: Path,
    *, progress: bool = True,
) -> list[dict]:  # fmt: skip
    """Each system on each question (questions outer, as `crag eval run`), appended to `rows_path`; every row."""
    done = {(r["system"], r["qid"]): r for _, r in read_objects(rows_path)} if rows_path.exists() else {}
    chosen = parse_systems(systems)
    contexts = system_contexts(chosen, ctx)
    todo = [(q, s) for q in questions for s in chosen if (s.name, q["qid"]) not in done]
    for q, system in tqdm(todo, desc="multi-hop", unit="answer", disable=not progress):
        output = run_question(system.pipeline, contexts[system.name], q["question"])
        row = {"system": system.name, "qid": q["qid"], "source": q["source"], "supporting": supporting[q["qid"]],
               **measured(output, supporting[q["qid"]]), "answer": output.get("answer", ""),
               "wall_s": output["wall_s"], "llm_calls": output["llm"]["calls"]}  # fmt: skip
        with rows_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        done[(system.name, q["qid"])] = row
    asked = {q["qid"] for q in questions}
    return [r for (name, qid), r in done.items() if qid in asked and name in contexts]


def summarize(rows: Sequence[dict]) -> dict:
    """Per system, and per system and source: n, every / any supporting paragraph reached, seconds and model calls."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["system"], []).append(r)
        groups.setdefault(f"{r['system']} / {r['source']}", []).append(r)
    summary = {}
    for name, group in groups.items():
        walls = [r["wall_s"] for r in group]
        summary[name] = {
            "n": len(group),
            "all_supporting": sum(r["all"] for r in group) / len(group),
            "any_supporting": sum(r["any"] for r in group) / len(group),
            "s_p50": float(np.percentile(walls, 50)),
            "s_p95": float(np.percentile(walls, 95)),
            "llm_calls": sum(r["llm_calls"] for r in group) / len(group),
        }
    # each system, then each system by source
    return dict(sorted(summary.items(), key=lambda item: ("/" in item[0], list(summary).index(item[0]))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("CRAG_DATA_DIR") or "../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("artifacts/multihop-retrieval"))
    parser.add_argument("--systems", default="rag,crag,flare,flare_previous")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N questions of each source.")
    parser.add_argument(
        "--whole-index",
        action="store_true",
        help="With --limit, still index every question's paragraphs (the full run's index; slow to embed).",
    )
    parser.add_argument("--k", type=int, default=Context.default("k"))
    parser.add_argument("--chat-model", default="local")
    parser.add_argument("--chroma-dir", type=Path, default=Path(DEFAULT_CHROMA_DIR))
    args = parser.parse_args()
    path = args.data_dir.expanduser() / PAIRS
    if not path.is_file():
        parser.error(f"{path} is missing: is --data-dir (or CRAG_DATA_DIR) the shared data folder?")
    every = read_questions([record for _, record in read_objects(path)])
    chosen = limited(every, args.limit)
    # a full run's index holds every question's paragraphs; a --limit smoke run indexes its own questions' alone
    # (fewer distractors: its figures are not the full run's) unless --whole-index
    passages, supporting = knowledge_base(every if args.whole_index or args.limit is None else chosen)
    collection, _, _ = ensure_collection(passages, args.chroma_dir)
    print(f"index: {len(passages)} paragraphs of {len({p.key.rsplit('-', 1)[0] for p in passages})} questions")
    ctx = Context(evaluator=RetrievalEvaluator(), chat_model=args.chat_model, chroma_dir=str(args.chroma_dir),
                  collection=collection, web_backend="none", k=args.k)  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    rows = measure(chosen, supporting, ctx, args.systems, args.out / "rows.jsonl")
    summary = summarize(rows)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"{'system':<28} {'n':>4} {'every supporting %':>19} {'any %':>6} {'p50 s':>7} {'p95 s':>7} {'calls/q':>8}")
    for name, s in summary.items():
        print(
            f"{name:<28} {s['n']:>4} {s['all_supporting'] * 100:>19.1f} {s['any_supporting'] * 100:>6.1f} "
            f"{s['s_p50']:>7.1f} {s['s_p95']:>7.1f} {s['llm_calls']:>8.1f}"
        )


if __name__ == "__main__":
    main()
