"""Is what the evaluator reads the ceiling on documentation, or the evaluator itself?

The shipped evaluator reads 112 tokens of a passage (its start and the stretch that holds most of the
question's terms, `crag.evaluator.reading`); a documentation chunk is about 250. Its teacher, the
chat model asked LangGraph's tutorial grading prompt, reads the chunk whole. This grades the retrieved
documents of the documentation set (the graph's own retrieval, k 5) three ways, on the same documents:

- the evaluator's model alone (its logit, no lexical blend) and any other checkpoints given;
- the chat model's P(yes) over the whole chunk, as the second opinion reads it;
- the chat model's P(yes) over exactly the text the evaluator reads;

with the retriever's own order as the baseline, and reports ROC-AUC pooled over the documents (a
document is relevant when it holds an answer string, as knowledge recall counts it), with a 95% interval
over resampled questions, and how often each score's top document holds an answer.

If the teacher reading the evaluator's window ranks about as well as reading the whole chunk, the window
is not what holds the evaluator back. Grading is slow (about 7 s a document for both readings on two
cores), so a seeded sample of questions is graded, one JSON line per document, resumable.

    python -m lab.experiments.teacher_window --inputs artifacts/eval/docs-inputs --questions 40 \\
        --out artifacts/bench/teacher-window.jsonl [--checkpoint name=folder ...] \\
        [--all-documents artifacts/bench/docs-retrieved.jsonl]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from tqdm.auto import tqdm

from crag.evaluation.answer_metrics import contains_answer
from crag.evaluation.inputs import read_passages, read_questions
from crag.evaluation.kb import DEFAULT_CHROMA_DIR, ensure_collection
from crag.evaluator.model import load_scorer
from crag.evaluator.runnable import DEFAULT_CHECKPOINT, RetrievalEvaluator
from crag.evaluator.training.evaluation import roc_auc_intervals
from crag.graphs.crag import build_graph
from crag.models.chat import chat_model, relevance
from crag.passages import title_of
from crag.resources import RECHECK_CHARS
from crag.settings import Context


def retrieved(inputs: Path, chunk_size: int, chunk_overlap: int, k: int, questions: list) -> list[list[Document]]:
    """Each question's documents as the graph retrieves them (no answer is written)."""
    collection, _, _ = ensure_collection(
        read_passages(inputs / "kb.jsonl", "kb"), DEFAULT_CHROMA_DIR, chunk_size=chunk_size, chunk_overlap=chunk_overlap
    )
    ctx = Context(
        evaluator=RetrievalEvaluator(),
        chat_model=FakeListChatModel(responses=[""]),
        chroma_dir=str(DEFAULT_CHROMA_DIR),
        collection=collection,
        web_backend="local",
        web_index=str(inputs / "web.jsonl"),
        k=k,
        recheck_threshold=None,
    )
    graph = build_graph(answer=False).compile()
    return [list(graph.invoke({"question": q.question}, context=ctx).get("documents") or []) for q in tqdm(questions)]


def labelled(document: Document, answers: list[str]) -> int:
    """1 when the document holds an answer string, as knowledge recall counts it."""
    return int(contains_answer(f"{title_of(document)} {document.page_content}", answers))


def top_holds_answer(y: np.ndarray, v: np.ndarray, q: np.ndarray) -> float:
    """Of the questions with a document that holds an answer, the share whose best-scored document does."""
    return float(np.mean([y[q == i][np.argmax(v[q == i])] for i in sorted(set(q.tolist())) if y[q == i].any()]))


def print_ranking(y: np.ndarray, q: np.ndarray, scores: dict[str, np.ndarray]) -> None:
    """Each score's ROC-AUC pooled over the documents, with its 95% interval over resampled questions, and
    how often its top document holds an answer, as a Markdown table."""
    print("| score | ROC-AUC [95%] | top-1 holds an answer |\n|---|---|---|")
    intervals = roc_auc_intervals([str(i) for i in q], y, scores)
    for name, v in scores.items():
        (low, high), a = intervals[name]["ci"], intervals[name]["roc_auc"]
        print(f"| {name} | {a:.3f} [{low:.3f}, {high:.3f}] | {top_holds_answer(y, v, q):.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=Path, required=True, help="a build-docs output folder")
    parser.add_argument("--chunk-size", type=int, default=1000)
    parser.add_argument("--chunk-overlap", type=int, default=100)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--questions", type=int, default=40, help="a seeded sample of the answerable questions")
    parser.add_argument("--model", default="local", help="the teacher")
    parser.add_argument("--out", type=Path, required=True, help="JSONL, one line per graded document (resumes)")
    parser.add_argument("--checkpoint", action="append", default=[], help="name=folder: another evaluator's model")
    parser.add_argument("--all-documents", type=Path, help="also write every answerable question's documents here")
    args = parser.parse_args()

    answerable = [q for q in read_questions(args.inputs / "questions.jsonl") if q.answerable]
    sample = list(range(len(answerable)))
    random.Random(7).shuffle(sample)
    sample = sample[: args.questions]
    retrieve = lambda qs: retrieved(args.inputs, args.chunk_size, args.chunk_overlap, args.k, qs)  # noqa: E731
    if args.all_documents:  # ungraded, for `generated_curve.py score`; the sample's are among them
        every = retrieve(answerable)
        with args.all_documents.open("w") as out:
            for qi, (q, docs) in enumerate(zip(answerable, every)):
                for di, d in enumerate(docs):
                    line = {"q": qi, "rank": di, "question": q.question, "title": title_of(d), "text": d.page_content}
                    out.write(json.dumps({**line, "label": labelled(d, q.answers)}) + "\n")
        documents = [every[i] for i in sample]
    else:
        documents = retrieve([answerable[i] for i in sample])
    questions = [answerable[i] for i in sample]
    scorer = load_scorer(DEFAULT_CHECKPOINT)
    teacher = chat_model(args.model, max_tokens=3)
    done = {json.loads(line)["key"] for line in args.out.open()} if args.out.exists() else set()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as out:
        for qi, (q, docs) in enumerate(tqdm(list(zip(questions, documents)), desc="grade", unit="question")):
            pairs = [(q.question, scorer.passage_text(d.page_content, title_of(d))) for d in docs]
            windows = [text for _, text in scorer.readings(pairs)]
            for di, (d, window) in enumerate(zip(docs, windows)):
                key = f"{q.question}|{di}"
                if key in done:
                    continue
                start = time.perf_counter()
                whole = relevance(teacher, q.question, f"{title_of(d)}\n{d.page_content}"[:RECHECK_CHARS])
                middle = time.perf_counter()
                read = relevance(teacher, q.question, window)
                line = {
                    "key": key,
                    "q": qi,
                    "rank": di,
                    "question": q.question,
                    "title": title_of(d),
                    "text": d.page_content,
                    "label": labelled(d, q.answers),
                    "teacher_whole": whole,
                    "teacher_window": read,
                    "window": window,
                    "seconds_whole": round(middle - start, 2),
                    "seconds_window": round(time.perf_counter() - middle, 2),
                }
                out.write(json.dumps(line) + "\n")
                out.flush()

    rows = [json.loads(line) for line in args.out.open()]
    y, q = np.array([r["label"] for r in rows]), np.array([r["q"] for r in rows])
    scores = {"retrieval rank": np.array([-r["rank"] for r in rows], dtype=float)}
    for name, path in [("shipped evaluator", str(DEFAULT_CHECKPOINT)), *(c.split("=", 1) for c in args.checkpoint)]:
        model = load_scorer(path)
        pairs = [(r["question"], model.passage_text(r["text"], r["title"])) for r in rows]
        scores[f"{name} (model)"] = np.array(model.model_logits(pairs), dtype=float)
    scores["teacher, whole chunk"] = np.array([r["teacher_whole"] for r in rows])
    scores["teacher, the evaluator's window"] = np.array([r["teacher_window"] for r in rows])
    print(f"{len(set(q.tolist()))} questions, {len(rows)} documents, {int(y.sum())} hold an answer")
    print_ranking(y, q, scores)
    for key in ("seconds_whole", "seconds_window"):
        print(f"{key}: p50 {np.median([r[key] for r in rows]):.2f} s a document")


if __name__ == "__main__":
    main()
