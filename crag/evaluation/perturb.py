"""Robustness to what retrieval returns, as the Self-Reasoning paper measures it: the retrieved documents
shuffled (`--shuffle-docs`), or N of them replaced by random chunks of the knowledge base (`--noise N`).
Seeded by the run's seed and the question, so every system of a run reads the same documents."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from langchain_core.documents import Document

from crag import resources
from crag.settings import Context


class PerturbedRetrieval:
    """A retriever (`Context.retriever`) over the run's own retrieval: `noise` documents, at random places,
    replaced by random chunks of `pool` that were not retrieved (marked `noise` in their metadata), then the
    list shuffled if `shuffle`."""

    def __init__(self, ctx: Context, pool: list[Document], *, shuffle: bool = False, noise: int = 0, seed: int = 0):
        if noise < 0:
            raise ValueError(f"--noise must be at least 0, got {noise}")
        self.ctx, self.pool, self.shuffle, self.noise, self.seed = ctx, pool, shuffle, noise, seed

    def invoke(self, question: str, config: Any = None) -> list[Document]:
        documents = list(resources.retrieve(self.ctx, question))
        rng = np.random.default_rng([self.seed, int(hashlib.sha256(question.encode()).hexdigest()[:12], 16)])
        retrieved = {d.page_content for d in documents}
        candidates = [d for d in self.pool if d.page_content not in retrieved]
        count = min(self.noise, len(documents), len(candidates))
        if count:
            places = rng.choice(len(documents), size=count, replace=False)
            picks = rng.choice(len(candidates), size=count, replace=False)
            for place, pick in zip(places, picks, strict=True):
                chosen = candidates[pick]
                documents[place] = Document(chosen.page_content, metadata={**chosen.metadata, "noise": True})
        if self.shuffle:
            documents = [documents[i] for i in rng.permutation(len(documents))]
        return documents


__all__ = ["PerturbedRetrieval"]
