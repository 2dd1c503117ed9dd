"""What each system is: a pipeline and the `Context` changes that make it.

Every system shares the run's retriever, web index, evaluator and generator, so differences in
the results come from the method alone. CRAG's ablations are the CRAG graph with different
settings (paper Tables 2 and 3); the baselines are small graphs of the same nodes (`pipelines`).

Threshold ablations are stated in the evaluator's calibrated (upper, lower) pair, since scores lie
in [−1, 1]: a threshold above 1 is never reached and one below −1 is always passed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from crag import resources
from crag.graphs import compiled
from crag.settings import Context
from crag.thresholds import Thresholds

NEVER = 1.01  # above any score: no document reaches it
ALWAYS = -1.01  # below any score: every document passes it
ALL_STRIPS = 1000  # top_k_strips at its most: every strip of the retrieved documents


@dataclass(frozen=True)
class System:
    """A named system: which pipeline runs and how its context differs from the run's."""

    name: str
    pipeline: str  # a graph of `crag.graphs.BUILDERS`
    description: str
    changes: Callable[[Context, float, float], dict] = lambda ctx, upper, lower: {}

    @property
    def uses_graph(self) -> bool:
        """Whether the evaluator's thresholds decide its action: its graph has CRAG's `grade` step (CRAG, and
        Self-CRAG and Self-Reasoning over CRAG's knowledge)."""
        return "grade" in compiled(self.pipeline).nodes


def _single_threshold(ctx: Context, upper: float, lower: float) -> dict:
    middle = (upper + lower) / 2  # the Ambiguous band split evenly between the other two actions
    return {"upper_threshold": middle, "lower_threshold": middle}


def _set(**changes: object) -> Callable[[Context, float, float], dict]:
    return lambda ctx, upper, lower: dict(changes)


_PAPER, _COMPACT, _MARKED = ({"generate_prompt": p} for p in ("paper", "compact", "marked"))
_BUDGET = "the kept strips, then whole documents by retrieval rank, up to {} tokens"
_JUDGED = "a strip quoted only when the reader judges that it answers"
# name, pipeline, what changes, what it is
_TABLE: list[tuple[str, str, Callable[[Context, float, float], dict], str]] = [
    ("no_retrieval", "no_retrieval", _set(answer_without_knowledge=True), "the generator alone, from its memory"),
    ("rag", "rag", _set(), "standard RAG: the top-k documents straight to the generator"),
    ("rag_web", "rag_web", _set(), "RAG plus web search with the question, results unfiltered (paper Table 5)"),
    ("crag", "crag", _set(), "CRAG with the evaluator's calibrated thresholds"),
    (
        "tutorial_crag",
        "tutorial_crag",
        _set(),
        "LangGraph's tutorial CRAG: the chat model grades each document, any 'no' to the web, no refinement",
    ),
    (
        "self_reasoning",
        "self_reasoning",
        _set(),
        "Self-Reasoning over RAG's top-k documents: the reader judges relevance, quotes its evidence, analyses, answers",
    ),
    ("self_reasoning_no_relevance", "self_reasoning_no_relevance", _set(), "Self-Reasoning w/o the relevance step"),
    ("self_reasoning_no_evidence", "self_reasoning_no_evidence", _set(), "Self-Reasoning w/o the evidence step"),
    ("self_reasoning_no_trajectory", "self_reasoning_no_trajectory", _set(), "Self-Reasoning w/o the analysis"),
    (
        "crag_self_reasoning",
        "crag_self_reasoning",
        _set(),
        "CRAG's action and kept strips, read by Self-Reasoning's three steps instead of generate",
    ),
    (
        "self_rag",
        "self_rag",
        _set(),
        "Self-RAG: the reader decides whether to retrieve, answers over each document and critiques each answer "
        "(ISREL, ISSUP, ISUSE, from its first-token probabilities); the best-scoring answer",
    ),
    (
        "self_crag",
        "self_crag",
        _set(),
        "Self-CRAG (CRAG paper Table 1): Self-RAG's candidates and critiques over CRAG's three knowledge sets",
    ),
    (
        "self_rag_evaluator_critics",
        "self_rag_evaluator_critics",
        _set(),
        "Self-RAG whose critics are the evaluator (ISREL) and the grounding check (ISSUP): the reader only "
        "writes; always retrieves",
    ),
    (
        "flare",
        "flare",
        _set(),
        "FLARE: the answer a sentence at a time; a draft with a token below θ is searched for (masked below β), "
        "each search graded and refined by CRAG's evaluator, and the sentence written again",
    ),
    ("flare_questions", "flare", _set(flare_query="questions"), "FLARE searching with questions about unsure terms"),
    ("flare_plain", "flare", _set(flare_correct=False), "FLARE as its paper: the documents whole, not graded"),
    (
        "flare_previous",
        "flare",
        _set(flare_query="previous"),
        "previous-sentence retrieval (FLARE's baseline): a search before every sentence with the one before it",
    ),
    ("crag_paper_prompt", "crag", _set(**_PAPER), "CRAG generating with the paper's prompt"),
    ("crag_compact_prompt", "crag", _set(**_COMPACT), "CRAG generating with the compact prompt"),
    ("crag_marked_prompt", "crag", _set(**_MARKED), "CRAG with the marked prompt (passages datamarked)"),
    ("rag_marked_prompt", "rag", _set(**_MARKED), "standard RAG generating with the marked prompt"),
    ("rag_paper_prompt", "rag", _set(**_PAPER), "standard RAG generating with the paper's prompt"),
    ("rag_compact_prompt", "rag", _set(**_COMPACT), "standard RAG generating with the compact prompt"),
    ("crag_ask_once", "crag", _set(retry_prompt=None, further_strips=0), "CRAG whose first answer is final"),
    ("crag_no_further", "crag", _set(further_strips=0), "CRAG that never reads the next strips after a decline"),
    ("crag_no_recheck", "crag", _set(recheck_threshold=None), "CRAG without the chat model's second opinion"),
    ("rag_ask_once", "rag", _set(retry_prompt=None), "standard RAG that never asks the model twice"),
    ("crag_no_quote", "crag", _set(quote_threshold=NEVER), "CRAG that declines instead of quoting a strip"),
    (
        "crag_no_correct",
        "crag",
        lambda ctx, upper, lower: {"upper_threshold": NEVER, "lower_threshold": lower},
        "w/o Correct: upper threshold above 1, Correct cases become Ambiguous (Table 2)",
    ),
    (
        "crag_no_incorrect",
        "crag",
        lambda ctx, upper, lower: {"upper_threshold": upper, "lower_threshold": ALWAYS},
        "w/o Incorrect: lower threshold below −1, Incorrect cases become Ambiguous (Table 2)",
    ),
    ("crag_no_ambiguous", "crag", _single_threshold, "w/o Ambiguous: one threshold, the middle of the pair (Table 2)"),
    (
        "crag_no_refine",
        "crag",
        _set(refine_mode="selection", top_k_strips=ALL_STRIPS, strip_threshold=ALWAYS),
        "w/o refinement: whole documents and web results as knowledge (Table 3)",
    ),
    ("crag_no_rewrite", "crag", _set(rewrite="off"), "w/o rewrite: the web searched with the question (Table 3)"),
    ("crag_model_rewrite", "crag", _set(rewrite="model"), "the web query written by the chat model (the paper's)"),
    ("crag_requery_rewrite", "crag", _set(requery="rewrite"), "your documents searched again with the model's query"),
    ("crag_requery_hyde", "crag", _set(requery="hyde"), "your documents searched again with a passage (HyDE)"),
    (
        "crag_no_selection",
        "crag",
        _set(top_k_strips=ALL_STRIPS, strip_threshold=ALWAYS),
        "w/o selection: documents cut into strips but every strip kept (Table 3)",
    ),
    *((f"crag_budget_{n}", "crag", _set(knowledge_tokens=n), _BUDGET.format(n)) for n in (600, 900, 1200)),
    *(
        (
            f"crag_budget_{n}_judged",
            "crag",
            _set(knowledge_tokens=n, judge_quotes=True),
            f"{_BUDGET.format(n)}; {_JUDGED}",
        )
        for n in (600, 900, 1200)
    ),
    ("crag_reader_choice", "crag", _set(choose_strips=9), "the strips the reader picks among refinement's nine best"),
    ("crag_judged_quotes", "crag", _set(judge_quotes=True), f"CRAG with {_JUDGED}"),
    # one fixed route each, whatever the scores: with the scores they give the accuracy of any (upper, lower) pair
    # without rerunning (the lab's threshold sweep); documents are still labelled by the run's thresholds
    *(
        (f"route_{a}", "crag", _set(route=a), f"always {a.title()} (for the threshold sweep)")
        for a in ("correct", "incorrect", "ambiguous")
    ),
]
SYSTEMS: dict[str, System] = {
    name: System(name, pipeline, description, changes) for name, pipeline, changes, description in _TABLE
}
ROUTES = {"correct": "route_correct", "incorrect": "route_incorrect", "ambiguous": "route_ambiguous"}


def parse_systems(spec: str | list[str]) -> list[System]:
    """Systems from "rag,crag" (order kept, repeats dropped); ValueError listing the valid names."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [n.strip() for n in names if n.strip()]
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown system(s) {', '.join(unknown)}; choose from {', '.join(SYSTEMS)}")
    if not names:
        raise ValueError(f"no systems given; choose from {', '.join(SYSTEMS)}")
    return [SYSTEMS[n] for n in dict.fromkeys(names)]


def system_context(system: System, base: Context, calibrated: Thresholds) -> Context:
    """The run's context with the system's changes applied (`calibrated` = the evaluator's pair)."""
    pair = base.thresholds(calibrated)
    return dataclasses.replace(base, **system.changes(base, pair.upper, pair.lower))


def system_contexts(systems: list[System], base: Context) -> dict[str, Context]:
    """Each system's context over `base`, at the run's evaluator's calibrated thresholds (as `crag eval run`)."""
    calibrated = resources.calibrated(resources.evaluator(base))
    return {s.name: system_context(s, base, calibrated) for s in systems}


__all__ = ["ROUTES", "SYSTEMS", "parse_systems", "system_contexts"]  # what callers outside the package use
