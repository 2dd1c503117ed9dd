"""Replay the answer path on recorded drafts, with each of its rules switched off in turn.

`crag eval run` records, for every answer, the model's draft and the strips it was given. This script
feeds each draft back through `generate` (a stand-in chat model returns the recorded draft word for
word, so no model runs) and reports, per rule left out, how many final answers are right, how many
answerable questions are declined and how many unanswerable ones, beside the drafts themselves: a
rule that costs accuracy, or that no longer changes anything with a stronger reader, shows here.

What cannot be replayed (the prompts, the stop labels, the follow-up and rewrite prompts) needs the
model again: see the generator issue's ablation plan.

    python -m lab.benchmarks.answer_rules artifacts/eval/models/qwen1.5b-docs [more run folders] [--system crag]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel

from crag.answers import attribution
from crag.answers.attribution import abstains
from crag.evaluation import answer_metrics as metrics
from crag.evaluation.runner import PREDICTIONS, PredictionStore
from crag.settings import Context

# the module, not the node function that crag.nodes exports under the same name
generate_module = importlib.import_module("crag.nodes.generate")


@contextlib.contextmanager
def patched(target: Any, name: str, value: Any) -> Iterator[None]:
    before = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, before)


# rule -> what switches it off: (module, name, replacement) patches and Context overrides
ABLATIONS: dict[str, tuple[list[tuple[Any, str, Any]], dict[str, Any]]] = {
    "all rules (as shipped)": ([], {}),
    # on a run recorded before 2026-11-28 the model was asked once a question: there the two rows are equal
    "ask once (no second prompt when the first answer does not stand)": ([], {"retry_prompt": None}),
    "no loop rule": ([(generate_module, "loops", lambda draft: False)], {}),
    "no withholding of unsupported answers": ([], {"answer_without_knowledge": True}),
    "no quoting at all": ([], {"quote_threshold": 2.0}),
    "no subject rule": ([(attribution, "concerns", lambda question, strips, **_: [True] * len(strips))], {}),
    "the answers' subject any rarest word, capitalised or not (before the evening of 2026-11-27)": (
        [(attribution, "subject", lambda question, names_only=False, _subject=attribution.subject: _subject(question))],
        {},
    ),
    "no says-something rule": ([(attribution, "says_something", lambda question, strip: True)], {}),
    "no title tidying (a copied title stays in the answer)": (
        [(generate_module, "split_echo", lambda sentence, titles: ("", sentence))],
        {},
    ),
    "no rare-word support (every claimed word counts)": (
        [(attribution, "informative", lambda sentence, claimed: claimed)],
        {},
    ),
    "no subject by document (each strip on its own)": ([(attribution, "_document", lambda strip: id(strip))], {}),
    "drafts only (no rule, no quote)": (
        [(generate_module, "loops", lambda draft: False)],
        {"answer_without_knowledge": True, "quote_threshold": 2.0, "retry_prompt": None},
    ),
}


def replay(record: dict, quote_threshold: float, overrides: dict[str, Any]) -> dict:
    """`generate`'s output for a recorded draft and strips."""
    further = record.get("further_strips") or []
    strips = (
        record["strips"][: len(record["strips"]) - len(further)] if record.get("read_further") else record["strips"]
    )
    internal = [s for s in strips if s.get("origin") == "internal"]
    external = [s for s in strips if s.get("origin") != "internal"]
    state = {
        "question": record["question"],
        "action": record.get("action") or "ambiguous",  # RAG: every strip, in order, as Ambiguous gives them
        "internal_knowledge": internal,
        "external_knowledge": external,
        "further_knowledge": further,
    }
    settings = {"quote_threshold": quote_threshold, **overrides}
    # a record whose model was asked twice (`Context.retry_prompt`) replays both replies in order; one asked once
    # gives its one draft to a second question too, which the rules then judge as they judged the first. So a row
    # that makes a second ask happen where the run made none (no quoting) stands for a model that says the same
    # again: exact only where the run asked too
    # (and before them, when the model declined over the kept strips, its reply over the further ones)
    asked_more = record.get("asked_again") or record.get("read_further")
    drafts = [record["first_draft"] if asked_more else record["draft"]]
    if further and abstains(drafts[0]):
        drafts.append(record.get("further_draft", ""))
    if record.get("asked_again"):
        drafts.append(record["draft"])
    ctx = Context(chat_model=FakeListChatModel(responses=[d or "" for d in drafts]), evaluator=None, **settings)
    return generate_module.generate(state, SimpleNamespace(context=ctx, stream_writer=lambda event: None))


def right_answer(record: dict, answer: str) -> bool:
    """The run's accuracy test for one answer to an answerable question: an answer string in it, case as
    written, its citation markers aside."""
    return metrics.match(metrics.strip_citations(answer), record["answers"], case_sensitive=True)


def score(records: list[dict], answer_of: Callable[[dict], str]) -> dict:
    """Accuracy and declines of `answer_of`'s answers. A question that reached `generate` with no knowledge
    keeps its recorded answer in every row: the model was not asked, so there is no draft to replay (its
    empty draft counted as an answer that did not decline until the evening of 2026-11-27, and the rows that switch
    withholding off, or show the drafts, under-counted declines on unanswerable questions)."""
    said = {r["qid"]: answer_of(r) if r.get("strips") else r["answer"] for r in records}
    answerable = [r for r in records if r.get("answerable", True)]
    unanswerable = [r for r in records if not r.get("answerable", True)]
    right = sum(right_answer(r, said[r["qid"]]) for r in answerable)
    return {
        "accuracy": right / max(len(answerable), 1),
        "abstained_answerable": sum(abstains(said[r["qid"]]) for r in answerable) / max(len(answerable), 1),
        "declined_unanswerable": sum(abstains(said[r["qid"]]) for r in unanswerable) / max(len(unanswerable), 1),
    }


def recorded(folder: Path, system: str) -> tuple[dict, list[dict]]:
    """A run's settings (run.json) and the answers `system` gave without error, strips included."""
    info = json.loads((folder / "run.json").read_text())
    records = list(PredictionStore(folder / PREDICTIONS).records.values())
    records = [r for r in records if r["system"] == system and not r.get("error")]
    if not any(r.get("strips") for r in records):  # runs from before RAG's strips were recorded
        raise SystemExit(f"{folder}: no strips recorded for {system}; run it again to replay its answers")
    return info, records


def print_rows(rows: dict[str, dict], width: int, notes: tuple[str, ...] = ()) -> None:
    """The scores as a table: accuracy and declines per row, then the row's `notes` keys that it holds."""
    print(f"{'':{width}s} {'accuracy':>9s} {'declined, answerable':>21s} {'declined, unanswerable':>23s}")
    for name, row in rows.items():
        extra = "".join(f"  {k}: {v}" for k, v in row.items() if k in notes)
        print(
            f"{name:{width}s} {100 * row['accuracy']:8.1f}% {100 * row['abstained_answerable']:20.1f}% "
            f"{100 * row['declined_unanswerable']:22.1f}%{extra}"
        )


def run_folder(folder: Path, system: str) -> dict[str, dict]:
    info, records = recorded(folder, system)
    quote = info["quote_thresholds"][system]
    rows = {"recorded answers": score(records, lambda r: r["answer"])}
    rows["drafts as recorded"] = score(records, lambda r: r["draft"] or "")
    for name, (patches, overrides) in ABLATIONS.items():
        with contextlib.ExitStack() as stack:
            for target, attr, value in patches:
                stack.enter_context(patched(target, attr, value))
            answers = {r["qid"]: replay(r, quote, overrides)["answer"] for r in records}
        rows[name] = score(records, lambda r, answers=answers: answers[r["qid"]])
        if not patches and not overrides:  # the same code as the run's gives back what it answered
            rows[name]["differs_from_recorded"] = sum(answers[r["qid"]] != r["answer"] for r in records)
    for row in rows.values():
        row["n"] = len(records)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--system", default="crag")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = {}
    for folder in args.folders:
        rows = results[str(folder)] = run_folder(folder, args.system)
        n = next(iter(rows.values()))["n"]
        print(f"\n{folder} ({args.system}, {n} answers)")
        print(
            f"(replayed with today's rules: {rows['all rules (as shipped)']['differs_from_recorded']} answers differ "
            "from the run's; none when this code made the run)"
        )
        print_rows(rows, 72)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
