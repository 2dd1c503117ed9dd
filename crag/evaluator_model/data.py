"""Build the evaluator's training data from the shared PopQA, web and relevance files.

The paper's recipe (Appendix B.3): a passage is relevant when it comes from the question's gold
Wikipedia page; negatives are passages that look like the question but come from other pages.
Here positives are the web strips whose title is the gold title, and negatives are (a) the other
strips the search returned for the same question and (b) BM25 neighbours of the question from
other questions' strips and from unrelated Wikipedia passages. Each split draws its BM25
negatives only from its own questions' strips (plus the shared distractor corpus), so no passage
retrieved for a validation question is seen in training. HotpotQA/MuSiQue pairs are added as they
are, split by question id.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
import zlib
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from crag.evaluator_model.pairs import Pair, clean, iter_jsonl, write_pairs

DEFAULT_DATA_DIR = "../shared/data"
SOURCE_FILES = (
    "popqa/questions.jsonl",
    "popqa/web_strips.jsonl",
    "corpus/wiki_passages.jsonl",
    "relevance/multihop_pairs.jsonl",
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
    min_words: int = 8
    swap_negatives: int = 1  # training only: gold passages paired with another question of the same relation
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
    import random

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
            swapped.append(Pair(other["question"], pair.passage, 0, pair.title, f"popqa-{other['q_index']}", "popqa-swap"))
    return swapped


def _multihop_split(qid: str, fraction: float) -> str:
    return "validation" if zlib.crc32(qid.encode()) % 1000 < fraction * 1000 else "train"


def _finish(pairs: list[Pair], recipe: Recipe) -> list[Pair]:
    """Clean the text, drop near-empty passages and exact duplicate (question, passage) pairs."""
    seen: set[tuple[str, str]] = set()
    kept: list[Pair] = []
    for pair in pairs:
        question, passage = clean(pair.question), clean(pair.passage)
        if len(passage.split()) < recipe.min_words or BOILERPLATE.search(passage) or (question, passage) in seen:
            continue
        seen.add((question, passage))
        kept.append(Pair(question, passage, pair.label, clean(pair.title), pair.group, pair.source))
    return kept


def build_data(source: str | Path | None, out: Path, recipe: Recipe = Recipe()) -> dict:
    """Write train/validation pairs in CRAG's format (+ JSONL) and a manifest; return the manifest."""
    root = data_dir(source)
    questions = list(iter_jsonl(root / "popqa/questions.jsonl"))
    strips = list(iter_jsonl(root / "popqa/web_strips.jsonl"))
    corpus = list(iter_jsonl(root / "corpus/wiki_passages.jsonl"))
    multihop = list(iter_jsonl(root / "relevance/multihop_pairs.jsonl"))
    low, high = recipe.validation_range
    splits: dict[str, list[Pair]] = {}
    for split in ("train", "validation"):
        in_split = [q for q in questions if (low <= q["q_index"] <= high) == (split == "validation")]
        ids = {q["q_index"] for q in in_split}
        split_strips = [s for s in strips if s["q_index"] in ids]
        pairs = _popqa_pairs(in_split, split_strips, corpus, recipe)
        if split == "train":
            pairs += _swap_negatives(pairs, in_split, recipe)
        pairs += [
            Pair(m["question"], m["text"], int(m["label"]), m["title"], m["qid"], m["source"])
            for m in multihop
            if _multihop_split(m["qid"], recipe.multihop_validation_fraction) == split
        ]
        splits[split] = _finish(pairs, recipe)
    manifest = {
        "data_hash": _hash_sources(root),
        "recipe": {**recipe.__dict__, "validation_range": list(recipe.validation_range)},
        "splits": {},
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
    overlap = train_groups & {p.group for p in splits["validation"]}
    if overlap:  # a broken recipe must never silently leak questions across splits
        raise AssertionError(f"train and validation share questions: {sorted(overlap)[:5]}")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
