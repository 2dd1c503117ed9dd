"""`python -m lab evaluator generate-questions`: the chat model writes questions for passages of this machine's
documentation and Wikipedia (issue 47; the work is `lab.evaluator.generated`), and
`python -m lab evaluator teacher-labels`: it grades their training pairs, as the evaluator's teacher
(`lab.evaluator.llm_teacher`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crag.cli.common import fail
from crag.evaluator.pairs import read_pairs
from crag.models.chat import CHAT_MODEL_HELP, chat_model
from crag.models.gguf import ModelFileError, model_file
from crag.passages import titled
from lab.datasets.docs_domain import SOURCES
from lab.evaluator.data import data_dir as shared_data_dir
from lab.evaluator.faq import FAQ_FILES
from lab.evaluator.generated import Exclusions, candidate_passages, generate_questions
from lab.evaluator.llm_teacher import YesNoGrader, label_pairs

DEFAULT_OUT = Path("data/generated-questions.jsonl")


def held_out() -> Exclusions:
    """The documentation validation set's pages and the FAQ dev pairs' files: never generated from."""
    return Exclusions(
        man=frozenset((s.name, s.section) for s in SOURCES if s.kind == "man"),
        pydoc=frozenset(s.name for s in SOURCES if s.kind == "pydoc"),
        files=frozenset(FAQ_FILES),
    )


def generate_cmd(
    out: Annotated[Path, typer.Option(help="The JSONL to append to (a stopped run resumes from it).")] = DEFAULT_OUT,
    chat_model_spec: Annotated[
        str, typer.Option("--chat-model", help=f"The question writer: {CHAT_MODEL_HELP}.")
    ] = "local",
    limit: Annotated[int | None, typer.Option(min=1, help="New passages to write questions for, at most.")] = None,
    time_limit: Annotated[float | None, typer.Option(min=0.1, help="Minutes to run, at most.")] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(help="Shared data, for its Wikipedia passages (default: $CRAG_DATA_DIR or ../shared/data)."),
    ] = None,
    no_wiki: Annotated[bool, typer.Option("--no-wiki", help="Documentation only.")] = False,
    seed: Annotated[int, typer.Option(help="The order in which pages are visited.")] = 0,
) -> None:
    """Questions in five styles (and two made from them) for passages of man pages, pydoc,
    /usr/share/doc and Wikipedia; resumable: run it again to go on."""
    if limit is None and time_limit is None:
        fail("give --limit or --time-limit: a whole run takes days on two cores")
    try:
        model = chat_model(chat_model_spec, max_tokens=160)
        wiki = None if no_wiki else shared_data_dir(data_dir) / "corpus" / "wiki_passages.jsonl"
    except (ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    passages = candidate_passages(exclude=held_out(), wiki_file=wiki, seed=seed)

    def ask(prompt: str) -> str:
        return str(model.invoke(prompt).content)

    stats = generate_questions(
        passages,
        ask,
        out,
        limit=limit,
        time_limit=time_limit * 60 if time_limit else None,
        writer=chat_model_spec,
    )
    typer.echo(
        f"{stats['written']} passages written ({stats['unparsed']} replies without questions), "
        f"{stats['already']} already there, in {stats['seconds']:.0f} s -> {out}"
    )


DEFAULT_LABELS = Path("data/generated-teacher.jsonl")


def teacher_cmd(
    pairs: Annotated[
        Path, typer.Option(help="Training pairs (build-data's train.jsonl): its generated ones are labelled.")
    ] = Path("artifacts/evaluator-data-generated/train.jsonl"),
    out: Annotated[Path, typer.Option(help="The labels JSONL to append to (a stopped run resumes).")] = DEFAULT_LABELS,
    model: Annotated[
        str, typer.Option(help="The teacher: a local GGUF chat model (local, local:small, a path).")
    ] = "local",
    time_limit: Annotated[float, typer.Option(min=0.1, help="Minutes to run, at most.")] = 60.0,
    seed: Annotated[int, typer.Option(help="The order in which passages are labelled.")] = 0,
) -> None:
    """The chat model's P(yes) to LangGraph's grading prompt for each generated training pair (a teacher
    for the evaluator); resumable: run it again to go on."""
    if not pairs.is_file():
        fail(f"no pairs at {pairs}: build them with `make evaluator-data WITH_GENERATED=1`")
    generated = [p for p in read_pairs(pairs) if (p.source or "").startswith("generated-")]
    if not generated:
        fail(f"{pairs} holds no generated pairs: build it with --generated")
    try:
        grader = YesNoGrader(model_file(model))
    except (ValueError, FileNotFoundError, ModelFileError) as exc:
        fail(str(exc))
    shown = {p.passage: titled(p.passage, p.title) for p in generated}  # the title helps, as it does the evaluator

    stats = label_pairs(
        [(p.question, p.passage) for p in generated],
        out,
        lambda question, passage: grader.score(question, shown[passage]),
        time_limit=time_limit * 60,
        seed=seed,
    )
    typer.echo(
        f"{stats['labelled']} pairs labelled in {stats['seconds']:.0f} s ({stats['already']} already there, "
        f"{stats['left']} left) -> {out}"
    )
