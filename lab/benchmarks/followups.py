"""Follow-up questions: the rules, the model asked to condense, and both in either order, side by side.

`contextualize` makes a follow-up self-contained before anything is retrieved: the chat model with
`CONDENSE_PROMPT` first, the rules of `crag.questions.followup` when its rewrite is unusable, and the
previous question appended when neither gives one (the rules came first until 2026-11-27, when this
benchmark showed the model first right more often). This asks which source of a rewrite
earns its place, and in which order (each case asks the rules and the model once; every order is
judged on the same replies), on three sets:

- the hand-written cases of tests/unit/methods/test_followups.py (`RESOLVED`: 61 follow-ups after one or
  two turns, written while building the rules, so they favour them);
- follow-ups made from PopQA's validation questions, which nobody here wrote: turn 1 is the question
  and its first gold answer, turn 2 asks about the same subject by a pronoun ("What was his occupation?"
  after "In what city was X born?"; "Where was she born?" after "What is X's occupation?"; "Who made
  it?" after "What genre is X?"). The only person or thing in the conversation is the subject, so a
  right rewrite names it whichever pronoun is used. Only the three templates are ours;
- self-contained questions that the rules take for follow-ups, because a pronoun in them refers inside
  the question ("how do I stop bc from printing its welcome banner"): every question of HotpotQA and
  MuSiQue (`relevance/multihop_pairs.jsonl`), of PopQA and of the documentation set that `refers_back`
  flags, each asked after the question before it in its file (and that question's answer: its gold
  answer, or for HotpotQA and MuSiQue the title of a supporting paragraph), as in `crag chat` on a
  thread of unrelated questions. A rewrite is right when it brings in no word of that earlier turn.

A rewrite is right when it names the referent (the hand-written case's words the follow-up lacks; the
PopQA subject), exact when it equals the hand-written one (case and final "?" aside), and "appended"
when it is the follow-up with the previous question in brackets (the last resort). Prints seconds per
follow-up too: the model's rewrite is a model call on every follow-up the rules could resolve.

    python -m lab.benchmarks.followups --chat-model local --limit 120
    python -m lab.benchmarks.followups --chat-model local --follow-up "Who made it?"
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

from tqdm.auto import tqdm

from crag import resources
from crag.evaluation.inputs import read_questions
from crag.jsonl import read_objects
from crag.knowledge.web_query import content_words
from crag.nodes.contextualize import model_condensed
from crag.questions.followup import append_previous, plain_question, refers_back, resolve
from crag.settings import Context
from crag.state import Turn
from lab.evaluator.data import data_dir

# prop of the first question -> the follow-up asked after it ({p}: a pronoun of the subject)
FOLLOW_UPS = {
    "place of birth": ("What was {p} occupation?", ("his", "her")),
    "occupation": ("Where was {p} born?", ("he", "she")),
    "genre": ("Who made {p}?", ("it", "it")),
}


def turn(question: str, answer: str) -> Turn:
    return Turn(asked=question, question=question, answer=answer)


def hand_written() -> list[dict]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for `tests`
    from tests.unit.methods.test_followups import RESOLVED

    cases = []
    for history, question, expected in RESOLVED:
        referent = content_words(expected) - content_words(question)
        cases.append({"history": history, "question": question, "expected": expected, "referent": sorted(referent)})
    return cases


def from_popqa(path: Path, limit: int | None) -> list[dict]:
    cases = []
    for n, q in enumerate(read_questions(path)):
        template, subject = FOLLOW_UPS.get(q.extra.get("prop", "")), q.extra.get("subject")
        if not template or not subject:
            continue
        text, pronouns = template
        answer = q.answers[0]
        reply = f"{answer[0].upper()}{answer[1:]}."
        question = text.format(p=pronouns[n % 2])
        cases.append({"history": [turn(q.question, reply)], "question": question, "subject": subject})
    return cases[:limit]


def _sources(shared: Path, docs: Path) -> list[list[tuple[str, str]]]:
    """Each file's questions in order with an answer: HotpotQA and MuSiQue (a supporting title), PopQA and the
    documentation set (a gold answer)."""
    multihop: dict[str, tuple[str, str]] = {}
    for _, row in read_objects(shared / "relevance" / "multihop_pairs.jsonl"):
        if row["label"] == 1 or row["qid"] not in multihop:
            multihop[row["qid"]] = (row["question"], f"{row['title']}.")
    sources = [list(multihop.values())]
    for path in (shared / "popqa" / "questions.jsonl", docs):
        sources.append([(q.question, f"{(q.answers or ['I do not know'])[0]}.") for q in read_questions(path)])
    return sources


def _after_the_one_before(shared: Path, docs: Path, flagged: bool) -> list[dict]:
    """Each question whose `refers_back` is `flagged`, asked after the question before it in its file."""
    return [
        {"history": [turn(before, answer)], "question": question}
        for pairs in _sources(shared, docs)
        for (before, answer), (question, _) in pairwise(pairs)
        if refers_back(question) == flagged
    ]


def self_contained(shared: Path, docs: Path) -> list[dict]:
    """Questions that stand alone but that `refers_back` flags."""
    return _after_the_one_before(shared, docs, True)


def not_flagged(shared: Path, docs: Path, limit: int = 100) -> list[dict]:
    """Questions the rules do not take for follow-ups (every n-th, `limit` of them): the model-first path asks
    the model about them too, and a right rewrite brings nothing of the earlier turn in."""
    cases = _after_the_one_before(shared, docs, False)
    return cases[:: max(1, len(cases) // limit)][:limit]


def consult(ctx: Context, question: str, history: list[Turn]) -> dict:
    """Each source of a rewrite once: the rules', the model's (None when unusable) and its seconds."""
    clock = time.perf_counter()
    model = model_condensed(ctx, question, history)
    return {
        "rules": resolve(question, history),
        "model": model,
        "model_s": time.perf_counter() - clock,
        "appended": append_previous(question, history),
        "question": question,
        "flagged": refers_back(question),
    }


# each order of the sources (the first usable rewrite wins; appending is the last resort), and whether
# it asks the model on this case (for its seconds)
VARIANTS: dict[str, Callable[[dict], tuple[str, bool]]] = {
    # the whole path: whether the rules' gate (`refers_back`) decides that a question is a follow-up at all
    "gate, then the model, then the rules (shipped)": lambda c: (
        (c["model"] or c["rules"] or c["appended"], True) if c["flagged"] else (c["question"], False)
    ),
    "model-first: the model on every turn, then the rules": lambda c: (c["model"] or c["rules"] or c["appended"], True),
    "model-first, no rules (unusable: as asked)": lambda c: (c["model"] or c["question"], True),
    "the rules, then the model": lambda c: (c["rules"] or c["model"] or c["appended"], not c["rules"]),
    "the model, then the rules": lambda c: (c["model"] or c["rules"] or c["appended"], True),
    "the model alone": lambda c: (c["model"] or c["appended"], True),
    "the rules alone": lambda c: (c["rules"] or c["appended"], False),
}


def judge(case: dict, rewritten: str) -> dict[str, bool]:
    appended = rewritten == append_previous(case["question"], case["history"])
    if "expected" not in case and "subject" not in case:  # a self-contained question: nothing brought in
        earlier = content_words(" ".join(f"{t['question']} {t['answer']}" for t in case["history"]))
        brought = (content_words(rewritten) - content_words(case["question"])) & earlier
        right = not brought and not appended
        return {
            "right": right,
            "exact": plain_question(rewritten) == plain_question(case["question"]),
            "appended": appended,
        }
    if "subject" in case:
        right = case["subject"].lower() in rewritten.lower() and not appended
        return {"right": right, "exact": right, "appended": appended}
    words = content_words(rewritten)
    return {
        "right": all(w in words for w in case["referent"]) and not appended,
        "exact": plain_question(rewritten) == plain_question(case["expected"]),
        "appended": appended,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chat-model", default="local")
    parser.add_argument("--popqa", type=Path, default=Path("artifacts/eval/popqa-inputs/questions.jsonl"))
    parser.add_argument("--limit", type=int, help="PopQA follow-ups used (default: all)")
    parser.add_argument("--data-dir", type=Path, help="shared data (default: $CRAG_DATA_DIR or ../shared/data)")
    parser.add_argument(
        "--docs", type=Path, default=Path("artifacts/eval/docs-inputs/questions-with-unanswerable.jsonl")
    )
    parser.add_argument("--follow-up", help='only the PopQA-made follow-ups asking this ("Who made it?")')
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    ctx = Context(chat_model=args.chat_model, evaluator=None)
    resources.warm_chat(ctx)  # loaded, and its follow-up lane filled, before the clock starts (as `crag chat` does)
    made = from_popqa(args.popqa, None)
    made = [c for c in made if args.follow_up in (None, c["question"])][: args.limit]
    sets = {
        "hand-written (61)": hand_written(),
        "PopQA-made": made,
        "self-contained": self_contained(data_dir(args.data_dir), args.docs),
        "not flagged": not_flagged(data_dir(args.data_dir), args.docs),
    }
    results: dict[str, dict] = {}
    for set_name, cases in sets.items():
        consulted = [consult(ctx, c["question"], c["history"]) for c in tqdm(cases, desc=set_name, leave=False)]
        for name, order in VARIANTS.items():
            rows, seconds = [], 0.0
            for case, sources in zip(cases, consulted, strict=True):
                rewritten, asked_model = order(sources)
                seconds += sources["model_s"] if asked_model else 0.0
                rows.append({**judge(case, rewritten), "question": case["question"], "rewritten": rewritten})
            seconds /= max(len(cases), 1)
            row = {k: sum(r[k] for r in rows) / max(len(rows), 1) for k in ("right", "exact", "appended")}
            results[f"{set_name} | {name}"] = {**row, "n": len(rows), "s_per_follow_up": seconds, "rows": rows}
            print(
                f"{set_name:18s} {name:34s} right {100 * row['right']:5.1f}%  exact {100 * row['exact']:5.1f}%  "
                f"appended {100 * row['appended']:5.1f}%  {seconds:.2f} s each  (n={len(rows)})",
                flush=True,
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
