"""Training pairs from real retrieval: the passages a dense retriever returns for training questions.

The first recipe paired each question with web-search strips and BM25 neighbours, and validated
on the same recipe; the graph instead grades what the project's retriever returns (MiniLM
embeddings over ~600-character chunks), whose hard negatives look different: other people of the
same name, other films of the same title, chunks that mention the subject in passing. Here the
training questions are sent through the same kind of retriever (the same embedding model and
chunking, exact nearest neighbours instead of Chroma's HNSW index) over a pool that holds no
passage of any validation question, and the top k are labelled by gold page, as the paper does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from crag.evaluator.pairs import clean
from crag.models.base_model import PACKAGED_BASE, resolve_base

# the evaluation harness's chunking of knowledge-base records (crag.evaluation.kb); kept equal by a test
CHUNK_SIZE = 600
CHUNK_OVERLAP = 100


@dataclass(frozen=True)
class Chunk:
    title: str
    text: str


def chunk_pool(passages: Sequence[tuple[str, str]]) -> list[Chunk]:
    """(title, text) passages cut as the knowledge base is cut; each chunk text once per title."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP)
    seen: set[tuple[str, str]] = set()
    chunks = []
    for title, text in passages:
        for piece in splitter.split_text(text):
            if (title, piece) not in seen:
                seen.add((title, piece))
                chunks.append(Chunk(title, piece))
    return chunks


class DenseIndex:
    """Exact cosine search over chunk texts with the packaged embedder (the retriever embeds text only).

    Embedding the pool takes minutes on two cores, so the vectors are kept in `cache` (a .npy file
    named after a hash of the chunk texts) and a rebuild with the same pool reuses them.
    """

    def __init__(self, chunks: list[Chunk], *, cache: Path | None = None, batch_size: int = 64, progress: bool = True):
        from sentence_transformers import SentenceTransformer

        self.chunks = chunks
        self.model = SentenceTransformer(str(resolve_base(PACKAGED_BASE)), device="cpu")
        digest = hashlib.sha256("\0".join(c.text for c in chunks).encode()).hexdigest()[:16]
        path = cache / f"pool-{digest}.npy" if cache else None
        if path is not None and path.is_file():
            self.vectors = np.load(path)
            return
        vectors = []
        with tqdm(total=len(chunks), desc="embed retrieval pool", unit="chunk", disable=not progress) as bar:
            for start in range(0, len(chunks), 512):
                batch = [c.text for c in chunks[start : start + 512]]
                vectors.append(self.model.encode(batch, batch_size=batch_size, normalize_embeddings=True))
                bar.update(len(batch))
        self.vectors = np.concatenate(vectors) if vectors else np.zeros((0, 384), dtype="float32")
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, self.vectors)

    def search(self, queries: Sequence[str], k: int) -> list[list[Chunk]]:
        if not queries or not len(self.chunks):
            return [[] for _ in queries]
        q = self.model.encode(list(queries), batch_size=64, normalize_embeddings=True)
        sims = q @ self.vectors.T
        k = min(k, len(self.chunks))
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        results = []
        for row, candidates in zip(sims, top):
            order = candidates[np.argsort(-row[candidates])]
            results.append([self.chunks[int(i)] for i in order])
        return results


def teacher_probabilities(index: DenseIndex, pairs: Sequence, progress: bool = True) -> list[float]:
    """The zero-shot teacher: the base model's cosine of (question, passage text), turned into a
    probability of relevance by a logistic fit on the pairs' own labels.

    Training towards a blend of the label and this probability keeps what the base model knows about
    relevance in general (it was trained on a billion question-passage pairs), where the gold-page
    labels alone taught the first evaluator the benchmark's surface. Passages already in the pool
    reuse its vectors.
    """
    from sklearn.linear_model import LogisticRegression

    known = {clean(chunk.text): i for i, chunk in enumerate(index.chunks)}  # training pairs hold cleaned text
    missing = sorted({p.passage for p in pairs if p.passage not in known})
    extra = {}
    with tqdm(total=len(missing), desc="teacher: embed passages", unit="passage", disable=not progress) as bar:
        for start in range(0, len(missing), 512):
            batch = missing[start : start + 512]
            extra.update(zip(batch, index.model.encode(batch, batch_size=64, normalize_embeddings=True)))
            bar.update(len(batch))
    questions = sorted({p.question for p in pairs})
    qvec = dict(zip(questions, index.model.encode(questions, batch_size=64, normalize_embeddings=True)))
    cos = np.array(
        [
            float(np.dot(qvec[p.question], index.vectors[known[p.passage]] if p.passage in known else extra[p.passage]))
            for p in pairs
        ]
    )
    fit = LogisticRegression().fit(cos.reshape(-1, 1), [p.label for p in pairs])
    return fit.predict_proba(cos.reshape(-1, 1))[:, 1].tolist()
