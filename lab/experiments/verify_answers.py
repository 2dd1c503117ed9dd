"""Can the reader check its own answer? The chat model's P(yes) that the passages state the draft, against
the lexical grounding check, replayed on recorded runs.

`generate` withholds a draft that no kept strip supports by word overlap, and a strip only supports it
when it names the question's subject (`crag.answers.attribution`): English word rules, grown around a
135M reader. This asks the run's chat model (the default local 1.5B), for every recorded draft that does
not decline, whether the passages it was given state that answer, in one of two forms (`--form`:
`continuation` asks `VERIFY_QUESTION` after the generation prompt and the draft, in the same
conversation; `fresh` asks `VERIFY_FRESH`, a new prompt with the same passages and question), and reads
P(yes) from its first reply token with `YesNoGrader.score_messages`. The grades are cached per run folder
(`verify-<form>-<model>.jsonl`, one line per answer, so a stopped run resumes), then `generate` is replayed on
each recorded draft (as `answer_rules.py` does) with the decision to let a draft stand made four ways:
the lexical check (shipped), the model's grade alone, either, or both.

    python -m lab.experiments.verify_answers artifacts/eval/models/local-docs --form fresh --cuts 0,0.5,0.8

Measured on 2026-11-27 (docs/reports/2026-11-27-ceiling-of-the-reader.md): ROC-AUC 0.635 (continuation)
and 0.677 (fresh) against the lexical check's 0.732; not used by `generate`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # answer_rules, a script of lab/benchmarks/

from answer_rules import generate_module, patched, print_rows, recorded, replay, score
from tqdm.auto import tqdm

from crag.answers.attribution import abstains, attribute, grounded
from crag.models.gguf import model_file
from crag.nodes.answering import format_knowledge
from crag.prompts import generation_prompt
from crag.records import Citation
from lab.evaluator.llm_teacher import YesNoGrader

# Two forms, both starting with the tokens the generation prompt starts with, which llama.cpp holds in its
# cache after generating, so that a check costs little more than its own few tokens:
# - "continuation": asked after the answer, in the same conversation (the model judges its own words);
# - "fresh": a new prompt, the compact prompt's passages and question, then the draft as someone's proposal.
VERIFY_QUESTION = "Is that answer stated in the passages above? Reply yes or no."
VERIFY_FRESH = (
    "Passages:\n{knowledge}\n\nQuestion: {question}\nProposed answer: {answer}\n"
    "Do the passages above state this answer to the question? Reply yes or no."
)


def messages(form: str, prompt_name: str, record: dict) -> list[dict[str, str]]:
    knowledge = format_knowledge(record["strips"])
    if form == "fresh":
        text = VERIFY_FRESH.format(knowledge=knowledge, question=record["question"], answer=record["draft"])
        return [{"role": "user", "content": text}]
    return [
        {"role": "user", "content": generation_prompt(prompt_name, knowledge=knowledge, question=record["question"])},
        {"role": "assistant", "content": record["draft"]},
        {"role": "user", "content": VERIFY_QUESTION},
    ]


def grades(folder: Path, info: dict, records: list[dict], model: str, form: str) -> dict[str, float]:
    """P(yes) mapped to [-1, 1] for every record whose draft answers (by qid), cached in the folder."""
    cache = folder / f"verify-{form}-{model.replace(':', '-').replace('/', '_')}.jsonl"
    done = {}
    if cache.is_file():
        done = {row["qid"]: row["grade"] for row in map(json.loads, cache.read_text().splitlines())}
    todo = [r for r in records if r["qid"] not in done and r["strips"] and r["draft"] and not abstains(r["draft"])]
    if todo:
        grader = YesNoGrader(model_file(model), n_ctx=4096, reuse_prefix=False)
        with cache.open("a") as out:
            for r in tqdm(todo, desc=f"verify {folder.name}"):
                done[r["qid"]] = grader.score_messages(messages(form, info["generate_prompt"], r))
                out.write(json.dumps({"qid": r["qid"], "grade": done[r["qid"]]}) + "\n")
                out.flush()
    return done


def decided(mode: str, verdicts: dict[tuple[str, str], bool]):
    """`attribute` whose citations let a draft stand as `mode` says: the lexical check's ('lexical'), the
    model's ('model'), either ('either') or both ('both'). A draft the model alone lets stand cites the
    first strip: the replay scores the answer, not its citations."""

    def attribute_as(answer: str, question: str, strips: list) -> list[Citation]:
        citations = attribute(answer, question, strips)
        lexical, model = grounded(citations), verdicts.get((question, answer), False)
        stands = {"lexical": lexical, "model": model, "either": lexical or model, "both": lexical and model}[mode]
        if stands and not lexical:
            return [Citation(sentence=answer, start=0, end=len(answer), sources=[1])]
        if not stands:
            return [Citation(sentence=c["sentence"], start=c["start"], end=c["end"], sources=[]) for c in citations]
        return citations

    return attribute_as


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--system", default="crag")
    parser.add_argument("--model", default="local")
    parser.add_argument("--form", choices=["continuation", "fresh"], default="fresh")
    parser.add_argument("--cuts", default="-0.5,0,0.5", help="P(yes) cuts, mapped to [-1, 1]")
    args = parser.parse_args()
    for folder in args.folders:
        info, records = recorded(folder, args.system)
        graded = grades(folder, info, records, args.model, args.form)
        quote = info["quote_thresholds"][args.system]
        rows = {"drafts as recorded": score(records, lambda r: r["draft"] or "")}
        for cut in [float(c) for c in args.cuts.split(",")]:
            verdicts = {(r["question"], r["draft"]): graded.get(r["qid"], -1.0) >= cut for r in records}
            for mode in ("lexical", "model", "either", "both"):
                name = f"{mode} (cut {cut:+.1f})" if mode != "lexical" else "lexical (shipped)"
                if name in rows:
                    continue
                with patched(generate_module, "attribute", decided(mode, verdicts)):
                    answers = {r["qid"]: replay(r, quote, {})["answer"] for r in records}
                rows[name] = score(records, lambda r, answers=answers: answers[r["qid"]])
        print(f"\n{folder} ({len(records)} answers, {len(graded)} drafts graded)")
        print_rows(rows, max(map(len, rows)))


if __name__ == "__main__":
    main()
