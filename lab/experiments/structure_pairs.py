"""Experiment C of docs/reports/2026-11-22-evaluator-what-was-tried.md ("weak supervision from document structure"): self-supervised
(query, chunk) pairs from this machine's pydoc and man pages, disjoint from the `docs` slice's 30 pages.

Not a product feature (issue 13's `crag evaluator adapt` is where it belongs, built from the user's
own collection); kept so the report's figures can be reproduced:

    python -m lab.experiments.structure_pairs /tmp/sx          # -> /tmp/sx/structure.jsonl
    # mix: 2,600 structure groups + half the question groups of artifacts/evaluator-data/train.jsonl
    # into /tmp/mix/train.jsonl, dev.jsonl copied from artifacts/evaluator-data, then
    python -m lab evaluator train --base artifacts/models/b-from-v1 --data /tmp/mix --validation dev --layers 3 \
        --use-title --title-dropout 0.5 --lr 5e-5 --epochs 1 --teacher-weight 0.5 --out artifacts/models/c-structure
    python -m lab.benchmarks.evaluator_benchmark --slices artifacts/evaluator-slices \
        --checkpoint c-structure=artifacts/models/c-structure --checkpoint b-from-v1=artifacts/models/b-from-v1

Experiment D (2026-11-24, docs/reports/2026-11-24-evaluator-experiment-d.md): the same pairs with the base
model's zero-shot cosine as their teacher, mixed the same way, trained from the shipped evaluator
(expanded from its int8 export) with training reading long passages as the scorer does:

    python -m lab.experiments.structure_pairs /tmp/sd --teacher --mix /tmp/sd/mix
    python -c "from crag.evaluator.model import load_scorer; s = load_scorer('crag/evaluator/default'); \
        s.model.save_pretrained('/tmp/sd/base'); s.tokenizer.save_pretrained('/tmp/sd/base')"
    python -m lab evaluator train --base /tmp/sd/base --data /tmp/sd/mix --validation dev --layers 3 --use-title \
        --title-dropout 0.5 --lr 5e-5 --epochs 1 --teacher-weight 0.5 --read-long --out /tmp/sd/full-l3
    python -m lab evaluator export --model /tmp/sd/full-l3 --out /tmp/sd/d --max-length 112
    python -m lab evaluator blend --model /tmp/sd/d --pairs artifacts/evaluator-data/dev.jsonl --corpus /tmp/sd/mix/train.jsonl --no-contrast
    python -m lab evaluator calibrate --model /tmp/sd/d --pairs artifacts/evaluator-data/dev.jsonl --max-discard 0.05 \
        --discard-pairs artifacts/evaluator-data/dev.jsonl --discard-pairs artifacts/evaluator-data/faq.jsonl
    python -m lab.benchmarks.evaluator_benchmark --slices artifacts/evaluator-slices --checkpoint d=/tmp/sd/d
"""

import hashlib
import random
import re
import sys
from pathlib import Path

from langchain_text_splitters import RecursiveCharacterTextSplitter

from crag.evaluator.pairs import Pair, clean, write_pairs
from crag.text import terms
from lab.datasets.docs_domain import MAN_PAGES, PYDOC_MODULES, Source, SourceMissing, render
from lab.evaluator.mining import Chunk, DenseIndex

PYDOC = """os posixpath pathlib datetime time calendar random math string struct copy pickle glob fnmatch heapq bisect
operator contextlib abc io uuid base64 html urllib.parse http.client sqlite3 threading queue dataclasses enum zipfile
gzip configparser secrets pprint traceback warnings decimal fractions shlex getpass platform sched timeit zlib codecs
locale array weakref inspect ast tokenize email.message mimetypes smtplib ftplib xml.etree.ElementTree urllib.request
venv zipapp pdb cProfile trace bz2 lzma filecmp fileinput stat string.templatelib numbers cmath binascii quopri
html.parser http.cookies http.server socketserver selectors select mmap ctypes types copyreg shelve dbm
plistlib netrc tomllib keyword reprlib graphlib wave colorsys gettext optparse getopt curses.ascii""".split()
MAN = """cp mv rm mkdir chmod chown ln cat head tail wc cut tr uniq du df kill comm diff cmp split paste join fold fmt
nl od touch stat tee env basename dirname realpath readlink seq shuf sleep timeout nohup gzip bzip2 curl find
git-add git-branch git-checkout git-merge git-push git-pull git-fetch git-clone git-diff git-tag git-remote
git-cherry-pick git-revert git-show git-status git-init git-mv git-rm git-clean git-blame git-grep git-restore
git-switch git-log git-format-patch git-am git-apply git-submodule git-gc git-reflog git-describe git-archive
dd file flock install mktemp nproc printf pwd rmdir sha256sum shred sync tac test truncate tsort uname who whoami
yes chgrp csplit expand unexpand pr ptx dircolors factor md5sum base64 sed awk bash diff3 patch make cmake ssh scp
rsync less more man apropos whatis dpkg apt-get apt-cache ps top free uptime dmesg lsblk mount findmnt
""".split()
MAN5 = "gitattributes gitmodules passwd group crontab fstab hosts".split()
MAN7 = "regex environ hier ascii utf-8 pipe man gitrevisions gitglossary gittutorial path_resolution".split()

VAL_PYDOC = set(PYDOC_MODULES)
VAL_MAN = {n for n, _ in MAN_PAGES}
MAX_BYTES = 64 * 1024
SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z`'\"(*-])")
HOW = (
    "how do I {s}",
    "how to {s}",
    "how can I {s} with {t}",
    "{t}: how to {s}",
    "can {t} {s}?",
    "{s} in {t}",
    "way to {s}",
    "is there an option to {s}",
)
WHAT = ("what does {k} do in {t}", "what is {k}", "{t} {k}", "{k}", "meaning of {k} in {t}")


def sources():
    for m in PYDOC:
        if m not in VAL_PYDOC:
            yield Source("pydoc", m)
    for m in MAN:
        if m not in VAL_MAN:
            yield Source("man", m, "1")
    for m in MAN5:
        if m not in VAL_MAN:
            yield Source("man", m, "5")
    for m in MAN7:
        if m not in VAL_MAN:
            yield Source("man", m, "7")


OPTION = re.compile(r"^(?:-{1,2}[\w-]+(?:[= ]\S+)?,?\s+)+")
SIGNATURE = re.compile(r"^\s*[\w.]+\(.*\)\s*$")


def segments(raw: str):
    """Paragraphs, option entries and docstrings as units: a new unit at a blank line, an option or a
    signature line, so that sentences never run across two entries."""
    current = []
    for line in raw.splitlines():
        body = line.strip().lstrip("|").strip()
        if not body or body.startswith("-") or SIGNATURE.match(body) or body.isupper():
            if current:
                yield " ".join(current)
            current = []
            if not body or SIGNATURE.match(body) or body.isupper():
                continue
            body = OPTION.sub("", body)
        current.append(body)
    if current:
        yield " ".join(current)


def good_sentence(s: str) -> bool:
    if any(ch in s for ch in "|{}[]$<>=\\") or s[0] in "-(>":
        return False
    words = s.split()
    if not 6 <= len(words) <= 30:
        return False
    letters = sum(ch.isalpha() or ch == " " for ch in s)
    return letters / len(s) > 0.85 and len(terms(s)) >= 3


def query_from(sentence: str, title: str, rng: random.Random) -> str:
    s = sentence.strip().rstrip(".:;")
    form = rng.random()
    if form < 0.3:
        return s  # inverse cloze: the sentence as it is
    if form < 0.55:  # keywords, as people type them into a search box
        words = [w for w in re.findall(r"[A-Za-z_][\w.-]*", s) if len(terms(w)) and len(w) > 2]
        n = rng.randint(3, 5)
        start = rng.randint(0, max(0, len(words) - n))
        return " ".join([title] * (rng.random() < 0.6) + words[start : start + n]).lower()
    low = s[0].lower() + s[1:]
    low = re.sub(r"^(returns?|this function returns?)\s", "get ", low, flags=re.I)
    low = re.sub(r"^(if|when) ", "what happens if ", low)
    return rng.choice(HOW).format(s=low, t=title)


def main(out: Path, per_page: int = 40, seed: int = 7):
    rng = random.Random(seed)
    splitter = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=100)
    chunks: list[Chunk] = []
    page_of: list[tuple[str, int]] = []
    pages = 0
    for src in sources():
        try:
            text = render(src)[:MAX_BYTES]
        except (SourceMissing, RuntimeError) as e:
            print("skip", src.stem, str(e)[:80], file=sys.stderr)
            continue
        pages += 1
        for i, piece in enumerate(splitter.split_text(text)):
            chunks.append(Chunk(src.stem, piece))
            page_of.append((src.stem, i))
    print("pages", pages, "chunks", len(chunks), file=sys.stderr)
    cleaned = [clean(c.text) for c in chunks]
    by_page: dict[str, list[int]] = {}
    for idx, (stem, _) in enumerate(page_of):
        by_page.setdefault(stem, []).append(idx)
    from collections import Counter

    pages_with = Counter()
    for idxs in by_page.values():
        pages_with.update({s.strip() for idx in idxs for seg in segments(chunks[idx].text) for s in SENT.split(seg)})
    items = []  # (query, chunk index, sentence)
    for idxs in by_page.values():
        cands = []
        for idx in idxs:
            for seg in segments(chunks[idx].text):
                for s in SENT.split(seg):
                    s = s.strip()
                    if s and pages_with[s] == 1 and good_sentence(s) and s in cleaned[idx]:
                        cands.append((idx, s))
        rng.shuffle(cands)
        seen_s = set()
        for idx, s in cands:
            if s in seen_s:
                continue
            seen_s.add(s)
            items.append((query_from(s, stem, rng), idx, s))
            if len(seen_s) >= per_page:
                break
    print("queries", len(items), file=sys.stderr)
    index = DenseIndex(chunks, cache=Path("artifacts/evaluator-data/cache"))
    results = index.search([q for q, _, _ in items], k=12)
    position = {id(c): i for i, c in enumerate(chunks)}
    pairs = []
    for (q, idx, s), hits in zip(items, results):
        stem, local = page_of[idx]
        group = f"struct:{stem}:{local}:{hashlib.sha1(s.encode()).hexdigest()[:8]}"
        passage = cleaned[idx]
        if rng.random() < 0.8:  # remove the sentence: relevance without the words repeated
            passage = " ".join(passage.replace(s, " ").split())
        pairs.append(Pair(q, passage, 1, stem, group, "structure"))
        negs = []
        for c in hits:
            j = position[id(c)]
            other_stem, other_local = page_of[j]
            if s in cleaned[j] or (other_stem == stem and abs(other_local - local) <= 1):
                continue
            negs.append(j)
        same = [j for j in by_page[stem] if abs(page_of[j][1] - local) > 1 and s not in cleaned[j]]
        chosen = negs[:3] + rng.sample(same, min(1, len(same)))
        for j in dict.fromkeys(chosen):
            pairs.append(Pair(q, cleaned[j], 0, page_of[j][0], group, "structure"))
    print("pairs", len(pairs), "pos", sum(p.label for p in pairs), file=sys.stderr)
    write_pairs(pairs, out, "structure")


def with_teacher(out: Path) -> None:
    """structure.jsonl again, each pair carrying the base model's zero-shot cosine as a probability
    (`mining.teacher_probabilities`, as `python -m lab evaluator build-data` gives the training pairs)."""
    from dataclasses import replace

    from crag.evaluator.pairs import read_pairs
    from lab.evaluator.mining import teacher_probabilities

    pairs = read_pairs(out / "structure.jsonl")
    teacher = teacher_probabilities(DenseIndex([], cache=None, progress=False), pairs, progress=False)
    write_pairs([replace(p, teacher=round(t, 4)) for p, t in zip(pairs, teacher)], out, "structure")


def mix(out: Path, dest: Path, train_file: Path = Path("artifacts/evaluator-data/train.jsonl"), groups: int = 2600):
    """dest/train.jsonl: half the question groups of `train_file` and `groups` structure groups, shuffled
    (two seeded draws, in the order experiment D made them); dest/dev.jsonl: the dev pairs."""
    import shutil

    from crag.evaluator.pairs import read_pairs

    structure = read_pairs(out / "structure.jsonl")
    train = read_pairs(train_file)
    rng = random.Random(7)
    groups_of_train = sorted({p.group for p in train})
    keep = set(rng.sample(groups_of_train, len(groups_of_train) // 2))
    mixed = [p for p in train if p.group in keep] + structure
    rng.shuffle(mixed)
    rng = random.Random(7)
    chosen = set(rng.sample(sorted({p.group for p in mixed if p.source == "structure"}), groups))
    pairs = [p for p in mixed if p.source != "structure"] + [
        p for p in mixed if p.source == "structure" and p.group in chosen
    ]
    rng.shuffle(pairs)
    write_pairs(pairs, dest, "train")
    shutil.copy(train_file.parent / "dev.jsonl", dest / "dev.jsonl")


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--teacher", action="store_true", help="add the zero-shot cosine teacher (experiment D)")
    parser.add_argument("--mix", type=Path, help="write the training mix into this folder")
    args = parser.parse_args()
    if not (args.out / "structure.jsonl").exists():
        main(args.out)
    if args.teacher:
        with_teacher(args.out)
    if args.mix:
        mix(args.out, args.mix)
