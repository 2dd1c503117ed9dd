"""Lexical evidence blended into the evaluator's score: how much of the question a passage spells out.

Measured on the validation slices (README, "Retrieval evaluator"), a 3-layer cross-encoder
fine-tuned on Wikipedia questions misses what plain term overlap sees: on man pages and pydoc,
BM25 ranks relevant chunks better than the model (0.79 against 0.62 ROC-AUC), and on every slice
the two disagree in useful ways. So the shipped score is a logistic blend of the model's logit and
one lexical feature, fitted on the dev pairs (training questions held apart, never a validation
slice):

    score = 2·σ(w_model · logit + w_lexical · overlap(question, passage) + bias) − 1

`overlap` is the IDF-weighted share of the question's terms (stemmed, stopwords and question
words dropped) that occur in the passage: in [0, 1], computable for one pair on its own, with
document frequencies from a fixed corpus (the training passages) stored beside the weights.
BM25 itself needs an index of the passages being scored (bm25s builds one per corpus); the
evaluator scores any pairs it is handed, one at a time if need be, so the few lines here
compute the same kind of evidence pointwise.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from crag.core.text import terms

IDF_FILE = "lexical_idf.json.gz"


@dataclass(frozen=True)
class IdfTable:
    """Document frequencies of stemmed terms over a reference corpus; terms seen fewer than
    `min_df` times are left out to keep the file small and count as unseen (the rarest)."""

    n_docs: int
    df: dict[str, int]
    min_df: int = 2

    @classmethod
    def from_corpus(cls, documents: Iterable[str], min_df: int = 2) -> IdfTable:
        counts: Counter[str] = Counter()
        n = 0
        for document in documents:
            counts.update(set(terms(document)))
            n += 1
        if n == 0:
            raise ValueError("the IDF corpus is empty")
        return cls(n_docs=n, df={t: c for t, c in sorted(counts.items()) if c >= min_df}, min_df=min_df)

    def idf(self, term: str) -> float:
        return math.log((self.n_docs + 1) / (self.df.get(term, 0) + 0.5))

    def save(self, path: Path) -> None:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            json.dump({"n_docs": self.n_docs, "min_df": self.min_df, "df": self.df}, handle)

    @classmethod
    def load(cls, path: Path) -> IdfTable:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            raw = json.load(handle)
        return cls(n_docs=int(raw["n_docs"]), df=dict(raw["df"]), min_df=int(raw.get("min_df", 2)))


def overlap(table: IdfTable, question: str, passage: str) -> float:
    """IDF-weighted share of the question's distinct terms that the passage contains, in [0, 1];
    0 for a question with no content words (nothing to find)."""
    wanted = list(dict.fromkeys(terms(question)))
    if not wanted:
        return 0.0
    present = set(terms(passage))
    weights = [table.idf(t) for t in wanted]
    return sum(w for t, w in zip(wanted, weights) if t in present) / sum(weights)


@dataclass(frozen=True)
class Blend:
    """The logistic head over (model logit, lexical overlap); stored in the checkpoint's metadata."""

    model: float
    lexical: float
    bias: float
    idf_file: str = IDF_FILE

    def as_dict(self) -> dict:
        return asdict(self)

    def logits(self, model_logits: Sequence[float], overlaps: Sequence[float]) -> list[float]:
        return [self.model * z + self.lexical * x + self.bias for z, x in zip(model_logits, overlaps)]


def fit_blend(model_logits: Sequence[float], overlaps: Sequence[float], labels: Sequence[int]) -> Blend:
    """Logistic regression of the labels on the two features (scikit-learn, default L2)."""
    from sklearn.linear_model import LogisticRegression

    if len(set(labels)) < 2:
        raise ValueError("fitting the blend needs both relevant and irrelevant pairs")
    features = np.column_stack([np.asarray(model_logits, float), np.asarray(overlaps, float)])
    fit = LogisticRegression().fit(features, np.asarray(labels, int))
    (w_model, w_lexical), bias = fit.coef_[0].tolist(), float(fit.intercept_[0])
    return Blend(model=round(w_model, 6), lexical=round(w_lexical, 6), bias=round(bias, 6))
