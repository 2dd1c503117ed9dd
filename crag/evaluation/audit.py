"""The fact judge audited by hand: `sample` draws facts with their verdicts (seeded, uniform over every judged
fact, so the agreement it gives estimates the judge's on all of them) into a CSV a person labels, beside a
markdown page with each fact's evidence to read; `agreement` reads the labelled CSV back and says how often each
verdict (supported, the lexical check, the model's yes/no) agrees with the person, with Cohen's kappa."""

from __future__ import annotations

import csv
import random
from collections.abc import Sequence
from pathlib import Path

from crag.evaluation.facts import EVIDENCE_CHARS

COLUMNS = ["n", "system", "qid", "topic", "fact", "sentence", "lexical", "judge_p", "judge", "supported", "label"]
VERDICTS = ("supported", "lexical", "judge")
_YES = {"yes", "y", "1", "true", "supported"}
_NO = {"no", "n", "0", "false", "unsupported"}


def sample(rows: Sequence[dict], n: int = 60, seed: int = 0) -> list[dict]:
    """`n` facts drawn at random from the judged answers' facts (all of them when fewer), each with its verdicts
    and an empty `label`, in a stable order."""
    if n < 1:
        raise ValueError(f"the sample needs at least one fact, got {n}")
    pool = [
        {"system": r["system"], "qid": r["qid"], "topic": r["topic"], **fact}
        for r in sorted(rows, key=lambda r: (r["system"], r["qid"]))
        for fact in r["facts"]
    ]
    if not pool:
        raise ValueError("no judged facts to sample: judge a run's long answers first (crag eval facts)")
    drawn = random.Random(seed).sample(pool, min(n, len(pool)))
    return [{"n": i, **{k: fact[k] for k in COLUMNS[1:-1]}, "label": ""} for i, fact in enumerate(drawn, 1)]


def write(path: Path, facts: Sequence[dict], evidence: dict[str, list[str]]) -> Path:
    """The CSV to label (`label`: yes when the evidence supports the fact, no when it does not) and, beside it,
    a markdown page with each fact's evidence; returns the page's path."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(facts)
    page = path.with_suffix(".md")
    lines = [
        f"# Fact judge audit ({len(facts)} facts)",
        "",
        f"Label each fact in {path.name}'s `label` column: yes when the passages support it, no when they do not "
        "(a fact they neither state nor imply is no). Read the passages below, not your own knowledge.",
    ]
    for fact in facts:
        passages = "\n\n".join(f"> {t}" for t in evidence.get(fact["qid"], []))[: EVIDENCE_CHARS + 200]
        lines += ["", f"## {fact['n']}. {fact['topic']} ({fact['system']})", "", f"**Fact:** {fact['fact']}", ""]
        lines += [f"From the sentence: {fact['sentence']}", "", passages or "> (no passages)"]
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return page


def _truth(value: str, where: str) -> bool | None:
    text = value.strip().casefold()
    if not text:
        return None
    if text in _YES | _NO:
        return text in _YES
    raise ValueError(f"{where}: label {value!r} is neither yes nor no")


def agreement(path: Path) -> dict:
    """How often each verdict agrees with the labels of a filled-in audit CSV (unlabelled rows skipped), with
    Cohen's kappa for each, and the share of facts the person said were supported."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"audit file {path} does not exist")
    pairs: list[tuple[bool, dict[str, bool]]] = []
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in ("label", *VERDICTS) if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path} has no {', '.join(missing)} column: is it an audit file (crag eval audit)?")
        for number, row in enumerate(reader, 2):
            label = _truth(row["label"] or "", f"{path}, line {number}")
            if label is not None:
                pairs.append((label, {v: _truth(row[v], f"{path}, line {number}") is True for v in VERDICTS}))
    if not pairs:
        raise ValueError(f"{path} has no labelled facts: fill in the label column with yes or no")
    human = [label for label, _ in pairs]
    result: dict = {"labelled": len(pairs), "human_supported": sum(human) / len(human)}
    for verdict in VERDICTS:
        said = [verdicts[verdict] for _, verdicts in pairs]
        result[verdict] = sum(a == b for a, b in zip(human, said)) / len(pairs)
        result[f"{verdict}_kappa"] = kappa(human, said)
    return result


def kappa(a: Sequence[bool], b: Sequence[bool]) -> float:
    """Cohen's kappa of two yes/no labellings: agreement beyond what their rates of yes give by chance."""
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b)) / n
    p_a, p_b = sum(a) / n, sum(b) / n
    chance = p_a * p_b + (1 - p_a) * (1 - p_b)
    return 1.0 if chance == 1 else (observed - chance) / (1 - chance)


__all__ = ["agreement", "sample", "write"]  # what callers outside the package use
