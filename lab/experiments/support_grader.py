"""Would the chat model's own "is this answer supported?" grade withhold better than the lexical check?

`generate` withholds a draft when no kept strip states most of the words it adds to the question
(`crag.answers.attribution`). That check is lexical. It withholds right drafts that say the answer in
other words ("terminated by a signal" against "negative for signals"), and it passes drafts that the model
wrote from its own knowledge when a strip happens to share their words. LangGraph's Self-RAG and adaptive
RAG tutorials check a generation with the chat model instead: its "hallucination grader" prompt, quoted
below, asks whether the answer is grounded in the retrieved facts.

This reads a `crag eval run` folder's CRAG records. For every draft that is not a decline, it asks the
local model that prompt over the strips the generator was given, and reads P(yes) from the first reply
token (`crag.models.yes_no.LlamaYesNo`, as the second opinion grades documents). A draft is "good" when
its question is answerable and the draft holds an answer. The script prints the two checks' ROC-AUC
against that label, and what each keeps: right drafts, wrong answerable drafts and unanswerable
questions answered. It also prints the lexical check with the model's grade as a second chance (a draft
stands when either passes), the way the second opinion backs up the evaluator.

No answer is written and nothing in the run folder changes. Each grade is one line of `--out`, and a
rerun with the same `--out` goes on where the last one stopped.

    python -m lab.experiments.support_grader artifacts/eval/models/local-docs-k10 \\
        --out artifacts/bench/support-docs.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # answer_rules: a script of lab/benchmarks/

from answer_rules import recorded
from sklearn.metrics import roc_auc_score
from tqdm.auto import tqdm

from crag.answers.attribution import abstains
from crag.jsonl import appended_objects, drop_torn_line
from crag.models.gguf import model_file
from crag.nodes.answering import format_knowledge
from lab.evaluator.llm_teacher import YesNoGrader

# the hallucination grader of LangGraph's Self-RAG and adaptive RAG tutorials (langgraph/examples/rag/
# langgraph_self_rag.ipynb, langgraph_adaptive_rag.ipynb, with gpt-3.5-turbo), its words and line ends
SYSTEM = """You are a grader assessing whether an LLM generation is grounded in / supported by a set of retrieved facts. \n
     Give a binary score 'yes' or 'no'. 'Yes' means that the answer is grounded in / supported by the set of facts."""
HUMAN = "Set of facts: \n\n {documents} \n\n LLM generation: {generation}"


def drafts(folder: Path, system: str) -> list[dict]:
    """The system's records whose draft is an answer (not a decline) written from some strips."""
    _, records = recorded(folder, system)
    return [r for r in records if r["draft"] and r["strips"] and not abstains(r["draft"])]


def tally(rows: list[dict]) -> str:
    right = sum(r["answerable"] and r["draft_correct"] for r in rows)
    wrong = sum(r["answerable"] and not r["draft_correct"] for r in rows)
    unanswerable = sum(not r["answerable"] for r in rows)
    return f"{len(rows)} kept: {right} right, {wrong} wrong (answerable), {unanswerable} unanswerable answered"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a `crag eval run` output folder")
    parser.add_argument("--system", default="crag")
    parser.add_argument("--out", type=Path, required=True, help="one JSON line per graded draft (resumable)")
    parser.add_argument("--chat-model", default="local", help="a local model: P(yes) needs its token probabilities")
    args = parser.parse_args()

    todo = drafts(args.run, args.system)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    drop_torn_line(args.out)
    graded = {r["qid"]: r for r in appended_objects(args.out)}
    left = [r for r in todo if r["qid"] not in graded]
    grader = YesNoGrader(model_file(args.chat_model), n_ctx=4096) if left else None  # 1.1 GB: only when needed
    with args.out.open("a") as out:
        for record in tqdm(left, desc="support", unit="draft"):
            knowledge = format_knowledge(record["strips"])
            messages = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": HUMAN.format(documents=knowledge, generation=record["draft"])},
            ]
            started = time.perf_counter()
            score = grader.score_messages(messages)
            row = {
                "qid": record["qid"],
                "answerable": record["answerable"],
                "draft_correct": record["draft_correct"],
                "lexical": record["replaced"] != "unsupported",
                "model": round(score, 4),
                "seconds": round(time.perf_counter() - started, 3),
            }
            graded[row["qid"]] = row
            out.write(json.dumps(row) + "\n")
            out.flush()

    rows = [graded[r["qid"]] for r in todo]
    good = [int(r["answerable"] and r["draft_correct"]) for r in rows]
    print(f"{len(rows)} drafts, {sum(good)} good (answerable and right)")
    if 0 < sum(good) < len(rows):
        print(
            f"ROC-AUC: the model's grade {roc_auc_score(good, [r['model'] for r in rows]):.3f}, "
            f"the lexical check {roc_auc_score(good, [r['lexical'] for r in rows]):.3f}"
        )
    print("the lexical check (shipped):  ", tally([r for r in rows if r["lexical"]]))
    print("the model's grade, P(yes) > ½: ", tally([r for r in rows if r["model"] > 0]))
    print("either:                       ", tally([r for r in rows if r["lexical"] or r["model"] > 0]))
    print("both:                         ", tally([r for r in rows if r["lexical"] and r["model"] > 0]))
    print(f"seconds a draft, p50: {statistics.median(r['seconds'] for r in rows):.2f}")


if __name__ == "__main__":
    main()
