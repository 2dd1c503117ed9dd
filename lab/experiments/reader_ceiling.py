"""How well does the reader answer when it is given exactly the passages that hold the answer?

A ceiling for everything before `generate`: retrieval, grading and refinement can at best hand the
reader the retrieved passages that hold an answer and nothing else. This takes a recorded RAG run
(`crag eval run --systems rag,…`, whose strips are the top-k retrieved chunks whole), keeps, for each
answerable question, only the chunks that contain an answer (whole word, any case, as knowledge recall
counts it), asks the run's chat model again with the run's prompt (`regenerate.py`'s call) and scores
the drafts, and the answers `generate`'s rules make of them, over all answerable questions (those whose
chunks hold no answer count as misses: no selection can help them). Beside it, the run's own RAG drafts
from all k chunks.

    python -m lab.experiments.reader_ceiling artifacts/eval/models/local-docs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # answer_rules, regenerate: scripts of lab/benchmarks/

from answer_rules import print_rows, recorded, replay, score
from regenerate import cut, regenerate

from crag.evaluation.answer_metrics import contains_answer
from crag.prompts import GENERATE_STOP


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a `crag eval run` folder with a rag system")
    parser.add_argument("--system", default="rag")
    args = parser.parse_args()
    info, records = recorded(args.folder, args.system)
    answerable = [r for r in records if r.get("answerable", True)]
    oracle = [
        {**r, "strips": [s for s in r["strips"] if contains_answer(f"{s['title']} {s['text']}", r["answers"])]}
        for r in answerable
    ]
    replies = regenerate(oracle, info["chat_model"], info["generate_prompt"], info["max_answer_tokens"])
    quote = info["quote_thresholds"][args.system]
    drafts = {qid: cut(text, GENERATE_STOP) for qid, text in replies.items()}
    out = {r["qid"]: replay({**r, "draft": drafts.get(r["qid"], "")}, quote, {}) for r in oracle}
    reachable = sum(bool(r["strips"]) for r in oracle)
    rows = {
        f"{args.system}: all {info['k']} chunks, drafts": score(answerable, lambda r: r["draft"] or ""),
        f"{args.system}: all {info['k']} chunks, answers": score(answerable, lambda r: r["answer"]),
        "only the chunks with an answer: drafts": score(oracle, lambda r: out[r["qid"]]["draft"]),
        "only the chunks with an answer: answers": score(oracle, lambda r: out[r["qid"]]["answer"]),
    }
    print(f"\n{args.folder}: {len(answerable)} answerable questions, {reachable} with an answer in their chunks")
    print_rows(rows, 48)


if __name__ == "__main__":
    main()
