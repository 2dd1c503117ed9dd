"""Retrieval by embedding alone, by BM25 alone, and hybrid (both fused by reciprocal rank), on three
sets of questions, through the product's own code (`crag.search.store.retrieve`, its keyword
index `crag.search.keywords`):

- `docs`: the evaluator's documentation slice (15 pydoc and 15 man pages rendered on this machine,
  `crag ingest`ed, 114 hand-written questions); a chunk is relevant when it comes from the question's
  page and holds its evidence phrase;
- `faq`: the FAQs of lsof, sed, zlib, xz and valgrind in /usr/share/doc, their answers ingested in
  `crag ingest`'s chunks, asked the questions their authors wrote (369); a chunk is relevant when it
  holds a good part of the question's answer (`lab.evaluator.faq`);
- `popqa`, `popqa-phrased`: every titled passage of the shared data (21,914 chunks) and the 300 PopQA
  validation questions, as asked and in two everyday phrasings each; a chunk is relevant when it
  comes from the gold page. Only questions whose gold page is in the collection count (about a third).

For each: recall at 1, 3, 5 and 10 (the share of questions with a relevant chunk among the first k)
and the mean reciprocal rank over the first 10. Needs `make evaluator-slices` (the collections).

    python -m lab.benchmarks.retrieval_benchmark [--only docs,faq] [--json FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path

from langchain_core.documents import Document
from tqdm.auto import tqdm

from crag.evaluation.kb import ensure_collection
from crag.indexing.pipeline import ingest
from crag.passages import source_of, title_of
from crag.search import keywords
from crag.search.store import open_store, retrieve
from lab.datasets.docs_domain import is_relevant, load_questions
from lab.datasets.phrasings import sample_phrasings
from lab.datasets.popqa import read_records
from lab.datasets.relevance import (
    DEFAULT_CHROMA_DIR,
    DOCS_COLLECTION,
    PHRASINGS_PER_QUESTION,
    RECIPE,
    SEED,
    shared_passages,
)
from lab.evaluator.data import norm_title
from lab.evaluator.faq import faq_corpus

KS = (1, 3, 5, 10)
METHODS = ("dense", "bm25", "hybrid")
FAQ_COLLECTION = "faq-answers"

# a question: (text, whether a retrieved Document is relevant to it)
Question = tuple[str, Callable[[Document], bool]]


def ranked(store, method: str, question: str, k: int) -> list[Document]:
    if method != "bm25":
        return retrieve(store, question, k=k, search=method)
    ids = keywords.index_of(store).search(question, k)
    found = {d.id: d for d in store.get_by_ids(ids)}
    return [found[i] for i in ids if i in found]


def measure(name: str, store, questions: list[Question], progress: bool) -> dict:
    figures = {}
    for method in METHODS:
        hits = dict.fromkeys(KS, 0)
        reciprocal = 0.0
        for question, relevant in tqdm(questions, desc=f"{name} {method}", unit="q", disable=not progress):
            flags = [relevant(d) for d in ranked(store, method, question, max(KS))]
            for k in KS:
                hits[k] += any(flags[:k])
            reciprocal += next((1 / (r + 1) for r, flag in enumerate(flags) if flag), 0.0)
        n = len(questions)
        figures[method] = {**{f"R@{k}": hits[k] / n for k in KS}, "MRR@10": reciprocal / n}
    print(f"\n{name}: {len(questions)} questions")
    print("| method | " + " | ".join(f"R@{k}" for k in KS) + " | MRR@10 |")
    print("|---|" + "---|" * (len(KS) + 1))
    for method, row in figures.items():
        print(f"| {method} | " + " | ".join(f"{v:.3f}" for v in row.values()) + " |")
    return {"questions": len(questions), **figures}


def docs_set(docs_inputs: Path, chroma_dir: Path, progress: bool) -> tuple[object, list[Question]]:
    store = open_store(persist_dir=chroma_dir, collection=DOCS_COLLECTION)
    ingest([docs_inputs / "docs"], store, progress=progress)  # idempotent: skips what is stored
    questions = []
    for q in load_questions(docs_inputs / "questions.jsonl"):

        def relevant(d: Document, q=q) -> bool:
            return Path(source_of(d)).stem == q["doc"] and is_relevant(d.page_content, q["evidence"])

        questions.append((q["question"], relevant))
    return store, questions


def faq_set(chroma_dir: Path) -> tuple[object, list[Question]]:
    corpus = faq_corpus()
    store = open_store(persist_dir=chroma_dir, collection=FAQ_COLLECTION)
    ids = [hashlib.sha256(f"{corpus.where[n]}\0{c.text}".encode()).hexdigest() for n, c in enumerate(corpus.chunks)]
    stored = set(store.get(ids=ids, include=[])["ids"])
    new = [n for n, i in enumerate(ids) if i not in stored]
    if new:
        store.add_documents(
            [
                Document(
                    corpus.chunks[n].text, metadata={"title": corpus.chunks[n].title, "source": corpus.where[n][0]}
                )
                for n in new
            ],
            ids=[ids[n] for n in new],
        )
    chunk_of = {i: n for n, i in enumerate(ids)}
    questions = [
        (entry.question, lambda d, e=e: corpus.relevant(e, chunk_of[d.id])) for e, entry in enumerate(corpus.entries)
    ]
    return store, questions


def popqa_sets(data: Path, chroma_dir: Path, progress: bool) -> tuple[object, dict[str, list[Question]]]:
    passages = shared_passages(data)
    name, _, _ = ensure_collection(passages, chroma_dir, progress=progress)
    store = open_store(persist_dir=chroma_dir, collection=name)
    titles = {norm_title(p.title) for p in passages}
    low, high = RECIPE.validation_range
    records = [
        q
        for q in read_records(data / "popqa" / "questions.jsonl")
        if low <= int(q["q_index"]) <= high and norm_title(q["s_wiki_title"]) in titles
    ]

    def gold(title: str) -> Callable[[Document], bool]:
        return lambda d: norm_title(title_of(d)) == norm_title(title)

    rng = random.Random(SEED)  # the phrasings of the `popqa-phrased` slice
    asked = [(q["question"], gold(q["s_wiki_title"])) for q in records]
    phrased = [
        (text, gold(q["s_wiki_title"]))
        for q in records
        for text in sample_phrasings(q["subject"], q["prop"], PHRASINGS_PER_QUESTION, rng)
    ]
    return store, {"popqa": asked, "popqa-phrased": phrased}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--docs-inputs", type=Path, default=Path("artifacts/eval/docs-inputs"))
    parser.add_argument("--chroma-dir", type=Path, default=Path(DEFAULT_CHROMA_DIR))
    parser.add_argument("--only", help="comma-separated, from docs, faq, popqa (default: all)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else {"docs", "faq", "popqa"}
    results = {}
    if "docs" in only:
        results["docs"] = measure("docs", *docs_set(args.docs_inputs, args.chroma_dir, args.progress), args.progress)
    if "faq" in only:
        results["faq"] = measure("faq", *faq_set(args.chroma_dir), args.progress)
    if "popqa" in only:
        store, sets = popqa_sets(args.data_dir, args.chroma_dir, args.progress)
        for name, questions in sets.items():
            results[name] = measure(name, store, questions, args.progress)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
