"""`python -m lab datasets build-bio`: the long-form Biography task (CRAG Table 1, FActScore's topics) as
`crag eval run` inputs, answered with `--answer-style long` and scored by `crag.evaluation.facts`.

From `relevance/bio_contriever_top10.jsonl` (400 "Who is X?" topics, FActScore's 100–499, each with the 10
passages Contriever retrieved for it and whether each comes from the topic's own page):

- questions: "Tell me a bio of X." (the paper's wording) for the split's topics: 100–299 to tune on, 300–499
  for the table. `answers` is the topic's name (the harness needs one; a bio names its subject, so the
  short-answer accuracy says little here), `topic` is the name again and `evidence` the texts of the
  topic's own-page passages, which the fact judge reads (FActScore judges against the topic's page);
- knowledge base: every passage of the split's topics in one index, as the PopQA inputs put every question's
  kept passages in one index. A topic's passages are not handed to it: retrieval must find them from the
  question among 199 other topics' passages, hard negatives (people with similar names) included;
- web: the split's own-page passages alone, each with a `local://` URL. CRAG's web search for a bio finds the
  person's Wikipedia page; this is that page's text as Contriever's passages hold it, and nothing else.

The data is read by path (`CRAG_DATA_DIR`, default ../shared/data), never copied into the repository.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

from lab.datasets.popqa import read_records, write_records

SPLITS = {"tuning": (100, 299), "table": (300, 499)}
PASSAGES = Path("relevance") / "bio_contriever_top10.jsonl"
QUESTION = "Tell me a bio of {topic}."  # CRAG's and FActScore's instruction
LICENCES = {
    "Bio topics and Contriever passages (CRAG data/bio, FActScore topics)": "Wikipedia text, CC BY-SA",
}


def topic_index(qid: str) -> int:
    """FActScore's topic number from the record's `qid` ("bio-123" -> 123); ValueError for anything else."""
    prefix, _, number = str(qid).rpartition("-")
    if prefix != "bio" or not number.isdigit():
        raise ValueError(f"not a Bio question id: {qid!r}")
    return int(number)


def by_topic(records: list[dict]) -> dict[str, list[dict]]:
    """Each topic's passages in rank order, topics in their index order."""
    topics: dict[str, list[dict]] = {}
    for record in sorted(records, key=lambda r: (topic_index(r["qid"]), int(r["rank"]))):
        topics.setdefault(record["qid"], []).append(record)
    return topics


def own_page(passages: list[dict]) -> list[dict]:
    """A topic's own-page passages (label 1), a text repeated under another rank once, in rank order."""
    kept: dict[str, dict] = {}
    for p in passages:
        if int(p["label"]) == 1:
            kept.setdefault(p["text"], p)
    return list(kept.values())


def bio_inputs(records: list[dict], split: str) -> tuple[list[dict], list[dict], list[dict]]:
    """(questions, knowledge base, web) of the split's topics."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    low, high = SPLITS[split]
    questions, kb, web = [], [], []
    for qid, passages in by_topic(records).items():
        if not low <= topic_index(qid) <= high:
            continue
        topic = passages[0]["topic"]
        questions.append(
            {
                "id": qid,
                "question": QUESTION.format(topic=topic),
                "answers": [topic],
                "topic": topic,
                "task": "bio",
                "evidence": [p["text"] for p in own_page(passages)],
            }
        )
        kb += [{"id": f"{qid}-{p['rank']}", "title": p["title"], "text": p["text"]} for p in passages]
        web += [
            {"title": p["title"], "text": p["text"], "url": f"local://{quote(p['title'])}#{qid}-{p['rank']}"}
            for p in own_page(passages)
        ]
    if not questions:
        raise ValueError(f"no Bio topics in {split} ({low}-{high})")
    return questions, kb, web


def build_bio(data_dir: str | Path, out: str | Path, split: str = "tuning") -> dict:
    """Write questions.jsonl, kb.jsonl, web.jsonl and manifest.json into `out`; returns the manifest."""
    data, out = Path(data_dir).expanduser(), Path(out).expanduser()
    questions, kb, web = bio_inputs(read_records(data / PASSAGES), split)
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "split": split,
        "topics": list(SPLITS[split]),
        "data_dir": str(data),
        "questions": write_records(out / "questions.jsonl", questions),
        "without_evidence": sum(not q["evidence"] for q in questions),
        "kb": write_records(out / "kb.jsonl", kb),
        "web": write_records(out / "web.jsonl", web),
        "licences": LICENCES,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
