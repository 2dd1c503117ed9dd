"""The long-answer fact score: the strict parser of a split reply, facts judged by the grounding check and the
model's yes/no, a system's aggregation, a long run judged and reported (and not judged twice), and the audit."""

from __future__ import annotations

import csv
import json

import pytest

from crag.evaluation.audit import agreement, kappa, sample
from crag.evaluation.facts import FACTS, atomic_facts, judge_record, parse_facts, read_facts, score_run, summarize_facts
from crag.evaluation.inputs import Question
from crag.evaluation.longform import write_audit
from crag.evaluation.runner import RunSettings, run
from crag.evaluation.systems import parse_systems
from crag.prompts import ANSWER_LENGTHS
from tests.fakes import FactChat, SubjectEvaluator, write_jsonl

EVIDENCE = ["Anna Berg was a Swedish painter. She painted the sea. Her works hang in Stockholm."]
BIO = Question("bio-1", "Tell me a bio of Anna Berg.", ("Anna Berg",), {"topic": "Anna Berg", "evidence": EVIDENCE})


def test_the_parser_reads_only_the_bullet_list():
    reply = (
        "Here are the facts:\n- Anna Berg was a painter.\n  - She was Swedish.\n- Yes\n- Anna Berg was a painter.\n"
        "\n- She painted the sea.\nSentence: She was born in 1890.\n- She was born in 1890."
    )
    # the preamble skipped; too short and repeated facts dropped; the list ends at the next demonstration
    assert parse_facts(reply) == ["Anna Berg was a painter.", "She was Swedish.", "She painted the sea."]
    assert parse_facts("Anna Berg was a painter.") == [] and parse_facts("") == []
    assert len(parse_facts("\n".join(f"- fact number {n} here" for n in range(30)))) == 12


def test_each_sentence_is_split_and_an_unsplit_one_is_a_fact_itself():
    replies = {"Anna Berg was a Swedish painter.": "- Anna Berg was Swedish.\n- Anna Berg was a painter."}
    facts = atomic_facts("Anna Berg was a Swedish painter. She painted the sea.", lambda s: replies.get(s, "None."))
    assert facts == [
        {"fact": "Anna Berg was Swedish.", "sentence": "Anna Berg was a Swedish painter."},
        {"fact": "Anna Berg was a painter.", "sentence": "Anna Berg was a Swedish painter."},
        {"fact": "She painted the sea.", "sentence": "She painted the sea."},
    ]


def split(sentence: str) -> str:
    return "\n".join(f"- {part.strip().rstrip('.')}." for part in sentence.split(" and "))


def judge(p_yes: dict[str, float]):
    asked = []

    def yes(topic, evidence, fact):
        asked.append((topic, evidence, fact))
        return next((p for word, p in p_yes.items() if word in fact), 0.1)

    return yes, asked


def record(answer: str, system: str = "rag") -> dict:
    return {"system": system, "qid": "bio-1", "answer": answer, "strips": []}


def test_a_fact_is_supported_when_both_the_grounding_check_and_the_model_say_so():
    yes, asked = judge({"painter": 0.9, "Stockholm": 0.8, "Oslo": 0.7})
    answer = "Anna Berg was a Swedish painter and her works hang in Stockholm and she was born in Oslo [1]."
    row = judge_record(record(answer), BIO, split, yes)
    verdicts = [(f["fact"], f["lexical"], f["judge"], f["supported"]) for f in row["facts"]]
    assert verdicts == [
        ("Anna Berg was a Swedish painter.", True, True, True),
        ("her works hang in Stockholm.", True, True, True),
        ("she was born in Oslo.", False, True, False),  # the model says yes; no passage says Oslo
    ]
    assert asked[0][:2] == ("Anna Berg", EVIDENCE[0]) and not row["abstained"] and row["evidence"] == "evidence"


def test_nothing_is_asked_of_an_abstention_or_an_answer_without_evidence():
    yes, asked = judge({})
    declined = judge_record(
        record("I don't know: the sources hold nothing relevant to this question."), BIO, split, yes
    )
    assert declined["abstained"] and declined["facts"] == []
    bare = Question("bio-1", BIO.question, BIO.answers, {"topic": "Anna Berg", "evidence": []})
    assert judge_record(record("Anna Berg was a painter."), bare, split, yes)["has_evidence"] is False
    assert asked == []
    # without an `evidence` field the knowledge the system was given is the evidence
    plain = Question("q", "Who was Anna Berg?", ("painter",))
    given = {**record("Anna Berg was a painter."), "strips": [{"title": "Anna Berg", "text": EVIDENCE[0]}]}
    assert judge_record(given, plain, split, judge({"painter": 0.9})[0])["evidence"] == "knowledge"


def fact(supported: bool, lexical: bool = True, judged: bool = True) -> dict:
    return {"fact": "f", "sentence": "s", "lexical": lexical, "judge_p": 0.9, "judge": judged, "supported": supported}


def row(facts: list[dict], abstained: bool = False, has_evidence: bool = True, qid: str = "q") -> dict:
    return {"system": "rag", "qid": qid, "topic": "T", "abstained": abstained, "has_evidence": has_evidence,
            "facts": facts}  # fmt: skip


def test_a_system_is_scored_as_the_mean_of_its_answers_precision():
    rows = [
        row([fact(True), fact(False, lexical=False)]),  # 1/2
        row([fact(True)] * 4),  # 4/4
        row([], abstained=True),
        row([fact(False)], has_evidence=False),  # left out, counted apart
    ]
    summary = summarize_facts(rows, resamples=100)
    assert summary["supported"] == pytest.approx(0.75)  # (0.5 + 1) / 2, not 5 of 6 facts
    assert (summary["answers_with_facts"], summary["facts_per_answer"]) == (2, 3.0)
    assert summary["abstained"] == pytest.approx(1 / 3) and summary["without_evidence"] == 1
    assert summary["lexical"] == pytest.approx(0.75) and summary["judge"] == pytest.approx(1.0)


def long_run(tmp_path, chat, make_context):
    questions = write_jsonl(tmp_path / "q.jsonl", [{"id": "bio-1", "question": BIO.question, "answers": ["Anna Berg"],
                                                    "topic": "Anna Berg", "evidence": EVIDENCE}])  # fmt: skip
    kb = write_jsonl(tmp_path / "kb.jsonl", [{"title": "Anna Berg", "text": EVIDENCE[0]}])
    web = write_jsonl(tmp_path / "web.jsonl", [{"title": "Oslo", "text": "Oslo is the capital of Norway."}])
    ctx = make_context(chat=chat, evaluator=SubjectEvaluator(), answer_style="long")
    return RunSettings(questions=questions, kb=kb, web=web, out=tmp_path / "run", systems=parse_systems("rag"),
                       context=ctx, progress=False, resamples=100)  # fmt: skip


def test_a_long_run_judges_its_answers_once_and_reports_their_facts(tmp_path, make_context):
    chat = FactChat()
    results = run(long_run(tmp_path, chat, make_context))
    facts = results["rag"]["facts"]
    assert (facts["supported"], facts["facts_per_answer"], facts["abstained"]) == (0.5, 2.0, 0.0)
    assert ANSWER_LENGTHS["long"] in next(p for p in chat.prompts if p.startswith("Passages:"))
    assert "| rag | 1 | 50.0 |" in (tmp_path / "run" / "report.md").read_text()
    lines = (tmp_path / "run" / FACTS).read_text().splitlines()
    again = FactChat()
    run(long_run(tmp_path, again, make_context))
    assert (tmp_path / "run" / FACTS).read_text().splitlines() == lines  # the same answer: not judged again
    assert again.prompts == []  # nor answered again


def test_the_audit_samples_facts_and_agreement_reads_the_labels(tmp_path, make_context):
    run(long_run(tmp_path, FactChat(), make_context))
    page = write_audit(tmp_path / "run", tmp_path / "audit.csv", n=60)
    with (tmp_path / "audit.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["fact"] for r in sorted(rows, key=lambda r: r["fact"])] == [
        "Anna Berg was a Swedish painter.",
        "she was born in Oslo.",
    ]
    assert "Her works hang in Stockholm." in page.read_text()
    for r in rows:  # the person agrees about Oslo (no) and, wrongly for the test's sake, says the painter is no
        r["label"] = "no"
    with (tmp_path / "audit.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = agreement(tmp_path / "audit.csv")
    assert (result["labelled"], result["supported"], result["human_supported"]) == (2, 0.5, 0.0)


def test_the_sample_is_seeded_and_bad_labels_are_named(tmp_path):
    rows = [row([fact(True)] * 5, qid=f"q{n}") for n in range(30)]
    assert sample(rows, 60, seed=1) == sample(rows, 60, seed=1) and len(sample(rows, 60)) == 60
    with pytest.raises(ValueError, match="no judged facts"):
        sample([row([])], 60)
    path = tmp_path / "a.csv"
    path.write_text("n,fact,supported,lexical,judge,label\n1,f,True,True,True,maybe\n")
    with pytest.raises(ValueError, match="line 2: label 'maybe' is neither yes nor no"):
        agreement(path)
    path.write_text("n,fact,supported,lexical,judge,label\n1,f,True,True,True,\n")
    with pytest.raises(ValueError, match="no labelled facts"):
        agreement(path)


def test_kappa_is_agreement_beyond_chance():
    assert kappa([True, False, True, False], [True, False, True, False]) == 1.0
    assert kappa([True, True, False, False], [True, False, True, False]) == 0.0
    assert json.dumps(kappa([True] * 3, [True] * 3)) == "1.0"


def test_only_new_or_changed_answers_are_judged_and_failed_ones_never(tmp_path):
    yes, asked = judge({"painter": 0.9})
    records = {("rag", "bio-1"): record("Anna Berg was a Swedish painter."),
               ("crag", "bio-1"): {**record("", "crag"), "error": "RuntimeError: boom"}}  # fmt: skip
    score_run(tmp_path, records, [BIO], split, yes)
    score_run(tmp_path, records, [BIO], split, yes)
    assert len(asked) == 1 and list(read_facts(tmp_path / FACTS)) == [("rag", "bio-1")]
    records[("rag", "bio-1")] = record("Anna Berg was a Danish painter.")
    score_run(tmp_path, records, [BIO], split, yes)
    assert len(asked) == 2 and read_facts(tmp_path / FACTS)[("rag", "bio-1")]["facts"][0]["fact"].endswith(
        "Danish painter."
    )
