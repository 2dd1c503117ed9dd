"""Scoring answers and summarising a system's predictions.
Accuracy is the paper's (an answer string is a case-sensitive substring of the prediction). Knowledge
recall needs a whole word or phrase: PopQA's aliases include "W" and "id", found inside any passage."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

from crag.text import count_tokens  # the harness reports knowledge tokens by it

STAGES = ("retrieve", "grade", "requery", "refine", "search", "generate")
ACTIONS = ("correct", "ambiguous", "incorrect")
_CITATION = re.compile(r"\s*\[\d+\]")


def strip_citations(answer: str) -> str:
    """The answer without "[1]" source markers."""
    return _CITATION.sub("", answer).strip()


def match(prediction: str, answers: Iterable[str], *, case_sensitive: bool = True) -> bool:
    """The paper's accuracy test: some answer string is a substring of the prediction."""
    if case_sensitive:
        return any(a and a in prediction for a in answers)
    folded = prediction.casefold()
    return any(a and a.casefold() in folded for a in answers)


@lru_cache(maxsize=65536)
def _bounded(answer: str) -> re.Pattern:
    return re.compile(r"(?<!\w)" + re.escape(answer) + r"(?!\w)")


def contains_answer(text: str, answers: Iterable[str]) -> bool:
    """Whether an answer occurs in `text` as a whole word or phrase, ignoring case."""
    folded = text.casefold()
    for answer in answers:
        answer = answer.strip().casefold()
        if answer and answer in folded and _bounded(answer).search(folded):
            return True
    return False


def bootstrap_ci(values: Sequence[float], *, resamples: int = 2000, seed: int = 0, level: float = 0.95) -> list[float]:
    """Seeded percentile bootstrap interval of the mean."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return [float("nan"), float("nan")]
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return [float(low), float(high)]


def paired_difference(a: Sequence[float], b: Sequence[float], *, resamples: int = 2000, seed: int = 0) -> dict:
    """Mean of a − b over the same questions, with a paired bootstrap interval."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError("paired samples must have the same length")
    diff = x - y
    return {
        "mean": float(diff.mean()) if diff.size else float("nan"),
        "ci": bootstrap_ci(diff, resamples=resamples, seed=seed),
        "n": int(diff.size),
    }


def degenerate(draft: str, question: str) -> bool:
    """Whether a draft echoes the question (or writes "Question:") or repeats a 4-word run."""
    words = re.findall(r"\w+", draft.lower())
    asked = re.findall(r"\w+", question.lower())
    if "question:" in draft.lower() or (len(asked) >= 4 and " ".join(asked) in " ".join(words)):
        return True
    grams = Counter(tuple(words[i : i + 4]) for i in range(len(words) - 3))
    return any(n > 1 for n in grams.values())


# why an answerable question was declined, by the first stage that lost the answer
ABSTENTION_CAUSES = ("declined_with_answer", "rejected", "refined_away", "not_retrieved")


def retrieved_answer(record: dict) -> bool:
    """Whether some retrieved document of the record holds an answer."""
    return any(record.get("documents_with_answer") or [])


def abstention_cause(record: dict) -> str | None:
    """The stage an answerable question's abstention is owed to (`ABSTENTION_CAUSES`), else None."""
    if not record.get("answerable", True) or not record.get("abstained", False):
        return None
    if record["knowledge_recall"]:
        return "declined_with_answer"
    if retrieved_answer(record):
        return "rejected" if record.get("action") == "incorrect" else "refined_away"
    return "not_retrieved"


def honesty(records: Sequence[dict]) -> dict:
    """Abstention and citation shares (issue 11). "withheld_correct": drafts holding an answer but withheld;
    "strip_recall": of the questions whose documents hold an answer, those whose knowledge still does;
    "answer_reachable": those whose documents or web results hold one (no honest system abstains on fewer)."""
    answerable = [r for r in records if r.get("answerable", True)]
    unanswerable = [r for r in records if not r.get("answerable", True)]
    had_answer = [r for r in answerable if retrieved_answer(r)]
    citations = [c for r in answerable for c in r.get("citations_with_answer") or []]
    return {
        "n_unanswerable": len(unanswerable),
        "abstention_unanswerable": _mean(float(r.get("abstained", False)) for r in unanswerable),
        "abstention_answerable": _mean(float(r.get("abstained", False)) for r in answerable),
        "abstention_with_knowledge": _mean(
            float(r.get("abstained", False)) for r in answerable if r["knowledge_recall"]
        ),
        "withheld_correct": _mean(
            float(bool(r.get("draft_correct")) and r.get("abstained", False)) for r in answerable
        ),
        "strip_recall": _mean(float(r["knowledge_recall"]) for r in had_answer),
        "supported": _mean(float(r.get("cited", False)) for r in answerable),
        "quoted": _mean(float(r.get("quoted", False)) for r in answerable),
        "quotes_correct": _mean(float(r["correct"]) for r in answerable if r.get("quoted")),
        "citation_precision": _mean(float(c) for c in citations),
        "grounded": _mean(float(r.get("grounded", False)) for r in records),
        "degenerate": _mean(
            float(degenerate(r.get("draft") or "", r.get("question", ""))) for r in records if r.get("draft")
        ),
        "answer_reachable": _mean(float(bool(r["knowledge_recall"]) or retrieved_answer(r)) for r in answerable),
        "abstained_by_cause": {
            cause: _mean(float(abstention_cause(r) == cause) for r in answerable) for cause in ABSTENTION_CAUSES
        },
    }


def summarize(records: Sequence[dict], *, resamples: int = 2000, seed: int = 0) -> dict:
    """One system's row of results.json; accuracy and knowledge recall are over answerable questions."""
    figures = honesty(records)
    records = [r for r in records if r.get("answerable", True)]
    n = len(records)
    correct = [float(r["correct"]) for r in records]
    insensitive = [float(r["correct_insensitive"]) for r in records]
    actions = Counter(r["action"] for r in records if r.get("action"))
    latency = {stage: _mean(r.get("latency", {}).get(stage, 0.0) for r in records) for stage in STAGES}
    latency["rewrite"] = _mean(r.get("latency", {}).get("rewrite", 0.0) for r in records)
    wall = [float(r.get("wall_s", 0.0)) for r in records]
    latency["per_question"] = _mean(wall)
    latency["p50"], latency["p95"] = (float(np.percentile(wall, q)) for q in (50, 95)) if wall else (0.0, 0.0)
    return {
        "n": n,
        "accuracy": _mean(correct),
        "accuracy_ci": bootstrap_ci(correct, resamples=resamples, seed=seed),
        "accuracy_insensitive": _mean(insensitive),
        "accuracy_ci_insensitive": bootstrap_ci(insensitive, resamples=resamples, seed=seed),
        "knowledge_recall": _mean(float(r["knowledge_recall"]) for r in records),
        "knowledge_tokens": _mean(r["knowledge_tokens"] for r in records),
        "actions": {a: actions.get(a, 0) for a in ACTIONS} if actions else {},
        "accuracy_by_action": {
            a: _mean(float(r["correct"]) for r in records if r.get("action") == a) for a in ACTIONS if actions.get(a)
        },
        "evaluator_calls": _mean(r.get("evaluator_calls", 0) for r in records),
        "evaluator_pairs": _mean(r.get("evaluator_pairs", 0) for r in records),
        "llm_calls": _mean(r.get("llm", {}).get("calls", 0) for r in records),
        "llm_prompt_tokens": _mean(r.get("llm", {}).get("prompt", 0) for r in records),
        "llm_completion_tokens": _mean(r.get("llm", {}).get("completion", 0) for r in records),
        "latency": latency,
        "wall_s": float(sum(wall)),
        "errors": sum(1 for r in records if r.get("error")),
        **figures,
    }


def _mean(values: Iterable[float]) -> float:
    values = [float(v) for v in values]
    return float(np.mean(values)) if values else float("nan")


__all__ = [
    "ACTIONS",
    "contains_answer",
    "count_tokens",
    "match",
    "paired_difference",
    "retrieved_answer",
    "strip_citations",
    "summarize",
]
