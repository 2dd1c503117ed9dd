"""`crag eval run`: answer every question with every system, resumably, then report.
Predictions are appended to DIR/predictions.jsonl a line at a time and flushed, so an interrupted run loses at
most the question it was answering; the same command again skips every (system, question) already there, unless
the system's generation prompt was edited since (each record keeps a digest of its prompt). DIR/run.json records
what the predictions were made with (input hashes, drop-gold, k, chunking, models, thresholds), and a run on
other settings refuses to mix its predictions into that folder. Questions are the outer loop and systems the
inner one, so every system sees the machine in the same state and wall times compare when others share the CPU."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from crag import resources
from crag.evaluation.facts import model_judge, score_run
from crag.evaluation.inputs import (
    drop_gold,
    file_digest,
    read_passages,
    read_passages_counted,
    read_questions,
)
from crag.evaluation.kb import (
    DEFAULT_CHROMA_DIR,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    chunk_passages,
    ensure_collection,
)
from crag.evaluation.perturb import PerturbedRetrieval
from crag.evaluation.pipelines import run_question
from crag.evaluation.records import prediction_record
from crag.evaluation.report import write_outputs
from crag.evaluation.systems import System, system_context
from crag.evaluator.runnable import DEFAULT_CHECKPOINT, RetrievalEvaluator
from crag.jsonl import drop_torn_line
from crag.prompts import (
    FLARE_NO_KNOWLEDGE_PROMPT,
    FLARE_PROMPT,
    GENERATE_STOP,
    NO_KNOWLEDGE_PROMPTS,
    QUOTE_ANSWER,
    flare_prompt,
    prompt_text,
)
from crag.settings import AnswerStyle, Context, Search
from crag.templates import replaced_text

PREDICTIONS = "predictions.jsonl"
RUN_FILE = "run.json"
# what must match for predictions to be comparable; the systems and --limit may change freely, and
# the generation prompt is checked per record (`prompt_digest`)
FINGERPRINT = (
    "questions_sha256",
    "kb_sha256",
    "web_sha256",
    "drop_gold",
    "shuffle_docs",
    "noise",
    "seed",
    "k",
    "search",
    "top_k_strips",
    "web_k",
    "chunk_size",
    "chunk_overlap",
    "chat_model",
    "evaluator",
    "evaluator_sha256",
    "max_answer_tokens",
    "answer_style",
    "long_answer_tokens",
    "code_sha256",
    "self_rag_retrieve_threshold",
)
# keys added to FINGERPRINT after runs were kept, with the value earlier runs had; None where it is unknown (a
# run.json without such a key is then not told it changed)
ADDED_TO_FINGERPRINT = {
    "evaluator_sha256": None,
    "search": "dense",
    "code_sha256": None,
    "shuffle_docs": False,
    "noise": 0,
    "self_rag_retrieve_threshold": 0.2,  # no run had a Self-RAG system before: the default
    "answer_style": "short",  # every answer was short before
    "long_answer_tokens": None,
}


@dataclass
class RunSettings:
    """Everything a run depends on; `context` is for tests and apps that inject models and backends."""

    questions: Path
    kb: Path
    web: Path
    out: Path
    systems: list[System]
    limit: int | None = None
    drop_gold: float = 0.0
    shuffle_docs: bool = False  # the retrieved documents in a random order (`crag.evaluation.perturb`)
    noise: int = 0  # retrieved documents replaced by random chunks of the knowledge base
    seed: int = 0
    k: int = Context.default("k")  # what users get (`crag ask`, Studio, the server), and the paper's ndocs 10
    search: Search = Context.default("search")  # noqa: RUF009 - as users search
    chroma_dir: Path = Path(DEFAULT_CHROMA_DIR)
    chunk_size: int = DEFAULT_CHUNK_SIZE
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP
    chat_model: str = "local"
    answer_style: AnswerStyle = "short"  # "long": a paragraph (`Context.answer_style`), its facts scored after the run
    long_answer_tokens: int = Context.default("long_answer_tokens")
    evaluator: str | None = None
    progress: bool = True
    resamples: int = 2000
    context: Context | None = None  # replaces the context built from the settings above


class PredictionStore:
    """DIR/predictions.jsonl: read what is done, append one record at a time."""

    def __init__(self, path: Path):
        self.path = path
        self.records: dict[tuple[str, str], dict] = {}
        if path.exists():
            self._load()

    def _load(self) -> None:
        drop_torn_line(self.path)  # a line cut short by an interrupt
        for number, line in enumerate(self.path.read_bytes().decode("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                key = (record["system"], record["qid"])
            except (json.JSONDecodeError, KeyError, TypeError):
                raise ValueError(
                    f"{self.path}, line {number}: not a prediction record; delete the line or the file"
                ) from None
            self.records[key] = record

    def done(self, system: str, qid: str, prompt_digest: str) -> bool:
        """Answered already, with the same generation prompt text (records from before the digest count as stale)."""
        record = self.records.get((system, qid))
        return record is not None and record.get("prompt_sha256") == prompt_digest

    def append(self, record: dict) -> None:
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
            os.fsync(out.fileno())
        self.records[(record["system"], record["qid"])] = record


def tree_digest(folder: Path, pattern: str = "*") -> str:
    """sha256 over the files under `folder` that match `pattern` (their relative names and bytes)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob(pattern) if p.is_file()):
        digest.update(f"{path.relative_to(folder)}\0{file_digest(path)}\0".encode())
    return digest.hexdigest()


def folder_digest(checkpoint: str | None) -> str:
    """sha256 over a checkpoint folder's files (names and bytes); the shipped one when None."""
    return tree_digest(Path(checkpoint or DEFAULT_CHECKPOINT).expanduser())


def code_digest(package: Path | None = None) -> str:
    """sha256 over the `crag` package's Python sources (names and bytes; `package` for another folder):
    the answers a run records depend on the code that made them as much as on the checkpoint, so a run
    resumes only on the same code."""
    return tree_digest(package or Path(__file__).resolve().parents[1], "*.py")


def _recorded(run: dict, key: str) -> Any:
    """A fingerprint key's value in a run's settings: as written, else the one runs had before the key was added."""
    return run.get(key, ADDED_TO_FINGERPRINT.get(key))


def _check_settings(out: Path, settings: dict) -> None:
    path = out / RUN_FILE
    if path.exists():
        previous = json.loads(path.read_text())
        unknown = {k for k, before in ADDED_TO_FINGERPRINT.items() if before is None and k not in previous}
        changed = [k for k in FINGERPRINT if k not in unknown and _recorded(previous, k) != _recorded(settings, k)]
        if changed and (out / PREDICTIONS).exists():
            details = ", ".join(f"{k}: {_recorded(previous, k)!r} -> {settings.get(k)!r}" for k in changed)
            raise ValueError(
                f"{out} holds predictions made with other settings ({details}); use another --out or delete that folder"
            )
        for key in ("thresholds", "quote_thresholds"):  # per system: a run of other systems keeps the earlier ones
            settings[key] = {**previous.get(key, {}), **settings.get(key, {})}
    path.write_text(json.dumps(settings, indent=2, default=str) + "\n")


def prompt_digest(ctx: Context) -> str:
    """What a system's answers depend on beyond run.json: the generation prompts it uses, where they stop, and
    when a quote replaces the model's answer, and the prompts the user replaced (`Context.prompts`). Per record, not in run.json's fingerprint, so editing one prompt
    redoes only the systems that use it (rag and crag on the paper prompt stay valid when "compact" changes)."""
    style = ctx.answer_style
    # a long answer's prompts and FLARE's (a short answer's digest is what it was before there were long ones)
    long = (
        [flare_prompt(FLARE_PROMPT, style), flare_prompt(FLARE_NO_KNOWLEDGE_PROMPT, style)] if style != "short" else []
    )
    text = "\0".join(
        [
            prompt_text(ctx.generate_prompt, style),
            # and the prompt it asks again with, when the first answer does not stand
            prompt_text(ctx.retry_prompt, style) if ctx.retry_prompt else "",
            NO_KNOWLEDGE_PROMPTS[style],
            *long,
            *GENERATE_STOP,
            QUOTE_ANSWER,  # and when a strip is quoted instead (run.json records the evaluator)
            repr(ctx.quote_threshold),
            repr(ctx.further_strips),  # and how many strips more it reads when it declines
            *([replaced_text(ctx.prompts)] if ctx.prompts else []),  # and the user's prompts (`Context.prompts`)
        ]
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def peak_rss_mib() -> float:
    """This process's peak resident memory so far, in MiB (Linux reports ru_maxrss in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def warm_up(ctx: Context, evaluator: Any) -> None:
    """Load every model and index once before the clock starts, so no system's first question pays for it."""
    resources.retrieve(ctx, "warm up")
    evaluator.invoke({"question": "warm up", "documents": ["warm up"]})
    resources.web_search(ctx, "warm up")
    resources.chat(ctx, "answer").invoke("Say OK.")


def build_context(settings: RunSettings, collection: str) -> Context:
    if settings.context is not None:
        return settings.context

    return Context(
        evaluator=RetrievalEvaluator(checkpoint=settings.evaluator),  # one object: loaded once, counted per run
        chat_model=settings.chat_model,
        chroma_dir=str(settings.chroma_dir),
        chroma_url=None,
        collection=collection,
        web_backend="local",
        web_index=str(settings.web),
        k=settings.k,
        search=settings.search,
        answer_style=settings.answer_style,
        long_answer_tokens=settings.long_answer_tokens,
    )


def run(settings: RunSettings) -> dict:
    """Run (or resume) every system on every question, then write results.json and report.md."""
    questions = read_questions(settings.questions)
    passages, empty = read_passages_counted(settings.kb)
    read_passages(settings.web, "web")  # bad web records fail now, not at the first search
    if settings.limit is not None and settings.limit < 1:
        raise ValueError(f"--limit must be at least 1, got {settings.limit}")
    # the answers of every question in the file, not just the first --limit: the knowledge base
    # must not change when a run is resumed with another limit
    kept, dropped = drop_gold(passages, questions, settings.drop_gold, seed=settings.seed)
    questions = questions[: settings.limit] if settings.limit else questions
    out = Path(settings.out)
    out.mkdir(parents=True, exist_ok=True)

    if settings.context is None:
        collection, n_chunks, _ = ensure_collection(
            kept,
            settings.chroma_dir,
            chunk_size=settings.chunk_size,
            chunk_overlap=settings.chunk_overlap,
            progress=settings.progress,
        )
    else:
        collection, n_chunks = settings.context.collection, None
    base = build_context(settings, collection)
    if settings.shuffle_docs or settings.noise:
        pool = chunk_passages(kept, chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)
        perturbed = PerturbedRetrieval(
            base, pool, shuffle=settings.shuffle_docs, noise=settings.noise, seed=settings.seed
        )
        base = dataclasses.replace(base, retriever=perturbed)
    evaluator = resources.evaluator(base)
    calibrated = resources.calibrated(evaluator)
    contexts = {s.name: system_context(s, base, calibrated) for s in settings.systems}
    run_info = {
        "questions": str(settings.questions),
        "questions_sha256": file_digest(settings.questions),
        "kb": str(settings.kb),
        "kb_sha256": file_digest(settings.kb),
        "web": str(settings.web),
        "web_sha256": file_digest(settings.web),
        "drop_gold": settings.drop_gold,
        "shuffle_docs": settings.shuffle_docs,
        "noise": settings.noise,
        "seed": settings.seed,
        "kb_passages": len(passages),
        "kb_empty_skipped": empty,
        "kb_dropped": len(dropped),
        "kb_chunks": n_chunks,
        "collection": collection,
        "chroma_dir": str(settings.chroma_dir),
        "k": base.k,
        "search": base.search,
        "top_k_strips": base.top_k_strips,
        "further_strips": base.further_strips,
        "web_k": base.web_k,
        "chunk_size": settings.chunk_size,
        "chunk_overlap": settings.chunk_overlap,
        "chat_model": str(base.chat_model) if isinstance(base.chat_model, str) else type(base.chat_model).__name__,
        "evaluator": settings.evaluator or "shipped",
        "evaluator_sha256": folder_digest(settings.evaluator),
        "max_answer_tokens": base.max_answer_tokens,
        "answer_style": base.answer_style,
        "long_answer_tokens": base.long_answer_tokens,
        "code_sha256": code_digest(),
        "generate_prompt": base.generate_prompt,
        "retry_prompt": base.retry_prompt,
        "recheck_threshold": base.recheck_threshold,
        "self_rag_retrieve_threshold": base.self_rag_retrieve_threshold,
        "thresholds": {
            s.name: [t.upper, t.lower]
            for s in settings.systems
            if s.uses_graph
            for t in [contexts[s.name].thresholds(calibrated)]
        },
        "calibrated_thresholds": [calibrated.upper, calibrated.lower],
        "quote_thresholds": {s.name: contexts[s.name].quote_from(calibrated) for s in settings.systems},
    }
    _check_settings(out, run_info)

    store = PredictionStore(out / PREDICTIONS)
    if settings.context is None:
        warm_up(base, evaluator)
    digests = {s.name: prompt_digest(contexts[s.name]) for s in settings.systems}
    todo = [(q, s) for q in questions for s in settings.systems if not store.done(s.name, q.qid, digests[s.name])]
    total = len(questions) * len(settings.systems)
    with tqdm(
        total=total,
        initial=total - len(todo),
        desc="eval",
        unit="answer",
        disable=not settings.progress,
        dynamic_ncols=True,
    ) as bar:
        for question, system in todo:
            bar.set_postfix_str(system.name, refresh=False)
            try:
                output, error = run_question(system.pipeline, contexts[system.name], question.question), None
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # one failing question must not sink a long run
                output, error = None, f"{type(exc).__name__}: {exc}"
            store.append(prediction_record(system, question, output, error, digests[system.name]))
            bar.update(1)
    # what the models of this run took: this process's peak, or a resumed session's if it was larger
    if base.answer_style == "long":  # each answer's facts judged (`crag.evaluation.facts`), new answers only
        with tqdm(desc="facts", unit="answer", disable=not settings.progress) as bar:
            score_run(out, store.records, questions, *model_judge(base.chat_model), progress=bar.update)
    run_info["peak_rss_mib"] = max(peak_rss_mib(), json.loads((out / RUN_FILE).read_text()).get("peak_rss_mib", 0))
    (out / RUN_FILE).write_text(json.dumps(run_info, indent=2, default=str) + "\n")
    return write_outputs(out, store.records, questions, run_info, resamples=settings.resamples)


__all__ = ["PREDICTIONS", "PredictionStore", "RunSettings", "run"]  # what callers outside the package use
