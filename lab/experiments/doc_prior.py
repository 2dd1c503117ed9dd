"""Does a strip's document grade help refinement choose strips? A replay on recorded runs, no generator.

Refinement ranks every strip of every kept document by the evaluator's score on the strip alone
(shifted by its standing in the set) and keeps the best `top_k_strips`; the grade of the document the
strip was cut from plays no part. In passage retrieval a passage's score is commonly combined with its
document's (Callan 1994, "Passage-level evidence in document retrieval"): a strip read alone loses what
its document says around it. This replays refinement on the documents a `crag eval run` retrieved (a
RAG run's records hold them whole, in the order of the CRAG run's `doc` indices) with the CRAG run's
grades and route, and adds `gamma` times the logit of the strip's document grade to the strip's logit.
gamma 0 is the shipped ranking and must reproduce the recorded internal strips.

    python -m lab.experiments.doc_prior artifacts/eval/models/local-docs-k10 artifacts/eval/models/local-docs-k10-rag
    python -m lab.experiments.doc_prior artifacts/eval/models/local-popqa-k10 artifacts/eval/models/local-popqa-k10

`--prior rank` adds minus gamma times the log of 1 + the document's retrieval rank instead.
`--lift-rejected` adds a line for gamma 0 with the strips of the documents the grade rejected judged by their
standing as the others' are (`refinement.gate_score` with every internal strip lifted).

Per gamma: strip recall of the internal strips on the Correct and Ambiguous routes (questions whose
retrieved documents hold an answer and were not passed whole after a second opinion), the internal
strips' words, and the questions gained and lost against gamma 0. For each question whose kept strips
miss the answer at gamma 0 it also prints where the next strips of the same ranking hold one (positions
0-4 after the kept ones), which is how `Context.further_strips` was found.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from tqdm.auto import tqdm

from crag import resources
from crag.knowledge.refinement import MIN_STRIP_WORDS, decompose_spans, distinct, gate_score, selection_scores
from crag.passages import passage, titled_once
from crag.settings import Context
from crag.thresholds import logit_of, score_of


def records(folder: str, system: str) -> dict[str, dict]:
    rows = [json.loads(line) for line in Path(folder, "predictions.jsonl").read_text().splitlines() if line]
    return {r["qid"]: r for r in rows if r["system"] == system}


def clipped_logit(score: float) -> float:
    return logit_of(min(max(score, -1 + 1e-6), 1 - 1e-6))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("crag_run")
    parser.add_argument("rag_run")
    parser.add_argument("--gammas", default="0,0.25,0.5,1,2")
    parser.add_argument(
        "--prior",
        choices=["grade", "rank"],
        default="grade",
        help="grade: the logit of the document's grade; rank: minus the log of 1 + its retrieval rank",
    )
    parser.add_argument(
        "--lift-rejected",
        action="store_true",
        help="also gamma 0 with the strips of rejected documents judged by their standing (key 'lifted')",
    )
    args = parser.parse_args()
    crag, rag = records(args.crag_run, "crag"), records(args.rag_run, "rag")
    run = json.loads(Path(args.crag_run, "run.json").read_text())
    lower = run["thresholds"]["crag"][1]
    ctx = Context()
    evaluator, embed = resources.evaluator(ctx), resources.strip_embedder(ctx)
    # each variant by its printed name: (gamma, whether every internal strip is lifted); (0, False) is shipped
    variants = {f"gamma {g:>5}": (g, False) for g in map(float, args.gammas.split(","))}
    if args.lift_rejected:
        variants["gamma lifted"] = (0.0, True)
    shipped = next((name for name, v in variants.items() if v == (0.0, False)), None)
    hits: dict[str, dict[str, bool]] = {name: {} for name in variants}
    tokens: dict[str, int] = dict.fromkeys(variants, 0)
    recorded_tokens, mismatched, considered = 0, 0, 0
    for qid, rec in tqdm(crag.items(), desc="questions"):
        if rec["action"] not in ("correct", "ambiguous") or not rec["answerable"] or qid not in rag:
            continue
        scores = rec["scores"]
        rejected = [s < lower for s in scores]
        if rec["recheck_scores"]:  # on these routes: the second opinion kept documents, read whole, no strip choice
            continue
        documents = rag[qid]["strips"]
        if len(documents) != len(scores) or not any(rec["documents_with_answer"]):
            continue
        considered += 1
        candidates = []
        for d, doc in enumerate(documents):
            for position, (strip, _, _) in enumerate(decompose_spans(doc["text"], ctx.refine_mode)):
                if len(strip.split()) >= MIN_STRIP_WORDS:
                    candidates.append((d, position, strip))
        titles = [doc["title"] for doc in documents]
        strip_docs = [passage(s, title=titles[d], source=documents[d]["source"]) for d, _, s in candidates]
        strip_scores = [float(s) for s in evaluator.invoke({"question": rec["question"], "documents": strip_docs})]
        texts = [titled_once(s, titles[d]) for d, _, s in candidates]
        base = selection_scores(rec["question"], texts, strip_scores, embed, ctx.strip_set_weight)
        shipped_lift = [not rejected[d] for d, *_ in candidates]
        recorded = [s for s in rec["strips"] if s["origin"] == "internal"]
        recorded_tokens += sum(len(s["text"].split()) for s in recorded)
        prior = [clipped_logit(s) if args.prior == "grade" else -math.log(1 + d) for d, s in enumerate(scores)]
        for name, (gamma, lift_all) in variants.items():
            lifted = [True] * len(candidates) if lift_all else shipped_lift
            selection = [score_of(clipped_logit(b) + gamma * prior[d]) for b, (d, *_) in zip(base, candidates)]
            gate = [gate_score(up, s, g) for up, s, g in zip(lifted, strip_scores, selection)]
            best_first = sorted(range(len(candidates)), key=lambda i: selection[i], reverse=True)
            ranked = distinct([s for _, _, s in candidates], best_first, ctx.top_k_strips)
            kept = [i for n, i in enumerate(ranked) if gate[i] >= ctx.strip_threshold or n == 0]
            kept_texts = [candidates[i][2] for i in kept]
            hits[name][qid] = any(a in t for t in kept_texts for a in rec["answers"])
            if name == shipped and not hits[name][qid]:
                deeper = distinct([s for _, _, s in candidates], best_first, 2 * ctx.top_k_strips)[len(ranked) :]
                found = [n for n, i in enumerate(deeper) if any(a in candidates[i][2] for a in rec["answers"])]
                print(qid, rec["action"], "next strips hold an answer at", found)
            tokens[name] += sum(len(t.split()) for t in kept_texts)
            if name == shipped and sorted(kept_texts) != sorted(s["text"] for s in recorded):
                mismatched += 1
    print(f"{considered} questions (Correct or Ambiguous, answer among the retrieved documents, strips chosen)")
    print(f"gamma 0 differs from the recorded internal strips for {mismatched}")
    print(f"recorded internal strip words: {recorded_tokens}")
    base = hits.get(shipped)
    for name in variants:
        got = sum(hits[name].values())
        line = f"{name}: strip recall {got}/{considered} = {got / max(considered, 1):.1%}, words {tokens[name]}"
        if base is not None:
            gained = [q for q in hits[name] if hits[name][q] and not base[q]]
            lost = [q for q in hits[name] if base[q] and not hits[name][q]]
            line += f", gained {len(gained)} {gained[:8]}, lost {len(lost)} {lost[:8]}"
        print(line)


if __name__ == "__main__":
    main()
