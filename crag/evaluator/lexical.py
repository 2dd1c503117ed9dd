"""Lexical evidence blended into the evaluator's score, which a small cross-encoder misses on documentation:
    score = 2·σ(w_model · logit + w_lexical · overlap + w_contrast · contrast + bias) − 1
`overlap` is the IDF-weighted share of the question's terms in the passage (one pair on its own, unlike BM25);
`contrast` also weighs a term by how few passages of its set contain it."""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from crag.standing import grouped_standings
from crag.text import terms

IDF_FILE = "lexical_idf.json.gz"


@dataclass(frozen=True)
class IdfTable:
    """Document frequencies of stemmed terms over a reference corpus; terms below `min_df` count as unseen."""

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


def _share(wanted: Sequence[str], weights: Sequence[float], present: set[str]) -> float:
    total = sum(weights)
    return sum(w for t, w in zip(wanted, weights) if t in present) / total if total > 0 else 0.0


def contrasts(table: IdfTable, pairs: Sequence[tuple[str, str]], groups: Sequence[object] | None = None) -> list[float]:
    """The contrast feature of each pair, in [0, 1]: `overlap` with each term also weighted by
    log((n + 1) / (m + 0.5)), m of the n passages of the pair's group (`groups[i]`, default its question)
    containing it."""
    if groups is not None and len(groups) != len(pairs):
        raise ValueError(f"{len(groups)} groups for {len(pairs)} pairs")
    members: dict[tuple[object, str], list[int]] = {}
    for i, (question, _) in enumerate(pairs):
        members.setdefault((groups[i] if groups is not None else None, question), []).append(i)
    out = [0.0] * len(pairs)
    for (_, question), indices in members.items():
        wanted = list(dict.fromkeys(terms(question)))
        if not wanted:
            continue
        present = {i: set(terms(pairs[i][1])) for i in indices}
        n = len(indices)
        weights = [table.idf(t) * math.log((n + 1) / (sum(t in present[i] for i in indices) + 0.5)) for t in wanted]
        for i in indices:
            out[i] = _share(wanted, weights, present[i])
    return out


def overlap(table: IdfTable, question: str, passage: str) -> float:
    """IDF-weighted share of the question's distinct terms that the passage contains, in [0, 1]."""
    wanted = list(dict.fromkeys(terms(question)))
    if not wanted:
        return 0.0
    return _share(wanted, [table.idf(t) for t in wanted], set(terms(passage)))


@dataclass(frozen=True)
class Blend:
    """The logistic head over the model logit, overlap, contrast, and the standings of logit and overlap in
    their set (fitted by `crag evaluator adapt`); a weight it was fitted without is 0."""

    model: float
    lexical: float
    bias: float
    idf_file: str = IDF_FILE
    contrast: float = 0.0
    logit_standing: float = 0.0
    overlap_standing: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)

    def logits(
        self,
        model_logits: Sequence[float],
        overlaps: Sequence[float],
        contrasts: Sequence[float] | None = None,
        sets: Sequence[Hashable] | None = None,
    ) -> list[float]:
        """The head's logits; `sets[i]` names the set pair i was graded in (None: one set)."""
        if contrasts is None:
            if self.contrast:
                raise ValueError("this blend weighs the contrast feature: pass the contrasts")
            contrasts = [0.0] * len(overlaps)
        keys = [None] * len(overlaps) if sets is None else sets
        logit_z = grouped_standings(model_logits, keys) if self.logit_standing else [0.0] * len(overlaps)
        overlap_z = grouped_standings(overlaps, keys) if self.overlap_standing else [0.0] * len(overlaps)
        return [
            self.model * z
            + self.lexical * x
            + self.contrast * c
            + self.logit_standing * zs
            + self.overlap_standing * xs
            + self.bias
            for z, x, c, zs, xs in zip(model_logits, overlaps, contrasts, logit_z, overlap_z)
        ]

    def scaled(self, a: float, b: float) -> Blend:
        """The head whose logit is a · this one's + b (`calibration.align_scale`)."""
        weights = ("model", "lexical", "contrast", "logit_standing", "overlap_standing")
        return replace(self, **{w: round(a * getattr(self, w), 6) for w in weights}, bias=round(a * self.bias + b, 6))


def fit_blend(
    model_logits: Sequence[float],
    overlaps: Sequence[float],
    labels: Sequence[int],
    contrasts: Sequence[float] | None = None,
    weights: Sequence[float] | None = None,
    sets: Sequence[Hashable] | None = None,
) -> Blend:
    """L2 logistic regression of the labels on the features; contrast and standings only with `contrasts`, `sets`."""
    from sklearn.linear_model import LogisticRegression

    if len(set(labels)) < 2:
        raise ValueError("fitting the blend needs both relevant and irrelevant pairs")
    columns = [np.asarray(model_logits, float), np.asarray(overlaps, float)]
    if contrasts is not None:
        columns.append(np.asarray(contrasts, float))
    if sets is not None:
        columns += [np.asarray(grouped_standings(values, sets), float) for values in (model_logits, overlaps)]
    fit = LogisticRegression(max_iter=1000).fit(
        np.column_stack(columns),
        np.asarray(labels, int),
        sample_weight=None if weights is None else np.asarray(weights),
    )
    coef, bias = [round(w, 6) for w in fit.coef_[0].tolist()], round(float(fit.intercept_[0]), 6)
    named: dict[str, Any] = {"model": coef.pop(0), "lexical": coef.pop(0), "bias": bias}
    if contrasts is not None:
        named["contrast"] = coef.pop(0)
    if sets is not None:
        named["logit_standing"], named["overlap_standing"] = coef
    return Blend(**named)


__all__ = ["IDF_FILE", "IdfTable", "contrasts", "fit_blend", "overlap"]  # what callers outside the package use
