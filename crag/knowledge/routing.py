"""The paper's action trigger: a pure function of the evaluator's scores and two thresholds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crag.records import Strip
from crag.thresholds import Action, Thresholds


def decide_action(scores: Sequence[float], thresholds: Thresholds) -> Action:
    """Correct if any document scores ≥ upper; Incorrect if all (or none) score < lower; else Ambiguous."""
    if any(s >= thresholds.upper for s in scores):
        return "correct"
    if all(s < thresholds.lower for s in scores):
        return "incorrect"
    return "ambiguous"


def explain(action: Action, scores: Sequence[float], thresholds: Thresholds) -> str:
    """Why `decide_action` chose `action`, in words."""
    if not scores:
        return "no documents were retrieved: Incorrect"
    best = max(range(len(scores)), key=lambda i: scores[i])
    top = f"the best document (rank {best + 1}) scored {scores[best]:+.3f}"
    upper, lower = thresholds.upper, thresholds.lower
    if action == "correct":
        return f"{top}, at least the upper threshold {upper:+.3f}: Correct"
    if action == "incorrect":
        return f"{top}; every document is below the lower threshold {lower:+.3f}: Incorrect"
    return f"{top}, below the upper threshold {upper:+.3f} but not every document is below the lower {lower:+.3f}: Ambiguous"


def document_labels(scores: Sequence[float], thresholds: Thresholds) -> list[str]:
    return [thresholds.label(s) for s in scores]


def decision(scores: Sequence[float], thresholds: Thresholds, route: str = "auto") -> tuple[Action, list[str], str]:
    """The action, each document's label and the reason; a `route` other than "auto" forces the action (labels stay)."""
    decided = decide_action(scores, thresholds)
    reason = explain(decided, scores, thresholds)
    if route == "auto":
        return decided, document_labels(scores, thresholds), reason
    reason = f"{route.title()}, forced by the route setting (by the thresholds: {reason})"
    return route, document_labels(scores, thresholds), reason  # type: ignore[return-value]


def recheck(labels: Sequence[str], grades: Sequence[float], threshold: float) -> tuple[Action, list[str], str] | None:
    """The chat model's second opinion on an Incorrect grade: documents it grades at least `threshold`
    become ambiguous, and so does the action; None when it keeps none."""
    kept = [i for i, g in enumerate(grades) if g >= threshold]
    if not kept:
        return None
    relabelled = ["ambiguous" if i in kept else label for i, label in enumerate(labels)]
    ranks = ", ".join(str(i + 1) for i in kept)
    best = max(grades)
    return (
        "ambiguous",
        relabelled,
        f"every document was below the lower threshold, but the chat model judged rank {ranks} relevant "
        f"(best {best:+.3f}, at least {threshold:+.3f}): Ambiguous",
    )


def branches(action: Action) -> list[str]:
    """Nodes that run after grading: Ambiguous runs both, and `generate` joins them."""
    return {"correct": ["refine"], "incorrect": ["rewrite_and_search"]}.get(action, ["refine", "rewrite_and_search"])


def after_grade(action: Action, requery_due: bool) -> list[str]:
    return ["requery"] if requery_due else branches(action)


def final_knowledge(state: Mapping[str, Any]) -> list[Strip]:
    """The paper's knowledge combination: Correct the internal strips, Incorrect the external, Ambiguous
    both; then the further strips when the generator read them."""
    action = state.get("action")
    internal = state.get("internal_knowledge") or []
    external = state.get("external_knowledge") or []
    further = unread_knowledge(state) if state.get("read_further") else []
    if action == "correct":
        return list(internal) + further
    if action == "incorrect":
        return list(external)
    return list(internal) + list(external) + further


def unread_knowledge(state: Mapping[str, Any]) -> list[Strip]:
    """The retrieved documents' next-best strips, read only when the generator declines (none on Incorrect)."""
    return [] if state.get("action") == "incorrect" else list(state.get("further_knowledge") or [])


__all__ = ["decide_action", "final_knowledge"]  # what callers outside the package use
