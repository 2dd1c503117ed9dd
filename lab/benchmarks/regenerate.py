"""Ask the model again for recorded answers, with another generation prompt or without stop labels.

The generation prompt and the stop labels act on one model call, `generate`'s: everything before it
(retrieval, grading, refinement, the web) and the knowledge it is given are recorded by `crag eval run`.
So their ablation needs that one call again, on the recorded strips, not the whole run. For each prompt
this asks the run's chat model once without stop labels (greedy decoding: the reply with them is the
same reply cut before the first label, which is what llama.cpp and the APIs do), then feeds both drafts
through `generate`'s rules as `answer_rules.py` does and scores them.

    python -m lab.benchmarks.regenerate artifacts/eval/models/local-docs --prompts compact,marked,paper

The first row checks the method: the run's own prompt with its stop labels should reproduce the
recorded drafts ("drafts as recorded"; a few differ when the run's machine computed differently).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from answer_rules import print_rows, recorded, replay, score  # this folder's replay of `generate`'s rules
from tqdm.auto import tqdm

from crag import resources
from crag.nodes.answering import format_knowledge
from crag.prompts import GENERATE_PROMPTS, GENERATE_STOP, generation_prompt
from crag.settings import Context


def cut(reply: str, labels: list[str]) -> str:
    """The reply as generation with `labels` as stop sequences returns it: up to the first label."""
    ends = [reply.find(label) for label in labels if label in reply]
    return reply[: min(ends)] if ends else reply


def regenerate(records: list[dict], chat_model: str, prompt: str, max_tokens: int) -> dict[str, str]:
    """Each record's raw reply to `prompt` over its recorded strips, without stop labels (by qid)."""
    ctx = Context(chat_model=chat_model, evaluator=None, generate_prompt=prompt, max_answer_tokens=max_tokens)
    model = resources.chat(ctx, "answer")
    replies = {}
    for record in tqdm(records, desc=prompt, leave=False):
        if not record["strips"]:  # the model is not asked without knowledge
            continue
        text = generation_prompt(prompt, knowledge=format_knowledge(record["strips"]), question=record["question"])
        replies[record["qid"]] = str(model.invoke(text).content)
    return replies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a `crag eval run` output folder")
    parser.add_argument("--system", default="crag")
    parser.add_argument("--prompts", default=",".join(GENERATE_PROMPTS), help="comma-separated prompt names")
    parser.add_argument("--limit", type=int, help="the first N records only (a quick look)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    info, records = recorded(args.folder, args.system)
    records = records[: args.limit]
    quote = info["quote_thresholds"][args.system]
    rows: dict[str, Any] = {"recorded answers": score(records, lambda r: r["answer"])}
    rows["recorded drafts"] = score(records, lambda r: r["draft"] or "")
    # the raw replies by prompt, kept in the JSON to score them again with later rules without the model
    asked: dict[str, dict[str, str]] = {}
    for prompt in args.prompts.split(","):
        replies = asked[prompt] = regenerate(records, info["chat_model"], prompt, info["max_answer_tokens"])
        for stops in (True, False):
            name = f"{prompt}, {'with' if stops else 'without'} stop labels"
            reply = {qid: cut(text, GENERATE_STOP) if stops else text for qid, text in replies.items()}
            # `generate` itself turns each reply into its draft (unmarked, tidied) and its answer; the reply stands
            # for the first ask (a second ask, `Context.retry_prompt`, would be given the same reply again)
            out = {
                r["qid"]: replay(
                    {**r, "draft": reply.get(r["qid"], ""), "asked_again": False}, quote, {"generate_prompt": prompt}
                )
                for r in records
            }
            rows[f"{name}: drafts"] = score(records, lambda r, o=out: o[r["qid"]]["draft"])
            rows[f"{name}: answers"] = score(records, lambda r, o=out: o[r["qid"]]["answer"])
            if prompt == info["generate_prompt"] and stops:
                rows[f"{name}: drafts"]["differs_from_recorded"] = sum(
                    out[r["qid"]]["draft"] != (r["draft"] or "") for r in records
                )
            rows[f"{name}: answers"]["stop_label_cut"] = sum(
                cut(reply, GENERATE_STOP) != reply for reply in replies.values()
            )
    print(f"\n{args.folder} ({args.system}, {len(records)} answers, {info['chat_model']})")
    print_rows(rows, 52, ("differs_from_recorded", "stop_label_cut"))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**rows, "replies": asked}, indent=2) + "\n")


if __name__ == "__main__":
    main()
