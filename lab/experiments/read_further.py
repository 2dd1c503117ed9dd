"""When the reader declines over the kept strips, would the next strips answer? A replay with the real model.

Refinement keeps the five best strips. On the documentation set at k 10 the kept strips miss an answer
that the retrieved documents hold for 12 of the 97 questions whose strips refinement chooses, and the
next five strips of the same ranking hold it for 7 of them (`doc_prior.py`). Giving the reader more strips at once was measured end to end
and cost right answers (docs/reports/2026-11-28-strips-by-rank.md). This asks the cheaper question: only
when the model declines over the first five, show it the next five, and take that answer if it stands
(the product's answer rules: not declined, not looping, supported by a strip it was given); otherwise
the recorded answer (the quote or the second ask) stays.

The documents come from a RAG run's records (the retrieved chunks whole, in the CRAG run's `doc` order);
the next strips are refinement's own (`refinement.refine_pages`), recomputed with the shipped evaluator.

    python -m lab.experiments.read_further artifacts/eval/models/local-docs-k10 \\
        artifacts/eval/models/local-docs-k10-rag --out artifacts/bench/read-further-docs.jsonl

Each question's result goes to one JSON line of `--out` as it is written; a rerun goes on where it stopped.
"""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path

from doc_prior import records  # a script of this folder
from tqdm.auto import tqdm

from crag import resources
from crag.answers.attribution import abstains
from crag.jsonl import appended_objects, drop_torn_line
from crag.knowledge.refinement import refine_pages
from crag.passages import passage
from crag.records import Strip
from crag.settings import Context

generate_module = importlib.import_module("crag.nodes.generate")


def deeper_strips(
    ctx: Context, evaluator, embed, question: str, documents: list[dict], rejected: list[bool]
) -> list[Strip]:
    """Refinement's next strips after the kept ones, as the `refine` node sets them aside."""
    passages = [passage(doc["text"], title=doc["title"], source=doc["source"]) for doc in documents]
    return refine_pages(
        question,
        passages,
        evaluator,
        mode=ctx.refine_mode,
        top_k=ctx.top_k_strips,
        threshold=ctx.strip_threshold,
        origin="internal",
        keep_best=True,
        embed=embed,
        set_weight=ctx.strip_set_weight,
        rejected=rejected,
        further=ctx.further_strips,
    )[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("crag_run")
    parser.add_argument("rag_run")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    crag, rag = records(args.crag_run, "crag"), records(args.rag_run, "rag")
    lower = json.loads(Path(args.crag_run, "run.json").read_text())["thresholds"]["crag"][1]
    ctx = Context(chat_model="local")
    evaluator, embed = resources.evaluator(ctx), resources.strip_embedder(ctx)
    drop_torn_line(args.out)
    done = {row["qid"]: row for row in appended_objects(args.out)} if args.out.exists() else {}
    for qid, rec in tqdm(crag.items(), desc="questions"):
        if qid in done:
            continue
        first = rec["first_draft"] if rec["asked_again"] else rec["draft"]
        row = {"qid": qid, "answerable": rec["answerable"], "recorded": rec["answer"], "asked": False}
        rejected = [s < lower for s in rec["scores"]]
        eligible = (
            rec["action"] in ("correct", "ambiguous")
            # after the chat model's second opinion (it kept some document) the graph reads the kept documents
            # whole and sets no further strips
            and not rec["recheck_scores"]
            and qid in rag
            and len(rag[qid]["strips"]) == len(rec["scores"])
            and abstains(first)
        )
        if eligible:
            strips = deeper_strips(ctx, evaluator, embed, rec["question"], rag[qid]["strips"], rejected)
            if strips:
                knowledge = generate_module.format_knowledge(strips)
                draft, answer, _, replaced = generate_module._answer(
                    ctx, ctx.generate_prompt, strips, rec["question"], knowledge
                )
                row.update(asked=True, draft=draft, answer=answer, replaced=replaced, stands=not abstains(answer))
                row["knowledge_has_answer"] = any(a in s["text"] for s in strips for a in rec["answers"])
        row["final"] = row["answer"] if row.get("stands") else rec["answer"]
        row["right"] = rec["answerable"] and any(a in row["final"] for a in rec["answers"])
        row["recorded_right"] = rec["answerable"] and any(a in rec["answer"] for a in rec["answers"])
        row["declined"] = abstains(row["final"])
        row["recorded_declined"] = abstains(rec["answer"])
        with args.out.open("a") as f:
            f.write(json.dumps(row) + "\n")
        done[qid] = row
    rows = list(done.values())
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    print(
        f"asked over the next strips: {sum(r['asked'] for r in rows)}; their answer stood: {sum(bool(r.get('stands')) for r in rows)}"
    )
    print(
        f"accuracy: {sum(r['right'] for r in answerable)}/{len(answerable)} (recorded {sum(r['recorded_right'] for r in answerable)})"
    )
    print(
        f"unanswerable declined: {sum(r['declined'] for r in unanswerable)}/{len(unanswerable)} "
        f"(recorded {sum(r['recorded_declined'] for r in unanswerable)})"
    )
    print("gained:", [r["qid"] for r in answerable if r["right"] and not r["recorded_right"]])
    print("lost:", [r["qid"] for r in answerable if r["recorded_right"] and not r["right"]])


if __name__ == "__main__":
    main()
