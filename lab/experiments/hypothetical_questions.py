"""Would the questions a chunk answers, written once at ingest, grade documentation better than the chunk?

LangChain's multi-vector retriever ("hypothetical queries") and LlamaIndex's `QuestionsAnsweredExtractor`
have a chat model write the questions each chunk answers and match the user's question against those. A
question matched against questions is a symmetric comparison, which all-MiniLM-L6-v2 was trained on; a
question against a manual's chunk is not. If the user's question were much closer to the questions its
chunk answers than to the chunk, that would be a signal the evaluator lacks on documentation.

`write` asks the chat model for each distinct retrieved chunk of a `teacher_window.py` file (the
evaluator's generation prompt, `generated.QUESTION_PROMPT`: a task, a detail and a casual question), one
JSON line per chunk, resumable. `score` reports ROC-AUC pooled over the documents (a document is relevant
when it holds an answer string), with 95% intervals over resampled questions, and how often each score's
top document holds one, for the questions whose documents all have questions written:

- the retriever's order, cosine of the question and the chunk, the chat model's grade of the chunk
  (`teacher_whole`, when the file has it) and the evaluator's score as the graph gave it (from a
  `crag eval run` folder's predictions, matched by question and rank);
- the best cosine of the user's question with the chunk's written questions (and with their derived
  styles), and the evaluator's score plus that cosine, each standardised within the question's set.

    python -m lab.experiments.hypothetical_questions write --documents artifacts/bench/teacher-window.jsonl \\
        --out artifacts/bench/hypothetical-questions.jsonl
    python -m lab.experiments.hypothetical_questions score --documents artifacts/bench/teacher-window.jsonl \\
        --questions-file artifacts/bench/hypothetical-questions.jsonl --run artifacts/eval/models/local-docs-v36
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
from teacher_window import print_ranking
from tqdm.auto import tqdm

from crag.evaluator.training.questions import QUESTION_PROMPT, parse_questions, with_derived
from crag.models.chat import chat_model
from crag.models.embeddings import shared_embeddings
from crag.standing import grouped_standings


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def write(documents: Path, out: Path, model: str) -> None:
    """The chat model's questions for every distinct chunk in `documents`, appended to `out` (resumes)."""
    chunks: dict[str, str] = {}
    for line in documents.open():
        row = json.loads(line)
        chunks.setdefault(row["text"], row["title"])
    done = {json.loads(line)["key"] for line in out.open()} if out.exists() else set()
    writer = chat_model(model, max_tokens=160)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as sink:
        for text, title in tqdm(list(chunks.items()), desc="writing questions", unit="chunk"):
            key = text_key(text)
            if key in done:
                continue
            start = time.perf_counter()
            reply = str(writer.invoke(QUESTION_PROMPT.format(title=title, text=text)).content)
            seconds = round(time.perf_counter() - start, 2)
            line = {"key": key, "title": title, "reply": reply, "questions": parse_questions(reply), "seconds": seconds}
            sink.write(json.dumps(line) + "\n")
            sink.flush()


def unit(vectors: list[list[float]]) -> np.ndarray:
    v = np.asarray(vectors, dtype=float)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def score(documents: Path, questions_file: Path, run: Path | None) -> None:
    written = {r["key"]: r for r in map(json.loads, questions_file.open())}
    rows = [r for r in map(json.loads, documents.open()) if text_key(r["text"]) in written]
    per_question = Counter(r["q"] for r in rows)
    rows = [r for r in rows if per_question[r["q"]] == max(per_question.values())]
    asked = {text_key(r["text"]): written[text_key(r["text"])]["questions"] for r in rows}
    derived = {k: with_derived(v) for k, v in asked.items()}
    embed = shared_embeddings().embed_documents
    users = sorted({r["question"] for r in rows})
    user = dict(zip(users, unit(embed(users))))
    chunk = unit(embed([f"{r['title']}: {r['text']}" for r in rows]))
    every = sorted({s for qs in derived.values() for s in qs.values()})
    vec = dict(zip(every, unit(embed(every))))

    def best(r: dict, table: dict[str, dict[str, str]]) -> float:
        qs = list(table[text_key(r["text"])].values())
        return max((float(user[r["question"]] @ vec[s]) for s in qs), default=-1.0)

    y = np.array([r["label"] for r in rows])
    q = np.array([r["q"] for r in rows])
    scores = {
        "retrieval rank": np.array([-r["rank"] for r in rows], dtype=float),
        "cosine, question and chunk": np.array([float(user[r["question"]] @ c) for r, c in zip(rows, chunk)]),
        "written questions, best cosine": np.array([best(r, asked) for r in rows]),
        "written + derived styles, best cosine": np.array([best(r, derived) for r in rows]),
    }
    if "teacher_whole" in rows[0]:
        scores["chat model's grade (teacher_whole)"] = np.array([r["teacher_whole"] for r in rows])
    if run is not None:
        graph = {p["question"]: p["scores"] for p in map(json.loads, (run / "predictions.jsonl").open())}
        scores["evaluator, as the graph scored"] = np.array([graph[r["question"]][r["rank"]] for r in rows])
        scores["evaluator + written questions (within set)"] = np.add(
            grouped_standings(scores["evaluator, as the graph scored"], q.tolist()),
            grouped_standings(scores["written questions, best cosine"], q.tolist()),
        )
    seconds = [written[k]["seconds"] for k in asked]
    print(
        f"{len(set(q.tolist()))} questions, {len(rows)} documents, {int(y.sum())} hold an answer; "
        f"{len(asked)} chunks, p50 {np.median(seconds):.1f} s a chunk to write"
    )
    print_ranking(y, q, scores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("--documents", type=Path, required=True, help="a teacher_window.py file")
    w.add_argument("--out", type=Path, required=True, help="JSONL, one line per chunk (resumes)")
    w.add_argument("--model", default="local", help="the question writer")
    s = sub.add_parser("score")
    s.add_argument("--documents", type=Path, required=True)
    s.add_argument("--questions-file", type=Path, required=True, help="what `write` wrote")
    s.add_argument("--run", type=Path, help="a `crag eval run` folder whose scores the graph gave these documents")
    args = parser.parse_args()
    if args.command == "write":
        write(args.documents, args.out, args.model)
    else:
        score(args.documents, args.questions_file, args.run)


if __name__ == "__main__":
    main()
