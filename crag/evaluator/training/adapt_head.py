"""The head `crag evaluator adapt` fits on a user's collection, and how it is chosen without labels.
It adds the logit's and overlap's standings in their set, and is anchored by half of the general set
(weight among `ANCHOR_WEIGHTS`); the other half guards against forgetting."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import cast

from crag.evaluator.lexical import Blend, IdfTable, contrasts, fit_blend, overlap
from crag.evaluator.model import Scorer
from crag.evaluator.pairs import Pair
from crag.evaluator.training.calibration import align_scale, match_rates
from crag.evaluator.training.evaluation import roc_auc
from crag.thresholds import Thresholds, score_of

ANCHOR_WEIGHTS = (0.1, 0.25, 0.5, 1.0, 2.0)  # the general half's total weight against the collection's sets
FIT_QUERIES = 1000  # retrieved sets the head is fitted on (a seeded sample)


@dataclass
class Features:
    """A pair list's head inputs, and the set each pair was graded in (group and question)."""

    labels: list[int]
    logits: list[float]
    overlaps: list[float]
    contrasts: list[float]
    sets: list[Hashable]

    def __add__(self, other: Features) -> Features:
        return Features(*(getattr(self, k) + getattr(other, k) for k in self.__dataclass_fields__))

    def scored(self, blend: Blend) -> list[float]:
        return blend.logits(self.logits, self.overlaps, self.contrasts, self.sets)

    def auc(self, blend: Blend) -> float:
        return roc_auc(self.labels, self.scored(blend))


def features(
    scorer: Scorer, table: IdfTable, pairs: Sequence[Pair], tag: str = "", progress: str | None = None
) -> Features:
    """The model's logits and lexical features of `pairs` (without empty passages); `tag` keeps the sets of
    two lists apart when they are fitted together."""
    texts = [(p.question, scorer.passage_text(p.passage, p.title)) for p in pairs]
    keep = [i for i, (_, text) in enumerate(texts) if text.strip()]
    texts, kept = [texts[i] for i in keep], [pairs[i] for i in keep]
    groups = [p.group for p in kept]
    return Features(
        labels=[p.label for p in kept],
        # every passage here has text (kept above): the model scores each, None for none
        logits=[float(cast(float, z)) for z in scorer.model_logits(texts, batch_size=64, progress=progress)],
        overlaps=[overlap(table, *t) for t in texts],
        contrasts=contrasts(table, texts, groups),
        sets=[(tag, p.group, p.question) for p in kept],
    )


def sample_sets(pairs: Sequence[Pair], n: int, seed: int) -> list[Pair]:
    """The pairs of a seeded sample of `n` sets (group, question), all of each set."""
    keys = sorted({(p.group, p.question) for p in pairs})
    kept = set(random.Random(seed).sample(keys, min(n, len(keys))))
    return [p for p in pairs if (p.group, p.question) in kept]


def split_general(general: Sequence[Pair], seed: int = 0) -> tuple[list[Pair], list[Pair]]:
    """(anchor, guard): the general set halved by group (one subject's question in all its phrasings)."""
    groups = sorted({p.group for p in general})
    anchor = set(random.Random(seed).sample(groups, len(groups) // 2))
    return [p for p in general if p.group in anchor], [p for p in general if p.group not in anchor]


def fit_anchored(domain: Features, anchor: Features, weight: float) -> Blend:
    """The head fitted on the domain's sets and the anchor pairs, the anchor weighing `weight` times as much."""
    both = domain + anchor
    n, m = len(domain.labels), len(anchor.labels)
    weights = [1.0] * n + [weight * n / m] * m
    return fit_blend(both.logits, both.overlaps, both.labels, both.contrasts, weights, both.sets)


def choose_head(
    fit: Features, anchor: Features, choose: Features, guard: Features, guard_before: float, max_drop: float
) -> tuple[Blend, dict]:
    """The anchored head ranking `choose` best among those losing at most `max_drop` ROC-AUC on `guard`
    (else the one losing least), and a record of every candidate."""
    candidates = []
    for weight in ANCHOR_WEIGHTS:
        blend = fit_anchored(fit, anchor, weight)
        candidates.append((weight, blend, choose.auc(blend), guard.auc(blend)))
    within = [c for c in candidates if guard_before - c[3] <= max_drop]
    weight, blend, _, _ = max(within, key=lambda c: c[2]) if within else max(candidates, key=lambda c: (c[3], c[2]))
    record = {
        "anchor_weight": weight,
        "within_bound": bool(within),
        "candidates": [
            {"anchor_weight": w, "calibrate_roc_auc": round(a, 4), "guard_roc_auc": round(g, 4)}
            for w, _, a, g in candidates
        ],
    }
    return blend, record


@dataclass
class HeadData:
    """What the head is fitted, chosen and calibrated on, and the general half it must not forget."""

    fit: list[Pair]  # the training documents' retrieved sets
    calibrate: list[Pair]  # the calibration documents' retrieved sets
    start_calibrate: list[float]  # the starting evaluator's scores of those, taken before any training
    anchor: list[Pair]  # half of the general set, fitted with the collection's sets
    guard: list[Pair]  # the other half, which the head may forget at most `max_general_drop` of
    guard_before: float  # the starting evaluator's ROC-AUC on the guard


def fit_head(
    scorer: Scorer,
    table: IdfTable,
    head: HeadData,
    reference: Thresholds,
    seed: int,
    max_drop: float,
    progress: bool = False,
) -> tuple[Blend, Thresholds, dict]:
    """(blend, thresholds, record): the chosen head, with thresholds that fire each route as often as the
    starting evaluator's did (self-made labels are too noisy to calibrate on), on its scale when possible."""

    def bar(what: str) -> str | None:
        return f"head: {what}" if progress else None

    fit = features(scorer, table, sample_sets(head.fit, FIT_QUERIES, seed), "collection", bar("fitting sets"))
    calibrate_features = features(scorer, table, head.calibrate, "collection", bar("calibration sets"))
    blend, chosen = choose_head(
        fit,
        features(scorer, table, head.anchor, "general", bar("general anchor")),
        calibrate_features,
        features(scorer, table, head.guard, "general", bar("general guard")),
        head.guard_before,
        max_drop,
    )
    # the starting scores of exactly the calibration pairs `features` kept (it leaves empty passages out)
    kept = [s for p, s in zip(head.calibrate, head.start_calibrate) if scorer.passage_text(p.passage, p.title).strip()]
    new = [score_of(z) for z in calibrate_features.scored(blend)]
    matched = match_rates(kept, reference, new)
    how = {"method": "match_rates", "n": len(new), "reference": [reference.upper, reference.lower]}
    how |= {"matched": [matched.upper, matched.lower], "head": chosen}
    scale = align_scale(matched, reference)
    if scale is None:
        return blend, matched, how
    how["scale"] = [round(scale[0], 6), round(scale[1], 6)]
    return blend.scaled(*scale), reference, how  # same routes, on the starting evaluator's scale
