"""Build the evaluator's training data from the shared PopQA, web and relevance files.

The paper's recipe (Appendix B.3): a passage is relevant when it comes from the question's gold
Wikipedia page; negatives are passages that look like the question but come from other pages.
The first version of this recipe took positives and negatives from the web strips and BM25
neighbours, asked every question in PopQA's one template per relation, and was validated on a
split made the same way; it scored 0.96 there and below the untrained cosine on real retriever
output. Training now also covers what the graph really grades:
- the dense retriever's top 10 for each training question (`mining.py`), labelled by gold page,
  from a pool that holds no passage of a validation question;
- CRAG's Bio questions with Contriever's real top 10 (the training half);
- every question also in training phrasings (`phrasings.py`; validation uses other templates);
- HotpotQA/MuSiQue pairs as they are, split by question id.
Each split draws its BM25 negatives only from its own questions' strips (plus the shared
distractor corpus), so no passage retrieved for a validation question is seen in training.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import unicodedata
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

from tqdm.auto import tqdm

from crag.evaluator.pairs import Pair, clean, iter_jsonl, write_pairs
from lab.evaluator.generated_pairs import build_generated
from lab.evaluator.llm_teacher import passage_key, read_labels
from lab.evaluator.mining import DenseIndex, chunk_pool, teacher_probabilities
from lab.evaluator.phrasings import sample_training_phrasings

DEFAULT_DATA_DIR = "../shared/data"
SOURCE_FILES = (
    "popqa/questions.jsonl",
    "popqa/web_strips.jsonl",
    "corpus/wiki_passages.jsonl",
    "relevance/multihop_pairs.jsonl",
    "relevance/bio_contriever_top10.jsonl",
)


def data_dir(path: str | Path | None = None) -> Path:
    """Resolve the shared data folder: explicit path, then CRAG_DATA_DIR, then ../shared/data."""
    resolved = Path(path or os.environ.get("CRAG_DATA_DIR") or DEFAULT_DATA_DIR).expanduser()
    missing = [name for name in SOURCE_FILES if not (resolved / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"shared data not found in {resolved.resolve()} (missing {', '.join(missing)}); "
            "pass --data-dir or set CRAG_DATA_DIR"
        )
    return resolved


def norm_title(title: str) -> str:
    """Compare page titles the way Wikipedia resolves them: case, accents and '_' do not matter.

    The web strips contain, for example, "El honorable señor Valdez" for the gold page
    "El honorable Señor Valdez"; an exact comparison would label the gold page negative.
    """
    decomposed = unicodedata.normalize("NFKD", title.replace("_", " "))
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(stripped.casefold().split())


@dataclass(frozen=True)
class Recipe:
    validation_range: tuple[int, int] = (100, 399)
    bm25_negatives: int = 4
    bm25_depth: int = 40
    multihop_validation_fraction: float = 0.2
    bio_validation_fraction: float = 0.5
    min_words: int = 8
    swap_negatives: int = 0  # training only: gold passages paired with another question of the same relation
    retrieval_k: int = 10  # training only: the dense retriever's top k per question, labelled by gold page
    phrasings: int = 1  # training only: each question also asked in this many training phrasings
    dev_fraction: float = 0.1  # training questions held apart to pick the epoch and calibrate
    generated: str = ""  # the generated questions' JSONL (`generated_pairs`); "" leaves them out
    teacher_labels: str = ""  # the chat model's grades (`llm_teacher`): the teacher of the train pairs they cover
    seed: int = 13


# Web page furniture that the search engine returned as "paragraphs": it carries no knowledge, so
# labelling it by the page it sits on only teaches noise (a stub notice on the gold page is "relevant").
BOILERPLATE = re.compile(
    r"is a stub\b|you can help wikipedia|may refer to|oops|something went wrong|summarize this article"
    r"|^file:|disclaimer|retrieved from|enable javascript|cookies?\b.*(accept|policy)",
    re.IGNORECASE,
)


def _hash_sources(root: Path) -> str:
    digest = hashlib.sha256()
    for name in SOURCE_FILES:
        digest.update(name.encode())
        digest.update((root / name).read_bytes())
    return digest.hexdigest()[:16]


def _bm25_negatives(questions: list[dict], pool: list[dict], recipe: Recipe) -> dict[int, list[dict]]:
    """For each question, the top BM25 passages of the pool that come from another page."""
    import bm25s

    texts = [f"{p['title']} {p['text']}" for p in pool]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    query_tokens = bm25s.tokenize([q["question"] for q in questions], stopwords="en", show_progress=False)
    depth = min(recipe.bm25_depth, len(pool))
    hits, _ = retriever.retrieve(query_tokens, k=depth, show_progress=False, n_threads=1)
    chosen: dict[int, list[dict]] = {}
    for question, row in zip(questions, hits):
        gold = norm_title(question["s_wiki_title"])
        picks: list[dict] = []
        for index in row:
            passage = pool[int(index)]
            if passage.get("q_index") == question["q_index"] or norm_title(passage["title"]) == gold:
                continue
            picks.append(passage)
            if len(picks) == recipe.bm25_negatives:
                break
        chosen[question["q_index"]] = picks
    return chosen


def _popqa_pairs(questions: list[dict], strips: list[dict], corpus: list[dict], recipe: Recipe) -> list[Pair]:
    by_question: dict[int, list[dict]] = {}
    for strip in strips:
        by_question.setdefault(strip["q_index"], []).append(strip)
    negatives = _bm25_negatives(questions, strips + corpus, recipe)
    pairs: list[Pair] = []
    for question in tqdm(questions, desc="pairs", unit="q", leave=False):
        gold = norm_title(question["s_wiki_title"])
        group = f"popqa-{question['q_index']}"
        for strip in sorted(by_question.get(question["q_index"], []), key=lambda s: s["rank"]):
            label = int(norm_title(strip["title"]) == gold)
            pairs.append(Pair(question["question"], strip["text"], label, strip["title"], group, "popqa-web"))
        for passage in negatives[question["q_index"]]:
            source = "popqa-bm25-web" if "q_index" in passage else "popqa-bm25-wiki"
            pairs.append(Pair(question["question"], passage["text"], 0, passage["title"], group, source))
    return pairs


def _swap_negatives(pairs: list[Pair], questions: list[dict], recipe: Recipe) -> list[Pair]:
    """Question-swap negatives: a gold passage about X asked about Y ("What is Y's occupation?").

    They share the question's wording and the passage's topic and differ only in the entity, so
    the evaluator has to check who the passage is about, which is what the gold-page label means.
    """
    rng = random.Random(recipe.seed)
    by_text = {q["question"]: q for q in questions}
    by_prop: dict[str, list[dict]] = {}
    for question in questions:
        by_prop.setdefault(question["prop"], []).append(question)
    swapped: list[Pair] = []
    for pair in pairs:
        if pair.label != 1 or pair.source != "popqa-web":
            continue
        own = by_text[pair.question]
        others = [q for q in by_prop[own["prop"]] if norm_title(q["s_wiki_title"]) != norm_title(own["s_wiki_title"])]
        for other in rng.sample(others, min(recipe.swap_negatives, len(others))):
            swapped.append(
                Pair(other["question"], pair.passage, 0, pair.title, f"popqa-{other['q_index']}", "popqa-swap")
            )
    return swapped


def question_split(qid: str, validation_fraction: float) -> str:
    """A stable split by question id, so that all of a question's pairs land on the same side."""
    return "validation" if zlib.crc32(qid.encode()) % 1000 < validation_fraction * 1000 else "train"


def _finish(pairs: list[Pair], recipe: Recipe) -> list[Pair]:
    """Clean the text, drop near-empty passages and exact duplicate (question, title, passage) pairs."""
    seen: set[tuple[str, str, str]] = set()
    kept: list[Pair] = []
    for pair in pairs:
        question, passage, title = clean(pair.question), clean(pair.passage), clean(pair.title)
        key = (question, title, passage)
        if len(passage.split()) < recipe.min_words or BOILERPLATE.search(passage) or key in seen:
            continue
        seen.add(key)
        kept.append(replace(pair, question=question, passage=passage, title=title))
    return kept


def _asked(question: str, subject: str, relation: str, recipe: Recipe, rng) -> list[str]:
    """The question as written plus `recipe.phrasings` training phrasings of it."""
    return [question, *sample_training_phrasings(subject, relation, recipe.phrasings, rng)]


def _retrieved_pairs(questions: list[dict], index, recipe: Recipe, rng) -> list[Pair]:
    """Each question (and its phrasings) through the dense retriever; the top k labelled by gold page."""
    queries = [
        (text, question["s_wiki_title"], f"popqa-{question['q_index']}")
        for question in questions
        for text in _asked(question["question"], question["subject"], question["prop"], recipe, rng)
    ]
    pairs = []
    for (text, gold, group), chunks in zip(queries, index.search([q for q, _, _ in queries], recipe.retrieval_k)):
        for chunk in chunks:
            label = int(norm_title(chunk.title) == norm_title(gold))
            pairs.append(Pair(text, chunk.text, label, chunk.title, group, "popqa-retrieved"))
    return pairs


def _bio_pairs(records: list[dict], recipe: Recipe, rng) -> list[Pair]:
    """Contriever's real top 10 for CRAG's "Who is X?" questions, asked as written and rephrased."""
    by_qid: dict[str, list[dict]] = {}
    for record in records:
        by_qid.setdefault(record["qid"], []).append(record)
    pairs = []
    for qid, docs in sorted(by_qid.items()):
        for text in _asked(docs[0]["question"], docs[0]["topic"], "bio", recipe, rng):
            pairs += [
                Pair(text, d["text"], int(d["label"]), d["title"], qid, "bio")
                for d in sorted(docs, key=lambda d: d["rank"])
            ]
    return pairs


def _training_pool(strips, corpus, multihop, bio, validation_q: set[int], recipe: Recipe) -> list[tuple[str, str]]:
    """Every titled passage except those of validation questions, which training must never see."""
    pool = [(s["title"], s["text"]) for s in strips if s["q_index"] not in validation_q]
    pool += [(c["title"], c["text"]) for c in corpus]
    pool += [
        (m["title"], m["text"])
        for m in multihop
        if question_split(m["qid"], recipe.multihop_validation_fraction) == "train"
    ]
    pool += [
        (b["title"], b["text"]) for b in bio if question_split(b["qid"], recipe.bio_validation_fraction) == "train"
    ]
    return pool


def multihop_pairs(records: list[dict], split: str, recipe: Recipe) -> list[Pair]:
    """The HotpotQA/MuSiQue pairs of one side ("train" or "validation") of the split by question id."""
    return [
        Pair(m["question"], m["text"], int(m["label"]), m["title"], m["qid"], m["source"])
        for m in records
        if question_split(m["qid"], recipe.multihop_validation_fraction) == split
    ]


def _is_dev(key: str, recipe: Recipe) -> bool:
    return question_split(f"dev:{key}", recipe.dev_fraction) == "validation"


def _without_titles(pairs: list[Pair]) -> list[Pair]:
    return [replace(p, title="") for p in pairs]


def build_data(source: str | Path | None, out: Path, recipe: Recipe = Recipe(), progress: bool = True) -> dict:
    """Write train/dev/validation pairs in CRAG's format (+ JSONL) and a manifest; return the manifest.

    `train` mixes the web strips, real retrieval and Contriever results for training questions, in
    their PopQA wording and in training phrasings; `dev` holds a tenth of the training questions
    apart, as the graph would see them (retrieved, with and without titles), to pick the epoch and
    calibrate the thresholds; `validation` is the first recipe's split, kept for comparison only:
    the validation that counts is `python -m lab datasets build-slices`.
    """
    rng = random.Random(recipe.seed)
    root = data_dir(source)
    questions = list(iter_jsonl(root / "popqa/questions.jsonl"))
    strips = list(iter_jsonl(root / "popqa/web_strips.jsonl"))
    corpus = list(iter_jsonl(root / "corpus/wiki_passages.jsonl"))
    multihop = list(iter_jsonl(root / "relevance/multihop_pairs.jsonl"))
    bio = list(iter_jsonl(root / "relevance/bio_contriever_top10.jsonl"))
    low, high = recipe.validation_range
    validation_q = {q["q_index"] for q in questions if low <= q["q_index"] <= high}
    splits: dict[str, list[Pair]] = {}
    for split in ("train", "validation"):
        in_split = [q for q in questions if (q["q_index"] in validation_q) == (split == "validation")]
        if split == "train":
            in_split = [q for q in in_split if not _is_dev(str(q["q_index"]), recipe)]
        ids = {q["q_index"] for q in in_split}
        split_strips = [s for s in strips if s["q_index"] in ids]
        pairs = _popqa_pairs(in_split, split_strips, corpus, recipe)
        if split == "train":
            pairs += _swap_negatives(pairs, in_split, recipe)
        pairs += multihop_pairs(multihop, split, recipe)
        splits[split] = pairs
    # real retrieval and Contriever's results: training questions only, a tenth of them held apart as dev
    pool = chunk_pool(_training_pool(strips, corpus, multihop, bio, validation_q, recipe))
    index = DenseIndex(pool, cache=out / ".cache", progress=progress)
    train_q = [q for q in questions if q["q_index"] not in validation_q]
    bio_train = [b for b in bio if question_split(b["qid"], recipe.bio_validation_fraction) == "train"]
    for split, dev in (("train", False), ("dev", True)):
        popqa = [q for q in train_q if _is_dev(str(q["q_index"]), recipe) == dev]
        bios = [b for b in bio_train if _is_dev(b["qid"], recipe) == dev]
        realistic = _retrieved_pairs(popqa, index, recipe, rng) + _bio_pairs(bios, recipe, rng)
        splits[split] = splits.get(split, []) + (realistic + _without_titles(realistic) if dev else realistic)
    generated_stats = None
    if recipe.generated:
        made, generated_stats = build_generated(
            recipe.generated, root / "corpus/wiki_passages.jsonl", cache=out / ".cache", progress=progress
        )
        splits["train"] += made["train"]
        splits["dev"] += made["dev"] + _without_titles(made["dev"])
    splits = {name: _finish(pairs, recipe) for name, pairs in splits.items()}
    teacher = teacher_probabilities(index, splits["train"], progress=progress)
    graded = read_labels(Path(recipe.teacher_labels)) if recipe.teacher_labels else {}
    grades = [graded.get((p.question, passage_key(p.passage))) for p in splits["train"]]
    teacher = [t if g is None else g for g, t in zip(grades, teacher)]
    splits["train"] = [replace(p, teacher=round(t, 4)) for p, t in zip(splits["train"], teacher)]
    manifest = {
        "data_hash": _hash_sources(root),
        "recipe": {**recipe.__dict__, "validation_range": list(recipe.validation_range)},
        "splits": {},
        "generated": generated_stats,
        "llm_teacher_pairs": sum(g is not None for g in grades),
    }
    for split, pairs in splits.items():
        tsv, jsonl = write_pairs(pairs, out, split)
        positives = sum(p.label for p in pairs)
        groups = {p.group for p in pairs}
        manifest["splits"][split] = {
            "pairs": len(pairs),
            "positives": positives,
            "positive_rate": round(positives / max(1, len(pairs)), 4),
            "questions": len(groups),
            "files": [tsv.name, jsonl.name],
        }
    for part, keep in (("popqa", True), ("multihop", False)):
        subset = [p for p in splits["validation"] if p.group.startswith("popqa-") == keep]
        write_pairs(subset, out, f"validation-{part}")
        manifest["splits"]["validation"][part] = {"pairs": len(subset), "positives": sum(p.label for p in subset)}
    train_groups = {p.group for p in splits["train"]}
    for other in ("dev", "validation"):
        overlap = train_groups & {p.group for p in splits[other]}
        if overlap:  # a broken recipe must never silently leak questions across splits
            raise AssertionError(f"train and {other} share questions: {sorted(overlap)[:5]}")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
