"""Can the local chat model write the question a user asks who does not know the passage's words?

Users of documentation describe a goal or a problem ("my pipeline breaks on file names with spaces") where
the passage names the option; the generated questions repeat the passage's words (80% of their terms, against
51% for the documentation set's hand-written questions; docs/reports/2026-11-29-what-holds-the-evaluator-back.md).
This asks the model, with two worked examples as earlier chat turns (from `rm` and `head`, pages no set uses),
for one such question for each of a seeded sample of the generated documentation passages, and reports the
share of its terms found in the passage beside the committed questions' styles, and the teacher's grade of the
passage for it (the chat model asked LangGraph's grading prompt, P(yes) in [-1, 1]): a question the teacher
does not find answered cannot be labelled by it.

    python -m lab.experiments.problem_questions --passages 15
"""

from __future__ import annotations

import argparse
import random

import numpy as np
from generated_curve import share
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from crag.jsonl import appended_objects
from crag.models.chat import chat_model, relevance

SYSTEM = (
    "You write the question a user types when they need what a passage explains but have not read it and do not "
    "know its names. Describe the goal or the problem in everyday words; never use the passage's option, function "
    "or command names. Reply with the one question only."
)
EXAMPLES = [
    (
        "rm",
        "-i  prompt before every removal",
        "I keep deleting the wrong files by accident, can it ask me before each one?",
    ),
    (
        "head",
        "-n, --lines=NUM  print the first NUM lines instead of the first 10",
        "how do i look at only the start of a huge log file",
    ),
]
STYLES = ("how-to", "detail", "casual")


def messages(title: str, text: str) -> list:
    turns = [SystemMessage(SYSTEM)]
    for page, passage, question in EXAMPLES:
        turns += [HumanMessage(f'Passage from "{page}":\n{passage}'), AIMessage(question)]
    return [*turns, HumanMessage(f'Passage from "{title}":\n{text}')]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", default="data/generated-questions.jsonl")
    parser.add_argument("--passages", type=int, default=15)
    parser.add_argument("--model", default="local")
    parser.add_argument("--chars", type=int, default=1500, help="the passage's text shown to the model")
    args = parser.parse_args()

    records = [
        r for r in appended_objects(args.questions) if r["kind"] in ("man", "pydoc", "doc") and r.get("questions")
    ]
    random.Random(3).shuffle(records)
    writer, judge = chat_model(args.model, max_tokens=60), chat_model(args.model, max_tokens=3)
    shares: dict[str, list[float]] = {"problem (new)": [], **{s: [] for s in STYLES}}
    grades = []
    for record in records[: args.passages]:
        text = record["text"][: args.chars]
        page = f"{record['title']} {text}"
        reply = str(writer.invoke(messages(record["title"], text)).content).strip()
        question = reply.splitlines()[0] if reply else ""
        grade = relevance(judge, question, f"{record['title']}\n{text}")
        shares["problem (new)"].append(share(question, page))
        grades.append(grade)
        for style in STYLES:
            if style in record["questions"]:
                shares[style].append(share(record["questions"][style], page))
        print(
            f"{record['title']}: {question!r} (terms in passage {shares['problem (new)'][-1]:.2f}, teacher {grade:+.2f})"
        )
    print("| questions | share of terms in the passage: median / mean |\n|---|---|")
    for name, values in shares.items():
        print(f"| {name} | {np.nanmedian(values):.2f} / {np.nanmean(values):.2f} |")
    low = [g for s, g in zip(shares["problem (new)"], grades) if s < 0.5]
    print(
        f"teacher's grade of the passage, new questions: median {np.median(grades):+.2f}; "
        f"for the {len(low)} sharing under half their terms: {', '.join(f'{g:+.2f}' for g in low)}"
    )


if __name__ == "__main__":
    main()
