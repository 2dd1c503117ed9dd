"""The chat model as the evaluator's teacher: its P(yes) to LangGraph's CRAG tutorial grading prompt.

On the documentation slice the tutorial's grader, read as P(yes) from the local 1.5B model's first
reply token, reaches ROC-AUC 0.880 where the shipped evaluator reaches 0.678 and cosine 0.743
(docs/reports/2026-11-27-generated-questions-and-requery.md). At 2.2 s a document it cannot grade
while a user waits, but it can label training pairs once, for the evaluator to learn from (the
distillation of GPL and InPars-v2, with a chat model in the cross-encoder teacher's place).

`YesNoGrader` asks one (question, document) at a time, as the tutorial does. `label_pairs` labels
many: the prompt puts the document before the question, so pairs are taken passage by passage and
llama.cpp keeps the prompt's shared start in its cache; each further question about a passage costs
its own few tokens instead of the whole prompt. Labels are appended to a JSONL as they come
(`{"question", "passage": sha1 of the text, "p_yes"}`), so a stopped run resumes where it was.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tqdm.auto import tqdm

from crag.jsonl import appended_objects, drop_torn_line
from crag.models.llama import load_llama
from crag.models.yes_no import LlamaYesNo, grader_messages


def passage_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


class YesNoGrader:
    """The tutorial's grade (`crag.models.yes_no`) of a llama.cpp GGUF loaded for labelling alone."""

    def __init__(self, path: str | Path, n_ctx: int = 2048, threads: int = 2, reuse_prefix: bool = True):
        # a GGUF file (crag.models.gguf.model_file resolves "local" and the like; this layer cannot)
        self.llama = load_llama(path, n_ctx=n_ctx, n_threads=threads, verbose=False)
        self.grader = LlamaYesNo(self.llama)
        self.reuse_prefix = reuse_prefix  # False: every prompt evaluated whole, as one call per document costs

    def score(self, question: str, document: str) -> float:
        """The grade of one pair by the tutorial's prompt, in [-1, 1]."""
        return self.score_messages(grader_messages(question, document))

    def score_messages(self, messages: list[dict[str, str]]) -> float:
        """P(yes) of the reply to any chat `messages`, in [-1, 1]."""
        return self.grader.score(self.llama, messages, reuse_prefix=self.reuse_prefix)


def read_labels(path: Path) -> dict[tuple[str, str], float]:
    """{(question, passage key): P(yes)} from a labels JSONL (a torn last line is ignored)."""
    return {(r["question"], r["passage"]): float(r["p_yes"]) for r in appended_objects(path)}


def label_pairs(
    pairs: Sequence[tuple[str, str]],
    out: Path,
    score: Callable[[str, str], float],
    *,
    time_limit: float | None = None,
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """Append P(yes) for each (question, passage) not in `out` yet, passage by passage in a seeded order
    (a partial run is a random sample of passages, each with all its questions); stop after `time_limit`
    seconds. `score(question, passage)` returns a grade in [-1, 1]."""
    done = read_labels(out)
    by_passage: dict[str, list[str]] = {}
    for question, passage in pairs:
        if (question, passage_key(passage)) not in done:
            by_passage.setdefault(passage, [])
            if question not in by_passage[passage]:
                by_passage[passage].append(question)
    passages = sorted(by_passage)
    random.Random(seed).shuffle(passages)
    started, labelled = time.monotonic(), 0
    out.parent.mkdir(parents=True, exist_ok=True)
    bar = tqdm(total=sum(len(q) for q in by_passage.values()), desc="teacher labels", unit="pair", disable=not progress)
    drop_torn_line(out)
    with out.open("a", encoding="utf-8") as sink:
        for passage in passages:
            if time_limit is not None and time.monotonic() - started > time_limit:
                break
            key = passage_key(passage)
            for question in by_passage[passage]:
                p_yes = (score(question, passage) + 1.0) / 2.0
                sink.write(json.dumps({"question": question, "passage": key, "p_yes": round(p_yes, 4)}) + "\n")
                labelled += 1
                bar.update()
            sink.flush()
    bar.close()
    return {
        "labelled": labelled,
        "already": len(done),
        "left": sum(len(q) for q in by_passage.values()) - labelled,
        "seconds": round(time.monotonic() - started, 1),
    }
