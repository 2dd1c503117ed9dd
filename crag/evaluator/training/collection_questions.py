"""Questions the chat model writes for chunks of a user's own collection, for `crag evaluator adapt`."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

from tqdm.auto import tqdm

from crag.evaluator.training.questions import MIN_WORDS, QUESTION_PROMPT, parse_questions, with_derived
from crag.evaluator.training.selfsup import CollectionChunk


def write_questions(
    chunks: Sequence[CollectionChunk],
    writer: Callable[[str], str],
    *,
    seed: int = 0,
    max_chunks: int = 300,
    budget: float | None = None,
    started: float | None = None,
    log: Callable[[str], None] = print,
    progress: bool = True,
) -> list[tuple[int, str]]:
    """(chunk index, question) pairs for a seeded sample of at most `max_chunks` chunks, until `budget`
    seconds after `started`; a writer that fails three times is given up, never the run."""
    started = time.perf_counter() if started is None else started
    rng = random.Random(seed + 7)
    readable = [i for i, c in enumerate(chunks) if len(c.text.split()) >= MIN_WORDS]
    order = rng.sample(readable, min(len(readable), max_chunks))
    questions: list[tuple[int, str]] = []
    failures = 0
    for index in tqdm(order, desc="writing questions", unit="chunk", disable=not progress):
        if budget is not None and time.perf_counter() - started > budget:
            break
        chunk = chunks[index]
        try:
            reply = writer(QUESTION_PROMPT.format(title=chunk.title or chunk.source, text=chunk.text))
        except Exception as exc:  # a failing writer costs this chunk's questions
            failures += 1
            if failures == 3:
                log(f"the question writer failed three times ({type(exc).__name__}: {exc}); going on without it")
                break
            continue
        questions += [(index, q) for q in with_derived(parse_questions(reply)).values()]
    log(f"the chat model wrote {len(questions):,} questions for {len({i for i, _ in questions}):,} chunks")
    return questions
