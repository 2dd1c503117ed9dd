"""results.json and report.md of a run, from its prediction records. Only the records of the run's current
questions count (a resumed run with a smaller `--limit` reports on those), and every system with predictions in
the folder is reported, so ablations run later into the same folder join the table."""

from __future__ import annotations

import json
import math
from pathlib import Path

from crag.evaluation import answer_metrics as metrics
from crag.evaluation.facts import FACTS, read_facts, summarize_facts
from crag.evaluation.inputs import Question
from crag.evaluation.systems import SYSTEMS

TARGETS = {"accuracy_points": 5.0, "token_ratio": 0.5, "wall_ratio": 1.3}


def _order(names) -> list[str]:
    known = [n for n in SYSTEMS if n in names]
    return known + sorted(n for n in names if n not in SYSTEMS)


def system_records(records: dict, questions: list[Question]) -> dict[str, list[dict]]:
    """The records of each system, in question order, for the current questions only."""
    by_system: dict[str, list[dict]] = {}
    for name in _order({system for system, _ in records}):
        rows = [records[(name, q.qid)] for q in questions if (name, q.qid) in records]
        if rows:
            by_system[name] = rows
    return by_system


def comparison(
    by_system: dict[str, list[dict]], results: dict, a: str = "crag", b: str = "rag", resamples: int = 2000
) -> dict | None:
    """CRAG against RAG on the questions both answered: the issue's targets, met or not."""
    if a not in by_system or b not in by_system:
        return None
    mine = {r["qid"]: r for r in by_system[a]}
    pairs = [(mine[r["qid"]], r) for r in by_system[b] if r["qid"] in mine and r.get("answerable", True)]
    diff = metrics.paired_difference(
        [float(x["correct"]) for x, _ in pairs], [float(y["correct"]) for _, y in pairs], resamples=resamples
    )
    tokens = _ratio(results[a]["knowledge_tokens"], results[b]["knowledge_tokens"])
    wall = _ratio(sum(x["wall_s"] for x, _ in pairs), sum(y["wall_s"] for _, y in pairs))
    return {
        "n": len(pairs),
        "accuracy_points": diff["mean"] * 100,
        "accuracy_points_ci": [c * 100 for c in diff["ci"]],
        "token_ratio": tokens,
        "wall_ratio": wall,
        "met": {
            "accuracy_points": diff["mean"] * 100 >= TARGETS["accuracy_points"],
            "token_ratio": tokens <= TARGETS["token_ratio"],
            "wall_ratio": wall <= TARGETS["wall_ratio"],
        },
    }


def _ratio(x: float, y: float) -> float:
    return x / y if y else math.inf


def write_outputs(
    out: Path, records: dict, questions: list[Question], run_info: dict, *, resamples: int = 2000
) -> dict:
    """Write results.json and report.md into `out`; returns the results."""
    out = Path(out)
    by_system = system_records(records, questions)
    results = {name: metrics.summarize(rows, resamples=resamples) for name, rows in by_system.items()}
    facts = read_facts(out / FACTS)  # long answers' fact verdicts (`crag.evaluation.facts`), when judged
    for name, rows in by_system.items():
        judged = [facts[(name, r["qid"])] for r in rows if (name, r["qid"]) in facts]
        if judged:
            results[name]["facts"] = summarize_facts(judged, resamples=resamples)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    versus = comparison(by_system, results, resamples=resamples)
    (out / "report.md").write_text(markdown(results, run_info, versus))
    return results


def _pct(x: float) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x * 100:.1f}"


def _ci(ci: list[float]) -> str:
    return f"[{_pct(ci[0])}, {_pct(ci[1])}]"


def long_answers(results: dict) -> list[str]:
    """The fact score's table (`crag.evaluation.facts`), when the run's long answers were judged."""
    scored = {name: r["facts"] for name, r in results.items() if r.get("facts")}
    if not scored:
        return []
    lines = [
        "",
        "Long answers, judged fact by fact against the topic's own-page passages (FActScore's way): supported "
        "(both the lexical grounding check and the chat model's yes/no say so) as the mean over answers with facts "
        "of their supported share, with its 95% bootstrap interval; each judge alone; facts per answer; and the "
        "share of answers that declined:",
        "",
        "| system | answers | supported % | 95% CI | lexical % | model yes % | facts / answer | abstained % | "
        "no evidence |",
        "|---|" + "---|" * 8,
    ]
    for name, f in scored.items():
        lines.append(
            f"| {name} | {f['answers_with_facts']} | {_pct(f['supported'])} | {_ci(f['supported_ci'])} | "
            f"{_pct(f['lexical'])} | {_pct(f['judge'])} | {f['facts_per_answer']:.1f} | {_pct(f['abstained'])} | "
            f"{f['without_evidence']} |"
        )
    return lines


def markdown(results: dict, run_info: dict, versus: dict | None) -> str:
    """The report: settings, the results table, honesty, stage latencies and CRAG against RAG."""
    lines = [f"# Evaluation: {Path(str(run_info.get('questions', ''))).name}", ""]
    lines.append(
        f"Knowledge base: {run_info.get('kb_passages')} passages ({run_info.get('kb_dropped', 0)} answer-bearing ones "
        f"dropped, --drop-gold {run_info.get('drop_gold')}), {run_info.get('kb_chunks')} chunks; k = {run_info.get('k')} "
        f"documents{', shuffled' if run_info.get('shuffle_docs') else ''}"
        f"{f', {n} of them random chunks' if (n := run_info.get('noise')) else ''}; "
        f"generator {run_info.get('chat_model')}; evaluator {run_info.get('evaluator')} "
        f"(calibrated upper/lower {', '.join(f'{t:.3g}' for t in run_info.get('calibrated_thresholds', []))})."
    )
    lines += [
        "",
        "Accuracy is the paper's (an answer string occurs in the prediction, case-sensitive) and, beside it, "
        "case-insensitive; intervals are 95% bootstrap. Knowledge recall: an answer occurs (whole word, any case) "
        "in the knowledge given to the generator. Tokens are words and punctuation marks.",
        "",
    ]
    lines.append(
        "| system | n | accuracy % | 95% CI | any-case % | 95% CI | knowledge recall % | knowledge tokens | "
        "correct / ambiguous / incorrect | evaluator calls / q | s / question | p50 / p95 s | wall s | errors |"
    )
    lines.append("|---|" + "---|" * 13)
    for name, r in results.items():
        actions = " / ".join(str(r["actions"].get(a, 0)) for a in metrics.ACTIONS) if r["actions"] else "–"
        lines.append(
            f"| {name} | {r['n']} | {_pct(r['accuracy'])} | {_ci(r['accuracy_ci'])} | {_pct(r['accuracy_insensitive'])} | "
            f"{_ci(r['accuracy_ci_insensitive'])} | {_pct(r['knowledge_recall'])} | {r['knowledge_tokens']:.0f} | {actions} | "
            f"{r['evaluator_calls']:.1f} | {r['latency']['per_question']:.2f} | "
            f"{r['latency'].get('p50', 0.0):.2f} / {r['latency'].get('p95', 0.0):.2f} | {r['wall_s']:.0f} | {r['errors']} |"
        )
    lines += [
        "",
        "Honest answers: abstention on the questions the sources cannot answer (target ≥ 90%) and on those they "
        "can (target ≤ 10%): all answerable ones, and those whose knowledge (what the generator was given) holds "
        "an answer; withheld correct (answerable questions whose draft held an answer but no strip supported it); "
        "strip recall (answerable questions whose retrieved documents contain an answer and "
        "whose knowledge still does); supported (answerable questions answered with at least one citation, every "
        "citation being a strip that supports its sentence); citation precision (citations pointing at a strip "
        "that contains an answer); quoted (answerable questions answered by quoting a strip because the model's "
        "own answer was unsupported or declined) and how many of those quotes hold an "
        "answer; looping (drafts that repeat a 4-word run or echo the question):",
        "",
        "| system | unanswerable n | abstained, unanswerable % | abstained, answerable % | abstained, answer in "
        "knowledge % | withheld correct % | strip recall % | supported % | citation precision % | quoted % | "
        "quotes with an answer % | looping % |",
        "|---|" + "---|" * 11,
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r['n_unanswerable']} | {_pct(r['abstention_unanswerable'])} | "
            f"{_pct(r['abstention_answerable'])} | {_pct(r.get('abstention_with_knowledge', 0.0))} | "
            f"{_pct(r.get('withheld_correct', 0.0))} | {_pct(r['strip_recall'])} | {_pct(r['supported'])} | "
            f"{_pct(r['citation_precision'])} | {_pct(r.get('quoted', 0.0))} | {_pct(r.get('quotes_correct', 0.0))} | "
            f"{_pct(r.get('degenerate', 0.0))} |"
        )
    traced = {name: r for name, r in results.items() if r.get("abstained_by_cause")}
    if traced:
        lines += [
            "",
            "Where the abstentions on answerable questions come from, each as a share of those questions (they add "
            "up to the abstention on them): the answer was in the knowledge and the model declined or drifted, or "
            "its draft was withheld; the retrieved documents held it but the grade rejected them all (Incorrect) "
            "and the web had nothing; they held it but refinement kept other strips; nothing retrieved or searched "
            "held it, where declining is right; and the share of answerable questions whose retrieved documents or "
            "web results hold an answer at all (no honest system abstains on fewer than the rest):",
            "",
            "| system | answer in knowledge % | rejected by the grade % | lost in refinement % | not retrieved % | "
            "answer reachable % |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {name} | "
            + " | ".join(_pct(r["abstained_by_cause"].get(cause, 0.0)) for cause in metrics.ABSTENTION_CAUSES)
            + f" | {_pct(r.get('answer_reachable', float('nan')))} |"
            for name, r in traced.items()
        ]
    lines += [
        "",
        "Mean seconds per question in each stage (search includes the query rewrite, shown apart), and the "
        "generator's calls and tokens per question (prompt and output, as the model counts them; unlike "
        "seconds they do not depend on what else the CPU is doing). An Ambiguous run refines and searches "
        "in parallel, so its stages can add up to more than its total:",
        "",
        "| system | "
        + " | ".join(metrics.STAGES)
        + " | rewrite | total | model calls | prompt tokens | output tokens |",
        "|---|" + "---|" * (len(metrics.STAGES) + 5),
    ]
    for name, r in results.items():
        stages = " | ".join(f"{r['latency'][s]:.3f}" for s in metrics.STAGES)
        lines.append(
            f"| {name} | {stages} | {r['latency']['rewrite']:.3f} | {r['latency']['per_question']:.3f} | "
            f"{r['llm_calls']:.2f} | {r['llm_prompt_tokens']:.0f} | {r['llm_completion_tokens']:.0f} |"
        )
    lines += long_answers(results)
    by_action = [(name, r["accuracy_by_action"]) for name, r in results.items() if r.get("accuracy_by_action")]
    if by_action:
        lines += [
            "",
            "Accuracy % by the action taken (questions in brackets):",
            "",
            "| system | " + " | ".join(metrics.ACTIONS) + " |",
            "|---|" + "---|" * len(metrics.ACTIONS),
        ]
        for name, accuracy in by_action:
            counts = results[name]["actions"]
            cells = [f"{_pct(accuracy[a])} ({counts[a]})" if a in accuracy else "–" for a in metrics.ACTIONS]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if versus:
        verdict = {True: "met", False: "missed"}
        lines += [
            "",
            f"## CRAG against RAG ({versus['n']} questions)",
            "",
            f"- accuracy: {versus['accuracy_points']:+.1f} points (paired 95% CI "
            f"[{versus['accuracy_points_ci'][0]:+.1f}, {versus['accuracy_points_ci'][1]:+.1f}]); target ≥ +5: "
            f"{verdict[versus['met']['accuracy_points']]}",
            f"- knowledge tokens: {versus['token_ratio']:.2f}× RAG's; target ≤ 0.5×: {verdict[versus['met']['token_ratio']]}",
            f"- wall time: {versus['wall_ratio']:.2f}× RAG's; target ≤ 1.3×: {verdict[versus['met']['wall_ratio']]}",
        ]
    return "\n".join(lines) + "\n"


__all__ = ["comparison", "markdown", "system_records", "write_outputs"]  # what callers outside the package use
