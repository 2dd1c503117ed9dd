"""Run `generate` itself again on a recorded run's knowledge, with the run's prompt or a prompt of your own.

`regenerate.py` asks the model once per prompt and replays the answer rules on that one reply. Since
2026-11-28 a first answer that declines, with nothing to quote, is asked again with `Context.retry_prompt`,
which that replay cannot do. This calls the `generate` node on each question's recorded strips, so the
prompt, the rules, the quote and the second ask are all the run's. `--prompt-file` puts its text (with
`{knowledge}` and `{question}`) in place of the run's generation prompt for this process only.
`--examples` puts three invented worked turns before the run's first prompt (see `WorkedTurns`). `--qids`
picks questions for a quick look.

Each answer goes to one JSON line of `--out` as it is written. A rerun with the same `--out` goes on where
the last one stopped. At the end the replay is compared, question by question, with the recorded answers.

    python -m lab.experiments.replay_generate artifacts/eval/models/local-docs \\
        --prompt-file my_prompt.txt --out artifacts/bench/replay-my-prompt.jsonl
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # answer_rules: a script of lab/benchmarks/

from answer_rules import recorded, right_answer
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.runtime import Runtime
from tqdm.auto import tqdm

from crag import prompts, resources
from crag.answers.attribution import abstains
from crag.jsonl import appended_objects, drop_torn_line
from crag.settings import Context

# the module, not the node `crag.nodes` exports under the same name
generate_node = importlib.import_module("crag.nodes.generate").generate


# Worked turns for `--examples` (docs/reports/2026-11-29-worked-turns-and-rank-fusion.md): an option named for a
# task, a person's occupation, and "I don't know." for a passage without the answer. Invented (a tool `frobctl`, a
# cellist Mara Velden) so that they can teach no answer of any set.
FROBCTL = (
    "frobctl: frobctl sync [--dry-run] [--prune] SOURCE TARGET. Copies every file of SOURCE that is newer than "
    "its copy in TARGET. --dry-run Show what would be copied, and copy nothing. --prune Remove files from TARGET "
    "whose source is gone. --jobs N Copy N files at a time (default 1)."
)
VELDEN = (
    "Mara Velden: Mara Velden (born 12 March 1961 in Zwolle) is a Dutch cellist and composer. She taught at the "
    "Royal Conservatory of The Hague from 1990 to 2015."
)
EXAMPLES = [  # (passages, question, the reply shown)
    (
        FROBCTL,
        "how do i see what frobctl sync would change without it touching anything",
        "Run `frobctl sync --dry-run`: it shows what would be copied and copies nothing.",
    ),
    (VELDEN, "What is Mara Velden's occupation?", "Mara Velden is a cellist and composer."),
    (FROBCTL, "Which frobctl option sets the log file?", "I don't know."),
]


class WorkedTurns(BaseChatModel):
    """A chat model with the `EXAMPLES` as earlier turns before every prompt of the run's first kind (the
    second ask's prompt goes as it is). The 1.5B follows examples given as chat turns where it does not
    follow them inside one message (docs/reports/2026-11-29-what-holds-the-evaluator-back.md, section 4)."""

    inner: BaseChatModel
    prompt: str  # the run's generation prompt, by name

    @property
    def _llm_type(self) -> str:
        return "worked-turns"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager=None, **kwargs):
        head = prompts.GENERATE_PROMPTS[self.prompt].split("{", 1)[0]  # the first prompt's opening words
        if str(messages[-1].content).startswith(head):
            turns: list[BaseMessage] = []
            for passages, question, reply in EXAMPLES:
                text = prompts.generation_prompt(self.prompt, knowledge=passages, question=question)
                turns += [HumanMessage(text), AIMessage(reply)]
            messages = [*turns, *messages]
        reply = self.inner.invoke(messages, stop=stop)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(str(reply.content)))])


def right(record: dict, answer: str) -> bool:
    """`answer_rules`' accuracy test, for an answerable question."""
    return record.get("answerable", True) and right_answer(record, answer)


def replay(record: dict, ctx: Context) -> dict:
    """`generate`'s update for the record's question over its recorded strips, as the run's last node saw them."""
    state = {"question": record["question"], "action": "correct", "internal_knowledge": record["strips"]}
    return generate_node(state, Runtime(context=ctx))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a `crag eval run` output folder")
    parser.add_argument("--out", type=Path, required=True, help="JSON lines, one a question (resumed if it exists)")
    parser.add_argument("--system", default="crag")
    parser.add_argument("--prompt-file", type=Path, help="a generation prompt with {knowledge} and {question}")
    parser.add_argument("--examples", action="store_true", help="worked turns before the first prompt")
    parser.add_argument("--qids", help="comma-separated question ids (default: every question)")
    args = parser.parse_args()

    info, records = recorded(args.folder, args.system)
    if args.qids:
        wanted = set(args.qids.split(","))
        records = [r for r in records if r["qid"] in wanted]
    if args.prompt_file:
        text = args.prompt_file.read_text()
        if "{knowledge}" not in text or "{question}" not in text:
            raise SystemExit(f"{args.prompt_file}: a prompt needs {{knowledge}} and {{question}}")
        prompts.GENERATE_PROMPTS[info["generate_prompt"]] = text
    ctx = Context(
        chat_model=info["chat_model"],
        max_answer_tokens=info["max_answer_tokens"],
        generate_prompt=info["generate_prompt"],
        retry_prompt=info.get("retry_prompt"),
        quote_threshold=info["quote_thresholds"][args.system],
    )
    if args.examples:
        ctx.chat_model = WorkedTurns(inner=resources.chat(ctx, "answer"), prompt=info["generate_prompt"])
    # a torn last line (a run killed while writing) is skipped and that question asked again
    done = {row["qid"]: row for row in appended_objects(args.out)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    drop_torn_line(args.out)  # so that the next row starts on a line of its own
    with args.out.open("a") as out:
        for record in tqdm([r for r in records if r["qid"] not in done], desc="generate"):
            clock = time.perf_counter()
            # a question that reached `generate` with no knowledge was not asked; its answer stands as recorded
            update = replay(record, ctx) if record["strips"] else {"answer": record["answer"], "draft": ""}
            row = {
                "qid": record["qid"],
                "answer": update["answer"],
                "draft": update["draft"],
                "asked_again": bool(update.get("asked_again")),
                "quoted": bool(update.get("quoted")),
                "seconds": round(time.perf_counter() - clock, 2),
            }
            out.write(json.dumps(row) + "\n")
            out.flush()
            done[record["qid"]] = row

    pairs = [(r, done[r["qid"]]) for r in records if r["qid"] in done]
    answerable = [(r, row) for r, row in pairs if r.get("answerable", True)]
    unanswerable = [(r, row) for r, row in pairs if not r.get("answerable", True)]
    was = sum(right(r, r["answer"]) for r, _ in answerable)
    now = sum(right(r, row["answer"]) for r, row in answerable)
    gained = [r["qid"] for r, row in answerable if right(r, row["answer"]) and not right(r, r["answer"])]
    lost = [r["qid"] for r, row in answerable if right(r, r["answer"]) and not right(r, row["answer"])]
    print(f"\n{args.folder} ({args.system}, {len(pairs)} questions, {info['chat_model']})")
    print(f"answerable right: recorded {was} of {len(answerable)}, replayed {now}")
    print(f"  gained {len(gained)}: {', '.join(gained) or '-'}")
    print(f"  lost {len(lost)}: {', '.join(lost) or '-'}")
    declined = (
        sum(abstains(r["answer"]) for r, _ in unanswerable),
        sum(abstains(row["answer"]) for _, row in unanswerable),
    )
    print(f"unanswerable declined: recorded {declined[0]} of {len(unanswerable)}, replayed {declined[1]}")


if __name__ == "__main__":
    main()
