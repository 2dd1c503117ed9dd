"""Reading the harness's inputs (questions `{question, answers[]}`, records `{title, text}`), and `--drop-gold`.
A question without an `id` is known by its line number; a malformed line is reported before anything expensive."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from crag.evaluation.answer_metrics import contains_answer
from crag.jsonl import read_objects


@dataclass(frozen=True)
class Question:
    """One question with its accepted answers; `qid` keys its predictions."""

    qid: str
    question: str
    answers: tuple[str, ...]
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def answerable(self) -> bool:
        """False for a question the sources do not answer, where the right output is an abstention."""
        return bool(self.answers)


@dataclass(frozen=True)
class Passage:
    """One knowledge-base record; `key` (its id, else its line) makes its chunk ids stable."""

    key: str
    title: str
    text: str


def _records(path: Path, what: str):
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} file {path} does not exist")
    try:
        yield from read_objects(path)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} file {path} is not UTF-8: {exc}") from None


def read_questions(path: str | Path) -> list[Question]:
    """All questions in file order; ValueError naming the line for anything malformed or repeated."""
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for number, record in _records(Path(path), "questions"):
        where = f"{path}, line {number}"
        text, answers = record.get("question"), record.get("answers")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f'{where}: no "question" string')
        if isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise ValueError(f'{where}: "answers" must be a list of strings')
        answers = [a for a in answers if a.strip()]
        if record.get("answerable", True) is False:
            if answers:
                raise ValueError(f'{where}: a question marked "answerable": false has answers')
        elif not answers:
            raise ValueError(
                f'{where}: "answers" is empty (mark a question the sources cannot answer "answerable": false)'
            )
        qid = str(record["id"]) if record.get("id") is not None else f"line-{number}"
        if qid in seen:
            raise ValueError(f"{where}: question id {qid!r} repeats line {seen[qid]}")
        seen[qid] = number
        extra = {k: v for k, v in record.items() if k not in ("question", "answers")}
        questions.append(Question(qid, " ".join(text.split()), tuple(answers), extra))
    if not questions:
        raise ValueError(f"questions file {path} has no questions")
    return questions


def read_passages_counted(path: str | Path, what: str = "knowledge-base") -> tuple[list[Passage], int]:
    """All `{title, text}` records, and how many were skipped for empty text (as `crag ingest` does)."""
    passages: list[Passage] = []
    empty = 0
    for number, record in _records(Path(path), what):
        where = f"{path}, line {number}"
        text, title = record.get("text"), record.get("title", "")
        if not isinstance(text, str):
            raise ValueError(f'{where}: no "text" string')
        if not text.strip():
            empty += 1
            continue
        if title is None:
            title = ""
        if not isinstance(title, str):
            raise ValueError(f'{where}: "title" must be a string')
        url = record.get("url")
        if url is not None and not isinstance(url, str):
            raise ValueError(f'{where}: "url" must be a string')
        key = str(record["id"]) if record.get("id") is not None else f"line-{number}"
        passages.append(Passage(key, title, text))
    if not passages:
        raise ValueError(f"{what} file {path} has no records with text")
    return passages, empty


def read_passages(path: str | Path, what: str = "knowledge-base") -> list[Passage]:
    return read_passages_counted(path, what)[0]


def file_digest(path: str | Path) -> str:
    """sha256 of a file's bytes, by which a run recognises its inputs."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def gold_indices(passages: list[Passage], questions: list[Question]) -> list[int]:
    """Passages that contain an answer of some question (as a whole word or phrase, any case)."""
    answers = sorted({a for q in questions for a in q.answers})
    return [i for i, p in enumerate(passages) if contains_answer(f"{p.title} {p.text}", answers)]


def drop_gold(
    passages: list[Passage], questions: list[Question], fraction: float, *, seed: int = 0
) -> tuple[list[Passage], list[Passage]]:
    """(kept, dropped): a seeded `fraction` of the answer-bearing passages dropped; a larger one drops a superset."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"--drop-gold must be between 0 and 1, got {fraction}")
    gold = gold_indices(passages, questions)
    order = np.random.default_rng(seed).permutation(len(gold))
    count = round(fraction * len(gold))
    dropped = {gold[i] for i in order[:count]}
    kept = [p for i, p in enumerate(passages) if i not in dropped]
    return kept, [passages[i] for i in sorted(dropped)]


__all__ = ["Passage", "read_passages", "read_questions"]  # what callers outside the package use
