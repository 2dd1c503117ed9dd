"""Runs on fakes: output files and their shape, resuming, errors."""

from __future__ import annotations

import json

import pytest

from crag.evaluation.runner import PREDICTIONS, RunSettings, run
from crag.evaluation.systems import parse_systems
from crag.prompts import GENERATE_PROMPTS
from tests.fakes import EchoChat, SubjectEvaluator

RESULT_KEYS = {
    "accuracy",
    "accuracy_ci",
    "accuracy_ci_insensitive",
    "accuracy_insensitive",
    "knowledge_recall",
    "knowledge_tokens",
    "actions",
    "latency",
    "wall_s",
    "n",
    "abstained_by_cause",
    "answer_reachable",
}


def first_asks(chat) -> list[str]:
    """The answer prompts a run sent, without the second asks of an answer that did not stand (the paper
    prompt, `Context.retry_prompt`; no system here generates with it first and is redone)."""
    retry = GENERATE_PROMPTS["paper"].split("{")[0]
    return [p for p in chat.prompts if not p.rstrip().endswith("query:") and not p.startswith(retry)]


def settings(inputs, out, make_context, systems="rag,crag", chat=None, **kw):
    questions, kb, web = inputs
    ctx = make_context(chat=chat, evaluator=SubjectEvaluator())
    return RunSettings(
        questions=questions,
        kb=kb,
        web=web,
        out=out,
        systems=parse_systems(systems),
        context=ctx,
        progress=False,
        resamples=200,
        **kw,
    )


def predictions(out):
    return [json.loads(line) for line in (out / PREDICTIONS).read_text().splitlines()]


def test_run_writes_results_report_and_predictions(inputs, tmp_path, make_context):
    out = tmp_path / "run"
    results = run(settings(inputs, out, make_context, "rag,crag,no_retrieval"))
    assert list(results) == ["no_retrieval", "rag", "crag"]
    on_disk = json.loads((out / "results.json").read_text())
    assert on_disk == json.loads(json.dumps(results))
    for row in on_disk.values():
        assert set(row) >= RESULT_KEYS and row["n"] == 2
        assert set(row["latency"]) >= {
            "retrieve",
            "grade",
            "refine",
            "search",
            "generate",
            "per_question",
            "p50",
            "p95",
        }
        assert 0 < row["latency"]["p50"] <= row["latency"]["p95"]
        assert len(row["accuracy_ci"]) == 2 and row["accuracy_ci"][0] <= row["accuracy"] <= row["accuracy_ci"][1]
    # the subject-aware evaluator sends the Carl question to the web, which answers it
    assert on_disk["crag"]["accuracy"] == 1.0 and on_disk["rag"]["accuracy"] == 0.5
    assert on_disk["crag"]["actions"] == {"correct": 1, "ambiguous": 0, "incorrect": 1}
    assert on_disk["rag"]["actions"] == {} and on_disk["no_retrieval"]["knowledge_tokens"] == 0
    rows = predictions(out)
    assert len(rows) == 6 and {(r["system"], r["qid"]) for r in rows} == {
        (s, q) for s in ("rag", "crag", "no_retrieval") for q in ("q1", "q2")
    }
    crag_q2 = next(r for r in rows if r["system"] == "crag" and r["qid"] == "q2")
    assert crag_q2["action"] == "incorrect" and crag_q2["knowledge_recall"] and crag_q2["scores"] == [-0.9, -0.9]
    assert (
        crag_q2["documents_with_answer"] == [False, False] and crag_q2["rewritten_query"] == "Carl Dahl, occupation"
    )  # the question's own keywords
    # what the generator was given, strip by strip, for replaying the answer path on the recorded draft
    assert crag_q2["strips"] and all(s["origin"] == "external" for s in crag_q2["strips"])
    assert "replaced" in crag_q2 and all(r["strips"] == [] for r in rows if r["system"] == "no_retrieval")
    # the next strips the model would read after a decline: none on Incorrect, and not read here
    assert crag_q2["further_strips"] == [] and crag_q2["read_further"] is False and crag_q2["further_draft"] == ""
    rag_q1 = next(r for r in rows if r["system"] == "rag" and r["qid"] == "q1")
    assert rag_q1["strips"] and all(s["origin"] == "internal" for s in rag_q1["strips"])  # RAG's whole documents
    report = (out / "report.md").read_text()
    assert "| system | n | accuracy % |" in report and "| crag | 2 | 100.0 |" in report
    assert "## CRAG against RAG (2 questions)" in report and "+50.0 points" in report
    assert "| crag | 100.0 (1) | – | 100.0 (1) |" in report  # accuracy by action
    assert "| system | answer in knowledge % | rejected by the grade % |" in report
    assert "| crag | 0.0 | 0.0 | 0.0 | 0.0 | 100.0 |" in report  # both answered: no abstention to explain
    assert not list(out.glob("*.png"))  # the paper's figures are the lab's (tests/lab/test_paper.py)
    run_info = json.loads((out / "run.json").read_text())
    assert run_info["thresholds"]["crag"] == [0.5, -0.5] and run_info["kb_dropped"] == 0
    assert run_info["peak_rss_mib"] > 10  # this process's peak memory, in MiB


def test_an_interrupted_run_continues_without_redoing_questions(inputs, tmp_path, make_context):
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run(settings(inputs, out, make_context, chat=EchoChat(interrupt_after=2)))
    first = predictions(out)
    assert [(r["system"], r["qid"]) for r in first] == [("rag", "q1"), ("crag", "q1")]
    chat = EchoChat()
    run(settings(inputs, out, make_context, chat=chat))
    answered = first_asks(chat)
    assert len(answered) == 2 and all("Carl" in p for p in answered)  # only q2, for both systems
    rows = predictions(out)
    assert rows[:2] == first and len(rows) == 4
    chat = EchoChat()
    run(settings(inputs, out, make_context, chat=chat))
    assert chat.prompts == [] and len(predictions(out)) == 4  # nothing left to do


def test_editing_a_prompt_redoes_only_the_systems_that_use_it(inputs, tmp_path, make_context, monkeypatch):
    from crag import prompts

    out = tmp_path / "run"
    run(settings(inputs, out, make_context, "rag_paper_prompt,rag_compact_prompt"))
    first = {(r["system"], r["qid"]): r for r in predictions(out)}
    assert len(first) == 4 and len({r["prompt_sha256"] for r in first.values()}) == 2
    monkeypatch.setitem(prompts.GENERATE_PROMPTS, "compact", "Edited. {knowledge}\nQ: {question}\nA:")
    chat = EchoChat()
    results = run(settings(inputs, out, make_context, "rag_paper_prompt,rag_compact_prompt", chat=chat))
    answered = first_asks(chat)
    assert len(answered) == 2 and all(p.startswith("Edited.") for p in answered)  # the paper prompt's rows stay
    rows = predictions(out)
    latest = {(r["system"], r["qid"]): r for r in rows}
    assert len(rows) == 6 and results["rag_compact_prompt"]["n"] == 2
    assert latest[("rag_paper_prompt", "q1")] == first[("rag_paper_prompt", "q1")]
    assert latest[("rag_compact_prompt", "q1")]["prompt_sha256"] != first[("rag_compact_prompt", "q1")]["prompt_sha256"]


def test_records_without_a_prompt_digest_are_redone(inputs, tmp_path, make_context):
    out = tmp_path / "run"
    run(settings(inputs, out, make_context, "rag"))
    old = [{k: v for k, v in r.items() if k != "prompt_sha256"} for r in predictions(out)]
    (out / PREDICTIONS).write_text("".join(json.dumps(r) + "\n" for r in old))
    chat = EchoChat()
    run(settings(inputs, out, make_context, "rag", chat=chat))
    assert len(first_asks(chat)) == 2 and len(predictions(out)) == 4


def test_a_line_cut_short_is_redone(inputs, tmp_path, make_context):
    out = tmp_path / "run"
    run(settings(inputs, out, make_context))
    raw = (out / PREDICTIONS).read_text()
    (out / PREDICTIONS).write_text(raw[: len(raw) - 40])  # the last record loses its end
    chat = EchoChat()
    run(settings(inputs, out, make_context, chat=chat))
    assert len([p for p in chat.prompts if not p.rstrip().endswith("query:")]) == 1
    assert len(predictions(out)) == 4


def test_a_larger_limit_continues_a_smaller_one(inputs, tmp_path, make_context):
    out = tmp_path / "run"
    assert run(settings(inputs, out, make_context, limit=1))["crag"]["n"] == 1
    assert run(settings(inputs, out, make_context))["crag"]["n"] == 2
    assert len(predictions(out)) == 4


def test_other_settings_refuse_to_mix_into_a_folder(inputs, tmp_path, make_context):
    out = tmp_path / "run"
    run(settings(inputs, out, make_context, limit=1))
    with pytest.raises(ValueError, match="other settings.*drop_gold: 0.0 -> 0.5"):
        run(settings(inputs, out, make_context, limit=1, drop_gold=0.5))


def test_a_run_kept_from_before_hybrid_search_counts_as_dense(inputs, tmp_path, make_context):
    """run.json files written before `search` was recorded come from dense retrieval: resuming one with
    hybrid search would mix two retrievers' predictions, and a dense run resumes it."""
    out = tmp_path / "run"
    run(settings(inputs, out, make_context, limit=1))
    recorded = json.loads((out / "run.json").read_text())
    assert recorded["search"] == "hybrid"
    del recorded["search"]
    (out / "run.json").write_text(json.dumps(recorded))
    with pytest.raises(ValueError, match="other settings.*search: 'dense' -> 'hybrid'"):
        run(settings(inputs, out, make_context, limit=1))
    dense = settings(inputs, out, make_context)
    dense.context.search = "dense"
    assert run(dense)["crag"]["n"] == 2


def test_a_failing_question_is_recorded_and_the_run_goes_on(inputs, tmp_path, make_context):
    class Broken(EchoChat):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            if "Anna Berg's occupation" in str(messages[-1].content):
                raise RuntimeError("context window exceeded")
            return super()._generate(messages, stop, run_manager, **kwargs)

    out = tmp_path / "run"
    results = run(settings(inputs, out, make_context, "rag", chat=Broken()))
    assert results["rag"]["errors"] == 1 and results["rag"]["n"] == 2
    failed = next(r for r in predictions(out) if r["qid"] == "q1")
    assert failed["error"] == "RuntimeError: context window exceeded" and failed["correct"] is False
    assert "| 1 |" in (out / "report.md").read_text()


def test_a_checkpoint_rewritten_at_the_same_path_is_a_changed_setting(tmp_path):
    """`crag evaluator adapt --overwrite` rewrites a folder in place: its old predictions must not be kept."""
    from crag.evaluation.runner import PREDICTIONS, _check_settings, folder_digest

    checkpoint = tmp_path / "adapted"
    checkpoint.mkdir()
    (checkpoint / "crag_evaluator.json").write_text('{"thresholds": {"upper": 0.5, "lower": 0.0}}')
    out = tmp_path / "run"
    out.mkdir()
    first = {"evaluator": str(checkpoint), "evaluator_sha256": folder_digest(str(checkpoint)), "thresholds": {}}
    _check_settings(out, dict(first))
    (out / PREDICTIONS).write_text("{}\n")
    _check_settings(out, dict(first))  # unchanged: resumes
    (checkpoint / "crag_evaluator.json").write_text('{"thresholds": {"upper": 0.6, "lower": 0.0}}')
    with pytest.raises(ValueError, match="evaluator_sha256"):
        _check_settings(out, {**first, "evaluator_sha256": folder_digest(str(checkpoint))})


def test_a_run_made_by_other_code_is_not_resumed(tmp_path):
    """A change to the code (how the evaluator reads a passage) leaves the checkpoint's bytes as they
    were: its old answers must not be kept either."""
    from crag.evaluation.runner import PREDICTIONS, _check_settings, code_digest

    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "reading.py").write_text("HEAD = 16\n")
    before = code_digest(package)
    assert before == code_digest(package)
    (package / "notes.txt").write_text("not code")
    assert code_digest(package) == before
    out = tmp_path / "run"
    out.mkdir()
    _check_settings(out, {"code_sha256": before, "thresholds": {}})
    (out / PREDICTIONS).write_text("{}\n")
    _check_settings(out, {"code_sha256": before, "thresholds": {}})  # the same code: resumes
    (package / "sub" / "reading.py").write_text("HEAD = 24\n")
    with pytest.raises(ValueError, match="code_sha256"):
        _check_settings(out, {"code_sha256": code_digest(package), "thresholds": {}})
    assert code_digest() != before  # the real package is hashed by default


def test_a_run_kept_from_before_the_checkpoint_digest_resumes(tmp_path):
    import json

    from crag.evaluation.runner import PREDICTIONS, RUN_FILE, _check_settings

    out = tmp_path / "run"
    out.mkdir()
    (out / RUN_FILE).write_text(json.dumps({"evaluator": "shipped", "thresholds": {}}))
    (out / PREDICTIONS).write_text("{}\n")
    _check_settings(out, {"evaluator": "shipped", "evaluator_sha256": "abc", "thresholds": {}})
    assert json.loads((out / RUN_FILE).read_text())["evaluator_sha256"] == "abc"


def test_quoting_or_not_is_part_of_a_records_digest(inputs, tmp_path, make_context):
    """crag and crag_no_quote share prompts but not answers: a record of one is never reused for the other."""
    out = tmp_path / "run"
    run(settings(inputs, out, make_context, "crag"))
    run(settings(inputs, out, make_context, "crag_no_quote"))  # run.json keeps crag's quote threshold too
    rows = predictions(out)
    assert len({r["prompt_sha256"] for r in rows if r["system"] == "crag"}) == 1
    assert {r["prompt_sha256"] for r in rows if r["system"] == "crag"} != {
        r["prompt_sha256"] for r in rows if r["system"] == "crag_no_quote"
    }
    info = json.loads((out / "run.json").read_text())
    assert info["quote_thresholds"]["crag_no_quote"] > 1 >= info["quote_thresholds"]["crag"]
