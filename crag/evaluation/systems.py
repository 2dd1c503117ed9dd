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

from crag.settings import Context
from crag.thresholds import Thresholds

NEVER = 1.01  # above any score: no document reaches it
ALWAYS = -1.01  # below any score: every document passes it
ALL_STRIPS = 1000  # top_k_strips at its most: every strip of the retrieved documents


@dataclass(frozen=True)
class System:
    """A named system: which pipeline runs and how its context differs from the run's."""

    name: str
    pipeline: str  # "crag", "rag", "rag_web" or "no_retrieval"
    description: str
    changes: Callable[[Context, float, float], dict] = lambda ctx, upper, lower: {}

    @property
    def uses_graph(self) -> bool:
        return self.pipeline == "crag"


def _single_threshold(ctx: Context, upper: float, lower: float) -> dict:
    middle = (upper + lower) / 2  # the Ambiguous band split evenly between the other two actions
    return {"upper_threshold": middle, "lower_threshold": middle}


SYSTEMS: dict[str, System] = {
    s.name: s
    for s in [
        System(
            "no_retrieval",
            "no_retrieval",
            "the generator alone, no knowledge (answering from its memory)",
            lambda ctx, upper, lower: {"answer_without_knowledge": True},
        ),
        System("rag", "rag", "standard RAG: the top-k documents straight to the generator"),
        System("rag_web", "rag_web", "RAG plus web search with the question, results unfiltered (paper Table 5)"),
        System("crag", "crag", "CRAG with the evaluator's calibrated thresholds"),
        System(
            "crag_paper_prompt",
            "crag",
            "CRAG generating with the paper's prompt",
            lambda ctx, upper, lower: {"generate_prompt": "paper"},
        ),
        System(
            "crag_compact_prompt",
            "crag",
            "CRAG generating with the compact prompt (a candidate for small models)",
            lambda ctx, upper, lower: {"generate_prompt": "compact"},
        ),
        System(
            "crag_marked_prompt",
            "crag",
            "CRAG generating with the marked prompt (the passages datamarked against instructions inside them)",
            lambda ctx, upper, lower: {"generate_prompt": "marked"},
        ),
        System(
            "rag_marked_prompt",
            "rag",
            "standard RAG generating with the marked prompt",
            lambda ctx, upper, lower: {"generate_prompt": "marked"},
        ),
        System(
            "rag_paper_prompt",
            "rag",
            "standard RAG generating with the paper's prompt",
            lambda ctx, upper, lower: {"generate_prompt": "paper"},
        ),
        System(
            "rag_compact_prompt",
            "rag",
            "standard RAG generating with the compact prompt",
            lambda ctx, upper, lower: {"generate_prompt": "compact"},
        ),
        System(
            "crag_ask_once",
            "crag",
            "CRAG that never asks the model twice: its first answer, declined or withheld, is final",
            lambda ctx, upper, lower: {"retry_prompt": None, "further_strips": 0},
        ),
        System(
            "crag_no_further",
            "crag",
            "CRAG that never shows the model the next strips when it declines over the kept ones",
            lambda ctx, upper, lower: {"further_strips": 0},
        ),
        System(
            "crag_no_recheck",
            "crag",
            "CRAG whose Incorrect grade is final: the chat model is not asked about the documents it rejected",
            lambda ctx, upper, lower: {"recheck_threshold": None},
        ),
        System(
            "rag_ask_once",
            "rag",
            "standard RAG that never asks the model twice",
            lambda ctx, upper, lower: {"retry_prompt": None},
        ),
        System(
            "crag_no_quote",
            "crag",
            "CRAG that declines instead of quoting a relevant strip when the model's answer is unsupported",
            lambda ctx, upper, lower: {"quote_threshold": NEVER},
        ),
        System(
            "crag_no_correct",
            "crag",
            "w/o Correct: upper threshold above 1, Correct cases become Ambiguous (Table 2)",
            lambda ctx, upper, lower: {"upper_threshold": NEVER, "lower_threshold": lower},
        ),
        System(
            "crag_no_incorrect",
            "crag",
            "w/o Incorrect: lower threshold below −1, Incorrect cases become Ambiguous (Table 2)",
            lambda ctx, upper, lower: {"upper_threshold": upper, "lower_threshold": ALWAYS},
        ),
        System(
            "crag_no_ambiguous",
            "crag",
            "w/o Ambiguous: one threshold, the middle of the calibrated pair (Table 2)",
            _single_threshold,
        ),
        System(
            "crag_no_refine",
            "crag",
            "w/o refinement: whole documents and web results as knowledge (Table 3)",
            lambda ctx, upper, lower: {
                "refine_mode": "selection",
                "top_k_strips": ALL_STRIPS,
                "strip_threshold": ALWAYS,
            },
        ),
        System(
            "crag_no_rewrite",
            "crag",
            "w/o rewrite: the web is searched with the question itself (Table 3)",
            lambda ctx, upper, lower: {"rewrite": "off"},
        ),
        System(
            "crag_model_rewrite",
            "crag",
            "the web query written by the chat model with the paper's few-shot prompt (the default takes the "
            "question's own keywords)",
            lambda ctx, upper, lower: {"rewrite": "model"},
        ),
        System(
            "crag_requery_rewrite",
            "crag",
            "on Incorrect or Ambiguous, the knowledge base searched again with the chat model's query (requery)",
            lambda ctx, upper, lower: {"requery": "rewrite"},
        ),
        System(
            "crag_requery_hyde",
            "crag",
            "on Incorrect or Ambiguous, the knowledge base searched again with a passage the chat model writes (HyDE)",
            lambda ctx, upper, lower: {"requery": "hyde"},
        ),
        System(
            "crag_no_selection",
            "crag",
            "w/o selection: documents cut into strips but every strip kept (Table 3)",
            lambda ctx, upper, lower: {"top_k_strips": ALL_STRIPS, "strip_threshold": ALWAYS},
        ),
        # issue 75's knowledge variants: a budget filled with whole documents after the kept strips, whole
        # documents alone when the grade is unsure, strips the reader picks, quotes the reader judges
        *(
            System(
                f"crag_budget_{n}",
                "crag",
                f"CRAG whose knowledge is the kept strips, then whole documents by retrieval rank, up to {n} tokens",
                lambda ctx, upper, lower, n=n: {"knowledge_tokens": n},
            )
            for n in (600, 900, 1200)
        ),
        *(
            System(
                f"crag_budget_{n}_judged",
                "crag",
                f"crag_budget_{n} that quotes a strip only when the reader judges that it answers",
                lambda ctx, upper, lower, n=n: {"knowledge_tokens": n, "judge_quotes": True},
            )
            for n in (600, 900, 1200)
        ),
        System(
            "crag_whole_unsure",
            "crag",
            "crag_budget_900, whose knowledge on Ambiguous is whole documents alone",
            lambda ctx, upper, lower: {"knowledge_tokens": 900, "whole_when_unsure": True},
        ),
        System(
            "crag_flat_unsure",
            "crag",
            "crag_whole_unsure, a flat grade (scores within 0.5) counting as unsure too",
            lambda ctx, upper, lower: {"knowledge_tokens": 900, "whole_when_unsure": True, "unsure_spread": 0.5},
        ),
        System(
            "crag_reader_choice",
            "crag",
            "CRAG whose kept strips are those the reader picks among refinement's nine best",
            lambda ctx, upper, lower: {"choose_strips": 9},
        ),
        System(
            "crag_judged_quotes",
            "crag",
            "CRAG that quotes a strip only when the reader judges that it answers",
            lambda ctx, upper, lower: {"judge_quotes": True},
        ),
        # one fixed route each, whatever the scores: with the scores they give the accuracy of any (upper, lower)
        # pair without rerunning (the threshold sweep). Documents are still labelled by the run's thresholds, so
        # each route answers as when the thresholds choose it: exact at the run's pair, approximate elsewhere
        System(
            "route_correct",
            "crag",
            "always Correct (for the threshold sweep)",
            lambda ctx, upper, lower: {"route": "correct"},
        ),
        System(
            "route_incorrect",
            "crag",
            "always Incorrect (for the threshold sweep)",
            lambda ctx, upper, lower: {"route": "incorrect"},
        ),
        System(
            "route_ambiguous",
            "crag",
            "always Ambiguous (for the threshold sweep)",
            lambda ctx, upper, lower: {"route": "ambiguous"},
        ),
    ]
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


__all__ = ["ROUTES", "SYSTEMS", "parse_systems"]  # what callers outside the package use
