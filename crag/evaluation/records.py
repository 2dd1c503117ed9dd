"""One line of a run's predictions.jsonl (`crag.evaluation.runner`): a system's answer to a question, what it was
given, how it scores and what it cost."""

from __future__ import annotations

from typing import Any

from crag.answers.attribution import abstains
from crag.evaluation import answer_metrics as metrics
from crag.evaluation.inputs import Question
from crag.evaluation.systems import System
from crag.knowledge.routing import unread_knowledge
from crag.passages import title_of


def prediction_record(
    system: System, question: Question, output: dict[str, Any] | None, error: str | None, prompt_sha256: str = ""
) -> dict:
    """One line of predictions.jsonl: the answer, its scores and what it cost."""
    output = output or {}
    answer = str(output.get("answer", ""))
    said = metrics.strip_citations(answer)
    knowledge = str(output.get("knowledge", ""))
    documents = output.get("documents") or []
    sources = output.get("sources") or []
    return {
        "system": system.name,
        "qid": question.qid,
        "question": question.question,
        "answers": list(question.answers),
        "answerable": question.answerable,
        "answer": answer,
        "draft": output.get("draft", ""),
        "draft_correct": metrics.match(str(output.get("draft", "")), question.answers, case_sensitive=False),
        "asked_again": bool(output.get("asked_again")),
        "first_draft": output.get("first_draft", ""),
        # the next strips of refinement's ranking (`Context.further_strips`), which the model reads when it declines
        # over the kept ones; its reply there; and whether that reply is the answer (then `strips` ends with them)
        "further_strips": unread_knowledge(output),
        "further_draft": output.get("further_draft", ""),
        "read_further": bool(output.get("read_further")),
        "grounded": bool(output.get("grounded")),
        "abstained": abstains(answer),
        "quoted": bool(output.get("quoted")),
        "replaced": output.get("replaced"),
        # the strips the generator was given, as it was given them: the answer path's rules can be replayed
        # (and ablated) on the recorded drafts without asking the model again
        "strips": output.get("given") or [],
        "cited": bool(sources),
        "citations_with_answer": [
            metrics.contains_answer(f"{s.get('title', '')} {s.get('text', '')}", question.answers) for s in sources
        ],
        "correct": metrics.match(said, question.answers, case_sensitive=True),
        "correct_insensitive": metrics.match(said, question.answers, case_sensitive=False),
        "knowledge_recall": metrics.contains_answer(knowledge, question.answers),
        "knowledge_tokens": metrics.count_tokens(knowledge),
        "action": output.get("action"),
        "scores": [round(float(s), 4) for s in output.get("scores") or []],
        "recheck_scores": list(output.get("recheck_scores") or []),
        "recheck_error": output.get("recheck_error"),
        "documents_with_answer": [
            metrics.contains_answer(f"{title_of(d)} {d.page_content}", question.answers) for d in documents
        ],
        "rewritten_query": output.get("rewritten_query") or None,
        "web_error": output.get("web_error"),
        "evaluator_calls": output.get("evaluator_calls", 0),
        "evaluator_pairs": output.get("evaluator_pairs", 0),
        "llm": output.get("llm", {}),
        "latency": output.get("latency", {}),
        "wall_s": output.get("wall_s", 0.0),
        "error": error,
        "prompt_sha256": prompt_sha256,
    }


__all__ = ["prediction_record"]  # what callers outside the package use
