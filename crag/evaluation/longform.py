"""A finished run's long answers: judged fact by fact (`crag eval facts`, `crag.evaluation.facts`) with its report
written again, and a sample of the verdicts to audit by hand (`crag eval audit`, `crag.evaluation.audit`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from crag.evaluation import audit
from crag.evaluation.facts import FACTS, model_judge, read_facts, score_run
from crag.evaluation.inputs import Question, read_questions
from crag.evaluation.report import write_outputs
from crag.evaluation.runner import PREDICTIONS, RUN_FILE, PredictionStore


def _finished_run(out: Path, questions: Path | None) -> tuple[dict, dict, list[Question]]:
    """(run.json, the predictions, the questions) of a run folder; the questions from run.json unless given."""
    path = Path(out) / RUN_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{out} is not a `crag eval run` folder: it has no {RUN_FILE}")
    run_info = json.loads(path.read_text())
    store = PredictionStore(Path(out) / PREDICTIONS)
    return run_info, store.records, read_questions(questions or run_info["questions"])


def score_facts(out: Path, questions: Path | None = None, chat_model: Any = None, *, progress: bool = True) -> dict:
    """Judge the facts of a finished run's answers (`crag.evaluation.facts`) and write its results and report again."""
    run_info, records, asked = _finished_run(out, questions)
    with tqdm(desc="facts", unit="answer", disable=not progress) as bar:
        score_run(Path(out), records, asked, *model_judge(chat_model or run_info["chat_model"]), progress=bar.update)
    return write_outputs(Path(out), records, asked, run_info)


def write_audit(out: Path, csv_path: Path, questions: Path | None = None, *, n: int = 60, seed: int = 0) -> Path:
    """A seeded sample of a run's judged facts to label by hand (`crag.evaluation.audit`); the evidence page's path."""
    _, _, asked = _finished_run(out, questions)
    facts = read_facts(Path(out) / FACTS)
    evidence = {q.qid: list(q.extra.get("evidence") or []) for q in asked}
    return audit.write(csv_path, audit.sample(list(facts.values()), n, seed), evidence)


__all__ = ["score_facts", "write_audit"]  # what callers outside the package use
