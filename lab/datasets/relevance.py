"""Relevance validation slices: the (question, passage) pairs the evaluator meets in deployment.

The evaluator's first validation split was built by its own training recipe (web strips plus BM25
neighbours, one question template per relation) and reported ROC-AUC 0.96; on real retriever output
and everyday questions the same model fell below the untrained cosine of its base model. These
slices are built the way the graph meets documents instead, each kept out of training:

- `popqa-retrieved`: every titled passage of the shared data (web strips, Wikipedia passages,
  multi-hop paragraphs, bio passages) indexed with the project's own retriever (Chroma + MiniLM
  fused with BM25 as the graph searches, chunked as the harness does), the top 10 it returns for
  each PopQA validation question, labelled by gold page (the paper's rule);
- `popqa-phrased`: the same questions in everyday phrasings (`lab.datasets.phrasings`, templates never
  used in training), retrieved again with each phrasing;
- `bio`: CRAG's Bio task, 400 "Who is X?" questions with Contriever's real top 10, split by
  question (this is the validation half); `bio-phrased`: the same documents, the question asked
  in everyday phrasings;
- `docs`: a technical-documentation corpus rendered from this machine (man pages, pydoc;
  `python -m lab datasets build-docs`), ingested with `crag ingest`, with questions written by hand; a chunk is
  relevant when it comes from the question's page and holds its evidence;
- `multihop`: the HotpotQA/MuSiQue validation questions, as before.

Every pair keeps its title; the benchmark scores each slice with and without titles. Without
titles, the slices our own retriever builds (`popqa-*`, `docs`) come from `OUT/untitled/`: the same
questions retrieved from a copy of the collection whose chunks carry no title, because hybrid search
matches a question's words against titles too, and a knowledge base without titles gives it none
to match (scoring titled retrieval's chunks without their titles would grade chunks that no
titleless retriever returns: a page's paragraphs that never name their subject).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from crag.evaluation.inputs import Passage
from crag.evaluation.kb import ensure_collection
from crag.evaluator.pairs import Pair, write_pairs
from crag.indexing.pipeline import ingest
from crag.models.embeddings import DEFAULT_EMBEDDINGS
from crag.passages import source_of, title_of
from crag.search.store import open_store, retrieve
from crag.settings import Context
from lab.datasets.docs_domain import is_relevant, load_questions
from lab.datasets.phrasings import sample_phrasings
from lab.datasets.popqa import read_records
from lab.evaluator.data import Recipe, multihop_pairs, norm_title, question_split

DEFAULT_OUT = Path("artifacts/evaluator-slices")
DEFAULT_CHROMA_DIR = ".crag/eval/relevance-chroma"
DOCS_COLLECTION = "docs-domain"
UNTITLED = "untitled"  # OUT/untitled/: slices retrieved from a titleless copy of their collection
GOLD_TITLE = "gold_title"  # a titleless copy's chunk keeps its page's title here, for the label only
COPY_BATCH = 1000
TOP_K = 10
PHRASINGS_PER_QUESTION = 2
SEED = 7
RECIPE = Recipe()  # the training recipe's question splits: its validation side is ours


@dataclass(frozen=True)
class Query:
    group: str  # the question's id; its pairs share it
    question: str
    gold: str  # gold page title (PopQA) or "" where labels come otherwise


def shared_passages(data: Path) -> list[Passage]:
    """Every titled passage of the shared data, each text once (CRAG's selected passages have no title)."""
    sources = (
        ("web", read_records(data / "popqa" / "web_strips.jsonl")),
        ("wiki", read_records(data / "corpus" / "wiki_passages.jsonl")),
        ("multihop", read_records(data / "relevance" / "multihop_pairs.jsonl")),
        ("bio", read_records(data / "relevance" / "bio_contriever_top10.jsonl")),
    )
    seen: set[tuple[str, str]] = set()
    passages = []
    for name, records in sources:
        for number, record in enumerate(records):
            key = (record["title"], " ".join(record["text"].split()))
            if key in seen or len(key[1].split()) < 4:
                continue
            seen.add(key)
            passages.append(Passage(f"{name}-{number}", record["title"], record["text"]))
    return passages


def untitled_copy(store, chroma_dir: str | Path, embedder: Any = DEFAULT_EMBEDDINGS):
    """A copy of the store's collection (`<name>-untitled`, in the same folder) whose chunks have no
    title, their page's title kept under `GOLD_TITLE`; the embeddings are copied (they are of the text
    alone; `embedder` embeds the questions). Reused while it holds as many chunks as the original."""
    source = store._collection  # LangChain's Chroma exposes no public handle on its collection
    copy = open_store(persist_dir=chroma_dir, collection=f"{source.name}-{UNTITLED}", embedder=embedder)
    if copy._collection.count() == source.count():
        return copy
    copy.reset_collection()
    for offset in range(0, source.count(), COPY_BATCH):
        got = source.get(include=["embeddings", "documents", "metadatas"], limit=COPY_BATCH, offset=offset)
        metadatas = [{**(m or {}), "title": "", GOLD_TITLE: (m or {}).get("title") or ""} for m in got["metadatas"]]
        copy._collection.add(
            ids=got["ids"], embeddings=got["embeddings"], documents=got["documents"], metadatas=metadatas
        )
    return copy


def _gold_of(doc) -> str:
    return doc.metadata.get(GOLD_TITLE) or title_of(doc)


def _retrieve(store, queries: list[Query], source: str, progress: bool) -> list[Pair]:
    """The top-k chunks per query from the project's retriever, labelled by gold page."""
    pairs = []
    for query in tqdm(queries, desc=source, unit="q", disable=not progress):
        gold = norm_title(query.gold)
        for doc in retrieve(store, query.question, k=TOP_K):
            label = int(norm_title(_gold_of(doc)) == gold)
            pairs.append(Pair(query.question, doc.page_content, label, title_of(doc), query.group, source))
    return pairs


def popqa_slices(
    data: Path, chroma_dir: str | Path, progress: bool = True
) -> tuple[dict[str, list[Pair]], dict[str, list[Pair]]]:
    """(titled, untitled): `popqa-retrieved` and `popqa-phrased` from the collection, and from its titleless copy."""
    low, high = RECIPE.validation_range
    questions = [q for q in read_records(data / "popqa" / "questions.jsonl") if low <= int(q["q_index"]) <= high]
    name, _, _ = ensure_collection(shared_passages(data), chroma_dir, progress=progress)
    store = open_store(persist_dir=chroma_dir, collection=name)
    rng = random.Random(SEED)
    original = [Query(f"popqa-{q['q_index']}", q["question"], q["s_wiki_title"]) for q in questions]
    phrased = [
        Query(f"popqa-{q['q_index']}-p{n}", text, q["s_wiki_title"])
        for q in questions
        for n, text in enumerate(sample_phrasings(q["subject"], q["prop"], PHRASINGS_PER_QUESTION, rng))
    ]
    titled, untitled = {}, {}
    for slices, searched in ((titled, store), (untitled, untitled_copy(store, chroma_dir))):
        slices["popqa-retrieved"] = _retrieve(searched, original, "popqa-retrieved", progress)
        slices["popqa-phrased"] = _retrieve(searched, phrased, "popqa-phrased", progress)
    return titled, untitled


def bio_slices(data: Path) -> dict[str, list[Pair]]:
    """Contriever's real top 10 for the validation half of the Bio questions, as asked and rephrased."""
    records = [
        r
        for r in read_records(data / "relevance" / "bio_contriever_top10.jsonl")
        if question_split(r["qid"], RECIPE.bio_validation_fraction) == "validation"
    ]
    rng = random.Random(SEED)
    phrasing: dict[str, str] = {}
    asked, rephrased = [], []
    for r in sorted(records, key=lambda r: (r["qid"], r["rank"])):
        if r["qid"] not in phrasing:
            phrasing[r["qid"]] = sample_phrasings(r["topic"], "bio", 1, rng)[0]
        asked.append(Pair(r["question"], r["text"], int(r["label"]), r["title"], r["qid"], "bio"))
        rephrased.append(
            Pair(phrasing[r["qid"]], r["text"], int(r["label"]), r["title"], f"{r['qid']}-p", "bio-phrased")
        )
    return {"bio": asked, "bio-phrased": rephrased}


def multihop_slice(data: Path) -> list[Pair]:
    return multihop_pairs(read_records(data / "relevance" / "multihop_pairs.jsonl"), "validation", RECIPE)


def docs_slice(docs_inputs: Path, chroma_dir: str | Path, progress: bool = True) -> tuple[list[Pair], list[Pair]]:
    """`crag ingest` the rendered documentation, retrieve for each hand-written question, label by
    evidence; (titled, untitled), the second from the collection's titleless copy."""
    folder = docs_inputs / "docs"
    if not folder.is_dir() or not (docs_inputs / "questions.jsonl").is_file():
        raise FileNotFoundError(
            f"{docs_inputs} holds no docs/ and questions.jsonl: run `python -m lab datasets build-docs` first"
        )
    questions = load_questions(docs_inputs / "questions.jsonl")
    store = open_store(persist_dir=chroma_dir, collection=DOCS_COLLECTION)
    ingest([folder], store, progress=progress)
    variants = []
    for searched in (store, untitled_copy(store, chroma_dir)):
        pairs = []
        for q in questions:
            for doc in retrieve(searched, q["question"], k=TOP_K):
                own_page = Path(source_of(doc)).stem == q["doc"]
                label = int(own_page and is_relevant(doc.page_content, q["evidence"]))
                pairs.append(Pair(q["question"], doc.page_content, label, title_of(doc), q["id"], "docs"))
        variants.append(pairs)
    return variants[0], variants[1]


def build_slices(
    data: Path,
    out: Path,
    *,
    docs_inputs: Path | None = None,
    chroma_dir: str | Path = DEFAULT_CHROMA_DIR,
    progress: bool = True,
) -> dict:
    """Write every slice as `OUT/<slice>.jsonl` (and CRAG's .tsv), the titleless retrieval of those our
    retriever builds as `OUT/untitled/<slice>.jsonl`, plus a manifest; returns the manifest."""
    slices, untitled = popqa_slices(data, chroma_dir, progress)
    slices.update(bio_slices(data))
    slices["multihop"] = multihop_slice(data)
    if docs_inputs is not None:
        slices["docs"], untitled["docs"] = docs_slice(docs_inputs, chroma_dir, progress)
    manifest = {
        "data_dir": str(data),
        "docs_inputs": str(docs_inputs) if docs_inputs else None,
        "top_k": TOP_K,
        "search": Context.default(
            "search"
        ),  # the retriever's, as the graph searches (slices built before 2026-11-24: dense)
        "slices": {},
        UNTITLED: {},
    }
    for where, written in ((out, slices), (out / UNTITLED, untitled)):
        for name, pairs in written.items():
            write_pairs(pairs, where, name)
            manifest["slices" if where == out else UNTITLED][name] = {
                "pairs": len(pairs),
                "positives": sum(p.label for p in pairs),
                "questions": len({p.group for p in pairs}),
                "questions_with_a_relevant_passage": len({p.group for p in pairs if p.label}),
            }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
