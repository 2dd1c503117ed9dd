"""`python -m lab datasets build-popqa`: the harness's inputs from the shared PopQA data.

- questions: the split's PopQA long-tail questions as they are (`q_index` 100–399 = validation,
  400–1398 = train, the evaluator's own split), and the same questions in everyday phrasings
  (`questions-phrased.jsonl`, one validation template each: PopQA asks every relation one way);
- knowledge base: the passages CRAG's evaluator kept from Contriever's top-10 for *every*
  question (so each question's passages sit among 1,298 other questions' passages) plus the 6,119
  2WikiMultihopQA Wikipedia passages as distractors. The kept passages carry no title, and none
  is invented: a title taken from the question's gold page would tell the evaluator the answer;
- web: every web strip CRAG's search returned, title and text only, so a search finds them from
  the query alone and never by `q_index`.

The data is read by path (`CRAG_DATA_DIR`, default ../shared/data), never copied into the
repository; the outputs go wherever `--out` says (by default under artifacts/, which git ignores).
"""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path
from urllib.parse import quote

from crag.english import STOPWORDS, zipf
from crag.jsonl import read_objects
from lab.datasets.phrasings import VALIDATION_TEMPLATES, sample_phrasings

SPLITS = {"validation": (100, 399), "train": (400, 1398), "all": (0, 10**9)}
LICENCES = {
    "PopQA questions, CRAG-selected passages and web strips": "MIT (PopQA); passage text from Wikipedia, CC BY-SA",
    "Wikipedia distractor passages (2WikiMultihopQA)": "Apache-2.0 (2WikiMultihopQA); text from Wikipedia, CC BY-SA",
}
PHRASING_SEED = 11
_GLUE = re.compile(r" {2,}")  # the kept passages are glued with double spaces
MIN_WORDS = 4


def default_data_dir() -> Path:
    return Path(os.environ.get("CRAG_DATA_DIR") or "../shared/data").expanduser()


def read_records(path: Path) -> list[dict]:
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: is --data-dir (or CRAG_DATA_DIR) the shared data folder?")
    return [record for _, record in read_objects(path)]


def write_records(path: Path, records: list[dict]) -> int:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    tmp.replace(path)  # a half-written file never looks finished
    return len(records)


def web_records(data_dir: str | Path) -> list[dict]:
    """The local web: every non-empty PopQA web strip as `{title, text, url}`, without `q_index` or rank.

    Shared by `build_popqa` and the documentation set (`lab.datasets.docs_domain`), whose web is the same
    strips: pages about PopQA's entities, so a web search there finds nothing about the docs.
    """
    strips = read_records(Path(data_dir).expanduser() / "popqa" / "web_strips.jsonl")
    # a unique URL per strip: the fetcher uses a URL once, and a page's strips share a title
    return [
        {"title": s["title"], "text": s["text"], "url": f"local://{quote(s['title'])}#{n}"}
        for n, s in enumerate(strips)
        if s["text"].strip()
    ]


def phrased_questions(questions: list[dict], seed: int = PHRASING_SEED) -> list[dict]:
    """Each question once more, asked in one everyday phrasing (validation templates only); same answers.

    The ids stay those of the originals, so a question's two runs can be compared one to one.
    """
    rng = random.Random(seed)
    phrased = []
    for q in questions:
        if not isinstance(q.get("subject"), str) or q.get("prop") not in VALIDATION_TEMPLATES:
            raise ValueError(f"question {q.get('id')} has no PopQA subject and relation to phrase it by")
        phrased.append(
            {**q, "question": sample_phrasings(q["subject"], q["prop"], 1, rng)[0], "popqa_question": q["question"]}
        )
    return phrased


RARE_NAME_ZIPF = 2.5  # a subject's word this rare (wordfreq) is a name: "Dragomirna", "Babino", "Kutowski"


def unanswerable_questions(
    all_questions: list[dict], kb: list[dict], web: list[dict], split: tuple[int, int]
) -> list[dict]:
    """PopQA questions outside the split whose subject occurs nowhere in the knowledge base or the web:
    the sources cannot answer them, whatever the generator remembers, so the honest output is an
    abstention. Marked `"answerable": false`, answers dropped (they stay out of every prompt).

    "Nowhere" is strict: neither the subject as written, nor any of its rare words (a name's own
    words), nor all of its words in one passage may occur. The subject as written alone let
    "Dragomirna River" through while the knowledge base said "The Dragomirna is a left tributary of
    the river Suceava in Romania", and a quarter of the questions marked unanswerable were answered
    from the sources. Rare words alone let "Kenneth Bevan" through ("Bevan" is common enough) while
    a passage began "Kenneth Graham Bevan (1898–1993) was an Anglican missionary bishop": 11 of the
    64 unanswerable questions of the honesty run had all their subject's words in one passage.
    """
    texts = [f"{r.get('title', '')} {r['text']}".casefold() for r in [*kb, *web]]
    haystack = "\n".join(texts)
    postings: dict[str, set[int]] = {}  # word -> the passages that contain it
    for n, text in enumerate(texts):
        for w in set(re.findall(r"\w+", text)):
            postings.setdefault(w, set()).add(n)

    def absent(subject: str) -> bool:
        words = re.findall(r"\w+", subject.casefold())
        rare = [w for w in words if not w.isdigit() and zipf(w) < RARE_NAME_ZIPF]
        content = [w for w in words if w not in STOPWORDS]
        together = bool(content) and bool(set.intersection(*(postings.get(w, set()) for w in content)))
        return subject.casefold() not in haystack and not any(w in postings for w in rare) and not together

    low, high = split
    return [
        {
            "id": f"unanswerable-{q['id']}",
            "question": q["question"],
            "answers": [],
            "answerable": False,
            "subject": q["subject"],
            "prop": q["prop"],
        }
        for q in all_questions
        if not low <= int(q["q_index"]) <= high and absent(q["subject"])
    ]


def interleave(answerable: list[dict], unanswerable: list[dict]) -> list[dict]:
    """One answerable, one unanswerable, … then the rest: any `--limit` takes both kinds."""
    mixed = [q for pair in zip(answerable, unanswerable) for q in pair]
    n = min(len(answerable), len(unanswerable))
    return mixed + answerable[n:] + unanswerable[n:]


def build_popqa(data_dir: str | Path, out: str | Path, split: str = "validation") -> dict:
    """Write questions.jsonl (and questions-phrased.jsonl, questions-with-unanswerable.jsonl), kb.jsonl and
    web.jsonl (and manifest.json) into `out`; returns the manifest."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    data, out = Path(data_dir).expanduser(), Path(out).expanduser()
    low, high = SPLITS[split]
    every_question = read_records(data / "popqa" / "questions.jsonl")
    questions = [q for q in every_question if low <= int(q["q_index"]) <= high]
    kept = read_records(data / "popqa" / "crag_selected_passages.jsonl")
    wiki = read_records(data / "corpus" / "wiki_passages.jsonl")

    kb = []
    for record in sorted(kept, key=lambda r: int(r["q_index"])):
        text = _GLUE.sub("\n\n", record["text"].strip())  # lets the splitter cut between passages
        if len(text.split()) >= MIN_WORDS:
            kb.append({"id": f"selected-{len(kb)}", "title": "", "text": text})
    selected = len(kb)
    for record in wiki:
        if len(record["text"].split()) >= MIN_WORDS:
            kb.append({"id": str(record["id"]), "title": record["title"], "text": record["text"]})
    web = web_records(data)

    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "split": split,
        "q_index": [low, high],
        "data_dir": str(data),
        "questions": write_records(out / "questions.jsonl", questions),
        "questions_phrased": write_records(out / "questions-phrased.jsonl", phrased_questions(questions)),
        "kb": {"selected_passages": selected, "wikipedia_distractors": len(kb) - selected},
        "web": write_records(out / "web.jsonl", web),
        # the split's questions interleaved with ones the sources cannot answer (abstention, issue 11)
        "questions_with_unanswerable": write_records(
            out / "questions-with-unanswerable.jsonl",
            interleave(questions, unanswerable_questions(every_question, kb, web, (low, high))),
        ),
        "licences": LICENCES,
    }
    write_records(out / "kb.jsonl", kb)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
