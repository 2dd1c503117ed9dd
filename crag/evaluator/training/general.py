"""The general set `crag evaluator adapt` anchors and checks with, so that adapting cannot forget: whole
questions of the dev split (PopQA with and without a relevant passage, Bio). Rebuilt with

    python -m crag.evaluator.training.general artifacts/evaluator-data/dev.jsonl
"""

from __future__ import annotations

import random
import sys
from collections import defaultdict
from pathlib import Path

from crag.evaluator.pairs import Pair, read_pairs, write_pairs

GENERAL_CHECK = Path(__file__).parent / "general_check.jsonl"
# (source of the dev pairs, whether a question has a relevant pair) -> questions kept
QUESTIONS = {("popqa-retrieved", True): 34, ("popqa-retrieved", False): 56, ("bio", True): 5}
SEED = 13


def load_general_check() -> list[Pair]:
    return read_pairs(GENERAL_CHECK)


def sample_general_check(dev: list[Pair], seed: int = SEED) -> list[Pair]:
    """Whole questions (all their retrieved pairs), as many of each kind as `QUESTIONS` says."""
    groups: dict[tuple[str, str], list[Pair]] = defaultdict(list)
    for pair in dev:
        groups[(pair.source, pair.group)].append(pair)
    rng = random.Random(seed)
    kept: list[Pair] = []
    for (source, answerable), count in QUESTIONS.items():
        usable = sorted(
            g for (s, g), pairs in groups.items() if s == source and any(p.label for p in pairs) == answerable
        )
        if len(usable) < count:
            raise ValueError(f"the dev pairs hold {len(usable)} such {source} questions, {count} are needed")
        for group in rng.sample(usable, count):
            kept.extend(groups[(source, group)])
    return kept


if __name__ == "__main__":  # pragma: no cover - the maintainer's rebuild, see the docstring
    write_pairs(sample_general_check(read_pairs(sys.argv[1])), GENERAL_CHECK.parent, GENERAL_CHECK.stem)
    GENERAL_CHECK.with_suffix(".tsv").unlink()
    print(f"wrote {GENERAL_CHECK}")
