"""The long-form answer's fact score, after FActScore (Min et al. 2023): each sentence of an answer split into
atomic facts by the chat model (`FACT_SPLIT_PROMPT`, a fact a line after "- ", read by a strict parser), each
fact judged against the evidence, the topic's own-page passages, twice: by the lexical grounding check that
attributes answers (`crag.answers.attribution`: the passages state most of the fact's claim words) and by the
chat model's yes/no (`FACT_JUDGE_PROMPT`, P(yes) from the local model's first-token logits, a provider's label
otherwise). A fact is supported when both say so. Per system: supported-fact precision (the mean over answers
of their supported share, as FActScore averages), each judge's alone, facts per answer and abstentions.

The evidence is the question's `evidence` (texts, `lab datasets build-bio` writes them); a question without it
is judged against the knowledge its system was given, which measures faithfulness, not factual precision.
Verdicts are kept in DIR/facts.jsonl, keyed by system, question and the answer's digest, so a rerun judges
only new answers."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from crag.answers.attribution import abstains, attribute, grounded
from crag.evaluation import answer_metrics as metrics
from crag.evaluation.inputs import Question
from crag.jsonl import drop_torn_line
from crag.knowledge.refinement import sentence_spans
from crag.models.chat import chat_model
from crag.models.judge import JUDGE_TOKENS, critique
from crag.prompts import FACT_JUDGE_PROMPT, FACT_JUDGE_SYSTEM, FACT_SPLIT_PROMPT
from crag.records import Strip

FACTS = "facts.jsonl"
SPLIT_TOKENS = 160  # a sentence's facts, a dozen short lines at most
MIN_FACT_WORDS = 3  # "He retired." is a fact; "- Yes" is not
MAX_FACTS = 12  # per sentence: a model that lists on and on is cut
EVIDENCE_CHARS = 6000  # what the judge reads of the evidence, in the local model's context with room to spare
_BULLET = re.compile(r"^\s*-\s+(.+?)\s*$")

Split = Callable[[str], str]  # a sentence -> the model's reply listing its facts
Judge = Callable[[str, str, str], float]  # (topic, evidence, fact) -> P(yes)


def parse_facts(reply: str) -> list[str]:
    """The facts of a split reply: the lines after "- ", up to the first line that is neither one nor blank (a
    model that goes on writes the next demonstration's "Sentence:"), short and repeated ones left out."""
    facts: list[str] = []
    for line in reply.splitlines():
        if not line.strip():
            continue
        bullet = _BULLET.match(line)
        if bullet is None:
            if facts:
                break
            continue  # a preamble ("Here are the facts:") before the list
        fact = bullet.group(1)
        if len(fact.split()) >= MIN_FACT_WORDS and fact not in facts:
            facts.append(fact)
    return facts[:MAX_FACTS]


def atomic_facts(answer: str, split: Split) -> list[dict[str, str]]:
    """Each sentence's facts as {fact, sentence}; a sentence whose reply lists none is one fact itself."""
    facts = []
    for sentence, _, _ in sentence_spans(answer):
        found = parse_facts(split(sentence)) or [sentence]
        facts += [{"fact": fact, "sentence": sentence} for fact in found]
    return facts


def evidence_strips(topic: str, texts: Sequence[str]) -> list[Strip]:
    """The evidence as strips of the topic's page, the form the grounding check reads."""
    return [
        Strip(text=t, score=1.0, selection_score=1.0, lifted=False, title=topic, source=f"evidence-{n}",
              origin="internal", doc=n, start=0, end=len(t))
        for n, t in enumerate(texts)
    ]  # fmt: skip


def lexical_support(fact: str, question: str, strips: Sequence[Strip]) -> bool:
    """Whether the grounding check attributes the fact to a strip (`attribute`, as answers are cited)."""
    return bool(strips) and grounded(attribute(fact, question, strips))


def model_judge(spec: Any) -> tuple[Split, Judge]:
    """The chat model `spec` as the fact splitter and the yes/no judge."""
    splitter = chat_model(spec, max_tokens=SPLIT_TOKENS)
    judge = chat_model(spec, max_tokens=JUDGE_TOKENS)  # a provider's structured yes or no; the local model's logits

    def split(sentence: str) -> str:
        return str(splitter.invoke(FACT_SPLIT_PROMPT.format(sentence=sentence), stop=["Sentence:"]).content)

    def yes(topic: str, evidence: str, fact: str) -> float:
        prompt = FACT_JUDGE_PROMPT.format(topic=topic, evidence=evidence, fact=fact)
        messages = [{"role": "system", "content": FACT_JUDGE_SYSTEM}, {"role": "user", "content": prompt}]
        return float(critique(judge, [(messages, ("yes", "no"))])[0][0])

    return split, yes


def digest(answer: str) -> str:
    return hashlib.sha256(answer.encode("utf-8")).hexdigest()[:16]


def topic_of(question: Question) -> str:
    return str(question.extra.get("topic") or question.question)


def evidence_of(question: Question, record: dict) -> tuple[list[str], str]:
    """(texts, where from): the question's `evidence`, else the knowledge its system was given."""
    given = question.extra.get("evidence")
    if isinstance(given, list) and all(isinstance(t, str) for t in given):
        return [t for t in given if t.strip()], "evidence"
    return [s["text"] for s in record.get("strips") or []], "knowledge"


def judge_record(record: dict, question: Question, split: Split, judge: Judge) -> dict:
    """One answer's facts and their verdicts (nothing asked of an abstention or an answer without evidence)."""
    answer = metrics.strip_citations(str(record.get("answer", "")))
    texts, source = evidence_of(question, record)
    row = {
        "system": record["system"],
        "qid": record["qid"],
        "answer_sha256": digest(answer),
        "topic": topic_of(question),
        "abstained": abstains(answer) or not answer.strip(),
        "evidence": source,
        "has_evidence": bool(texts),
        "facts": [],
    }
    if row["abstained"] or not texts:
        return row
    strips = evidence_strips(row["topic"], texts)
    joined = "\n\n".join(texts)[:EVIDENCE_CHARS]
    for item in atomic_facts(answer, split):
        lexical = lexical_support(item["fact"], question.question, strips)
        p_yes = judge(row["topic"], joined, item["fact"])
        row["facts"].append(
            {**item, "lexical": lexical, "judge_p": round(p_yes, 4), "judge": p_yes > 0.5,
             "supported": lexical and p_yes > 0.5}
        )  # fmt: skip
    return row


def read_facts(path: Path) -> dict[tuple[str, str], dict]:
    if not path.exists():
        return {}
    drop_torn_line(path)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {(r["system"], r["qid"]): r for r in rows}


def score_run(
    out: Path,
    records: dict[tuple[str, str], dict],
    questions: Sequence[Question],
    split: Split,
    judge: Judge,
    *,
    progress: Callable[[int], None] | None = None,
) -> dict[tuple[str, str], dict]:
    """Judge the facts of every answer of `questions` not judged yet (or changed since), appending to DIR/facts.jsonl."""
    path = Path(out) / FACTS
    done = read_facts(path)
    by_id = {q.qid: q for q in questions}
    for key, record in records.items():
        question = by_id.get(record["qid"])
        if question is None or record.get("error"):  # a failed answer is neither an abstention nor facts
            continue
        answer = metrics.strip_citations(str(record.get("answer", "")))
        if key in done and done[key]["answer_sha256"] == digest(answer):
            continue
        row = judge_record(record, question, split, judge)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        done[key] = row
        if progress:
            progress(1)
    return done


def _share(facts: list[dict], verdict: str) -> float:
    return sum(f[verdict] for f in facts) / len(facts)


def summarize_facts(rows: Sequence[dict], *, resamples: int = 2000) -> dict:
    """A system's fact scores: precision (supported, lexical, judge) over the answers with facts, its interval,
    facts per answer, and the share of abstentions."""
    judged = [r for r in rows if r["has_evidence"] or r["abstained"]]
    scored = [r for r in judged if not r["abstained"] and r["facts"]]
    precision = [_share(r["facts"], "supported") for r in scored]
    return {
        "n": len(rows),
        "without_evidence": len(rows) - len(judged),
        "abstained": sum(r["abstained"] for r in judged) / len(judged) if judged else float("nan"),
        "answers_with_facts": len(scored),
        "facts_per_answer": sum(len(r["facts"]) for r in scored) / len(scored) if scored else float("nan"),
        "supported": sum(precision) / len(precision) if precision else float("nan"),
        "supported_ci": metrics.bootstrap_ci(precision, resamples=resamples),
        "lexical": _mean([_share(r["facts"], "lexical") for r in scored]),
        "judge": _mean([_share(r["facts"], "judge") for r in scored]),
    }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


__all__ = ["FACTS", "atomic_facts", "model_judge", "parse_facts", "read_facts", "score_run", "summarize_facts"]
