"""Run-time settings of the graph: models, thresholds, top-k and backends.

Passed per run as LangGraph's `context` (`graph.invoke(input, context=Context(...))`); every
field has a description so LangGraph Studio can show it. Nothing here loads a model: nodes ask
the backends for process-wide cached instances by these names.
"""

from __future__ import annotations

import math
import os
from dataclasses import MISSING, dataclass, field
from typing import Any, Literal, get_args

from crag.knowledge.refinement import SET_WEIGHT
from crag.knowledge.refinement import Mode as RefineMode
from crag.knowledge.routing import RECHECK_THRESHOLD
from crag.knowledge.web_query import Rewrite
from crag.models.chat import CHAT_MODEL_HELP
from crag.models.embeddings import EMBEDDINGS_HELP, default_embeddings, embeddings_name
from crag.prompts import DEFAULT_GENERATE_PROMPT, GENERATE_PROMPTS, GeneratePrompt, Requery
from crag.search.store import (
    DEFAULT_CHROMA_TIMEOUT,
    DEFAULT_SEARCH,
    Search,
    default_chroma_dir,
    default_chroma_url,
    default_collection,
)
from crag.search.user_web import is_user_backend
from crag.search.web_base import check_api_url
from crag.search.wikipedia import DEFAULT_API_URL as DEFAULT_WIKIPEDIA_URL
from crag.thresholds import PRESETS, Preset, Thresholds

WebBackend = Literal["local", "tavily", "wikipedia", "searxng", "none"]
Route = Literal["auto", "correct", "incorrect", "ambiguous"]


def _env(name: str, default: str | None) -> str | None:
    return os.environ.get(name, default)


@dataclass(kw_only=True)
class Context:
    """Settings for one run of the CRAG graph.

    `evaluator`, `chat_model`, `rewrite_model`, `embeddings` and `web_backend` take a name or path,
    or a ready object (a Runnable scorer, a chat model, LangChain `Embeddings`; for the web, an
    object with `.search(query, k)`, a LangChain retriever or search tool), and `retriever` takes
    any LangChain retriever or vector store: that is how an application, or a test, injects its
    own models and backends.
    """

    evaluator: str | None = field(
        default_factory=lambda: _env("CRAG_EVALUATOR", None),
        metadata={
            "env": "CRAG_EVALUATOR",
            "description": "Evaluator checkpoint folder; empty = the shipped evaluator.",
        },
    )
    chat_model: str = field(
        default_factory=lambda: _env("CRAG_CHAT_MODEL", "local") or "local",
        metadata={"env": "CRAG_CHAT_MODEL", "description": f"Generator: {CHAT_MODEL_HELP}."},
    )
    rewrite_model: str | None = field(
        default=None,
        metadata={
            "description": "Model for the web query (with rewrite 'model'), the knowledge base's second search "
            "(requery) and the self-contained form of a follow-up; empty = chat_model."
        },
    )
    preset: Preset | None = field(
        default=None,
        metadata={
            "description": "Use the paper's thresholds for this dataset instead of the evaluator's calibrated pair."
        },
    )
    upper_threshold: float | None = field(
        default=None, metadata={"description": "Correct when any document scores at least this; empty = calibrated."}
    )
    lower_threshold: float | None = field(
        default=None, metadata={"description": "Incorrect when every document scores below this; empty = calibrated."}
    )
    route: Route = field(
        default="auto",
        metadata={
            "description": "'auto': the thresholds choose the action, as in the paper; 'correct', 'incorrect' or "
            "'ambiguous' force that action (what one route answers; the threshold sweep), the documents still "
            "labelled by the thresholds."
        },
    )
    k: int = field(default=10, metadata={"description": "Documents retrieved from the knowledge base."})
    search: Search = field(
        default=DEFAULT_SEARCH,
        metadata={
            "description": "How the Chroma collection is searched: 'hybrid' (its embeddings and BM25 keywords, "
            "fused by reciprocal rank) or 'dense' (its embeddings alone)."
        },
    )
    top_k_strips: int = field(default=5, metadata={"description": "Knowledge strips kept by refinement."})
    further_strips: int = field(
        default=5,
        metadata={
            "description": "When the model says it does not know over the kept strips, it is shown this many more "
            "of refinement's ranking (the retrieved documents' next-best strips, once) and that answer is kept "
            "if the grounding check lets it stand. 0: never. Documentation set: 61.4% of the answerable "
            "questions right against 59.6% (2 gained, none lost), no more unanswerable ones answered "
            "(docs/reports/2026-11-29-reading-further.md)."
        },
    )
    knowledge_tokens: int = field(
        default=0,
        metadata={
            "description": "After the kept strips, give the reader whole retrieved documents, best retrieval rank "
            "first, while the knowledge stays within this many tokens (words and punctuation marks); a document "
            "given whole replaces its strips. 0: the kept strips only."
        },
    )
    whole_when_unsure: bool = field(
        default=False,
        metadata={
            "description": "When the grade is Ambiguous, fill knowledge_tokens with whole documents alone, "
            "without refinement's strips."
        },
    )
    choose_strips: int = field(
        default=0,
        metadata={
            "description": "The reader picks the strips that answer among this many of refinement's best (at most "
            "9): its first reply token's probabilities over their numbers; 0: refinement's own ranking."
        },
    )
    judge_quotes: bool = field(
        default=False,
        metadata={
            "description": "Quote a strip instead of the model's declined or unsupported answer only when the chat "
            "model judges that the strip answers the question."
        },
    )
    strip_threshold: float = field(
        default=-0.5, metadata={"description": "Strips whose selection score is below this are dropped."}
    )
    strip_set_weight: float = field(
        default=SET_WEIGHT,
        metadata={
            "description": "How much a strip's closeness to the question, against the other strips' (by the "
            "knowledge base's embeddings), adds to its evaluator score when refinement ranks strips (and a "
            "document's, against the other documents', when CRAGCompressor orders them); 0: the evaluator's "
            "score alone, as in the paper."
        },
    )
    refine_mode: RefineMode = field(
        default="excerption",
        metadata={"description": "Strip decomposition: 50-word windows, sentences by three, or whole passages."},
    )
    chroma_dir: str = field(
        default_factory=lambda: str(default_chroma_dir()),
        metadata={"env": "CRAG_CHROMA_DIR", "description": "Embedded Chroma folder (ignored when chroma_url is set)."},
    )
    chroma_url: str | None = field(
        default_factory=default_chroma_url,
        metadata={"env": "CRAG_CHROMA_URL", "description": "A Chroma server URL."},
    )
    chroma_timeout: float = field(
        default_factory=lambda: float(_env("CRAG_CHROMA_TIMEOUT", str(DEFAULT_CHROMA_TIMEOUT))),
        metadata={
            "env": "CRAG_CHROMA_TIMEOUT",
            "description": "Seconds allowed for each request to the Chroma server (a slower one fails the run: 503).",
        },
    )
    collection: str = field(
        default_factory=default_collection,
        metadata={"env": "CRAG_COLLECTION", "description": "Chroma collection of the knowledge base."},
    )
    embeddings: str = field(  # or an Embeddings object (see the class docstring)
        default_factory=default_embeddings,
        metadata={
            "env": "CRAG_EMBEDDINGS",
            "description": f"Embeddings of the Chroma collection (the ones it was ingested with): {EMBEDDINGS_HELP}.",
        },
    )
    # There is no default web: a made-up fallback (the demo's Wikipedia pages behind a user's own
    # documents) searches something unrelated, finds nothing and says nothing.
    web_backend: WebBackend | None = field(
        default_factory=lambda: _env("CRAG_WEB_BACKEND", None) or None,  # type: ignore[return-value]
        metadata={
            "env": "CRAG_WEB_BACKEND",
            "description": "'local' (BM25 over web_index), 'tavily' (needs TAVILY_API_KEY), 'wikipedia' (the "
            "MediaWiki API at wikipedia_url), 'searxng' (the instance at searxng_url) or 'none' (no web: "
            "the Incorrect route has no knowledge). Empty: 'local' when web_index is set, else 'none'.",
        },
    )
    web_index: str | None = field(
        default_factory=lambda: _env("CRAG_WEB_INDEX", None) or None,
        metadata={
            "env": "CRAG_WEB_INDEX",
            "description": "JSONL {title, text} corpus searched by the local web backend (required by it).",
        },
    )
    wikipedia_url: str = field(
        default_factory=lambda: _env("CRAG_WIKIPEDIA_URL", None) or DEFAULT_WIKIPEDIA_URL,
        metadata={
            "env": "CRAG_WIKIPEDIA_URL",
            "description": "MediaWiki API of the wikipedia web backend (another language's or a private wiki's).",
        },
    )
    searxng_url: str | None = field(
        default_factory=lambda: _env("CRAG_SEARXNG_URL", None) or None,
        metadata={
            "env": "CRAG_SEARXNG_URL",
            "description": "SearxNG instance searched by the searxng web backend (required by it).",
        },
    )
    answer_without_knowledge: bool = field(
        default=False,
        metadata={
            "description": "With no relevant knowledge left, answer from the model's own memory (marked "
            "ungrounded) instead of saying that the sources hold nothing relevant."
        },
    )
    quote_threshold: float | None = field(
        default=None,
        metadata={
            "description": "When the model's answer is unsupported or it says it does not know, quote the best "
            "kept strip that names the question's "
            "subject and scores at least this (a retrieved strip by its selection score, a web strip by the "
            "evaluator's) instead. Empty: the evaluator's calibrated upper threshold (its own 'relevant'); "
            "above 1: never."
        },
    )
    rewrite: Rewrite = field(
        default="keywords",
        metadata={
            "description": "How the web query is made: 'keywords' (the question's subjects and rarest words; no model "
            "call), 'model' (the paper's few-shot rewrite by rewrite_model) or 'off' (the question as asked; the "
            "paper's ablation). true/false, its old values, mean 'model'/'off'."
        },
    )
    requery: Requery = field(
        default_factory=lambda: _env("CRAG_REQUERY", "off") or "off",  # type: ignore[return-value]
        metadata={
            "env": "CRAG_REQUERY",
            "description": "When the grade is Incorrect or Ambiguous, search the knowledge base again before the "
            "web: 'rewrite' (a query in the documents' words, written by rewrite_model), 'hyde' (a short passage "
            "that would answer, searched for as a document) or 'off'. The best-graded documents of both searches "
            "are kept and the action decided again.",
        },
    )
    recheck_threshold: float | None = field(
        default=RECHECK_THRESHOLD,
        metadata={
            "description": "When the evaluator rejects every retrieved document (Incorrect), the chat model grades "
            "each one (LangGraph's CRAG tutorial grader, its P(yes) mapped to [-1, 1]); documents it grades at "
            "least this are kept and the action becomes Ambiguous. Empty or above 1: never asked. On the "
            "documentation set the evaluator had rejected the answer of 10 of 114 questions "
            "(docs/reports/2026-11-28-second-opinion.md).",
        },
    )
    recheck_k: int = field(
        default=5,
        metadata={
            "description": "The chat model's second opinion reads at most this many retrieved documents, the first by "
            "retrieval rank, which orders documentation chunks better than the evaluator does (ROC-AUC 0.719 against "
            "0.607); each takes seconds, and the rest stay rejected "
            "(docs/reports/2026-11-29-documentation-set-at-k-10.md).",
        },
    )
    web_k: int = field(default=5, metadata={"description": "Web results used per search."})
    web_timeout: float = field(default=10.0, metadata={"description": "Seconds allowed for a search or a page fetch."})
    allow_private_fetch: bool = field(
        default=False, metadata={"description": "Allow fetching pages on private or loopback addresses."}
    )
    generate_prompt: GeneratePrompt = field(
        default=DEFAULT_GENERATE_PROMPT,
        metadata={
            "description": "Generation prompt: 'paper' (CRAG's), 'compact' (chosen for small models; see the grounding page) or 'marked' (compact over datamarked passages: their words joined by ^, against instructions planted in them)."
        },
    )
    retry_prompt: GeneratePrompt | None = field(
        default="paper",
        metadata={
            "description": "When knowledge was found but the model declines, or its answer is withheld, and no "
            "strip can be quoted instead: ask once more with this prompt ('paper', CRAG's, offers no way out), and "
            "let the grounding check judge that answer as it judged the first. 'off': ask once. With the 1.5B "
            "reader it answered 6.1 points more of the documentation set; PopQA unchanged "
            "(docs/reports/2026-11-28-ask-again.md)."
        },
    )
    max_answer_tokens: int = field(default=96, metadata={"description": "Longest answer generated."})
    retriever: Any = field(
        default=None,
        metadata={
            "description": "A LangChain retriever or vector store to use instead of Chroma (for apps and "
            "tests; not serialisable)."
        },
    )

    def __post_init__(self) -> None:
        if self.web_backend is None:
            self.web_backend = "local" if self.web_index else "none"
        if self.k < 1 or self.top_k_strips < 1 or self.web_k < 1 or self.recheck_k < 1:
            raise ValueError("k, top_k_strips, web_k and recheck_k must be at least 1")
        if self.further_strips < 0:
            raise ValueError(f"further_strips must be at least 0, got {self.further_strips}")
        if not 0 <= self.choose_strips <= 9:
            raise ValueError(f"choose_strips must be between 0 and 9, got {self.choose_strips}")
        if self.knowledge_tokens < 0:
            raise ValueError(f"knowledge_tokens must be at least 0, got {self.knowledge_tokens}")
        if self.preset is not None and self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}; choose one of {sorted(PRESETS)}")
        if self.quote_threshold is not None and math.isnan(self.quote_threshold):
            raise ValueError("quote_threshold must be a number, not NaN")
        if not math.isfinite(self.strip_set_weight) or self.strip_set_weight < 0:
            raise ValueError(f"strip_set_weight must be a finite number ≥ 0, got {self.strip_set_weight}")
        if self.recheck_threshold is not None and math.isnan(self.recheck_threshold):
            raise ValueError("recheck_threshold must be a number, not NaN")
        if self.web_timeout <= 0:
            raise ValueError("web_timeout must be positive")
        if not math.isfinite(self.chroma_timeout) or self.chroma_timeout <= 0:
            raise ValueError(f"chroma_timeout must be a positive number of seconds, got {self.chroma_timeout}")
        if isinstance(self.rewrite, bool):  # the setting's values before it had three
            self.rewrite = "model" if self.rewrite else "off"
        if self.rewrite not in get_args(Rewrite):
            raise ValueError(f"unknown rewrite {self.rewrite!r}; choose {' or '.join(get_args(Rewrite))}")
        if self.requery not in get_args(Requery):
            raise ValueError(f"unknown requery {self.requery!r}; choose {' or '.join(get_args(Requery))}")
        if self.route not in get_args(Route):
            raise ValueError(f"unknown route {self.route!r}; choose {' or '.join(get_args(Route))}")
        if self.search not in get_args(Search):
            raise ValueError(f"unknown search {self.search!r}; choose {' or '.join(get_args(Search))}")
        if self.refine_mode not in get_args(RefineMode):
            raise ValueError(f"unknown refine_mode {self.refine_mode!r}; choose {' or '.join(get_args(RefineMode))}")
        if not is_user_backend(self.web_backend) and self.web_backend not in get_args(WebBackend):
            raise ValueError(f"unknown web_backend {self.web_backend!r}; choose {' or '.join(get_args(WebBackend))}")
        if self.generate_prompt not in GENERATE_PROMPTS:
            raise ValueError(
                f"unknown generate_prompt {self.generate_prompt!r}; choose {' or '.join(GENERATE_PROMPTS)}"
            )
        if self.retry_prompt in ("", "off", "none"):  # as the command line, the server and `/set` say it
            self.retry_prompt = None
        if self.retry_prompt is not None and self.retry_prompt not in GENERATE_PROMPTS:
            raise ValueError(
                f"unknown retry_prompt {self.retry_prompt!r}; choose {' or '.join(GENERATE_PROMPTS)}, or none"
            )
        if self.retriever is not None and not (
            hasattr(self.retriever, "invoke") or hasattr(self.retriever, "similarity_search")
        ):
            raise ValueError(
                f"retriever must be a LangChain retriever or vector store, got {type(self.retriever).__name__}"
            )
        if not hasattr(self.embeddings, "embed_query"):
            embeddings_name(self.embeddings)  # ValueError for what is not a name
        if self.web_backend == "local" and not self.web_index:
            raise ValueError(
                "the local web backend needs web_index (a JSONL file of {title, text} records); "
                "set it, or CRAG_WEB_INDEX, or choose web_backend 'wikipedia', 'tavily' or 'none'"
            )
        # the chosen engine's URL is checked now, rather than failing every run's search
        if self.web_backend == "wikipedia":
            self.wikipedia_url = check_api_url(self.wikipedia_url, "wikipedia_url")
        if self.web_backend == "searxng":
            if not self.searxng_url:
                raise ValueError(
                    "the searxng web backend needs searxng_url (a SearxNG instance, e.g. http://127.0.0.1:8888); "
                    "set it, or CRAG_SEARXNG_URL"
                )
            self.searxng_url = check_api_url(self.searxng_url, "searxng_url")

    @classmethod
    def default(cls, name: str) -> Any:
        """The default of one setting (its environment variable read now, else the built-in value):
        entry points show it in their help and leave unset options to Context."""
        spec = cls.__dataclass_fields__[name]
        return spec.default_factory() if spec.default_factory is not MISSING else spec.default

    @property
    def rechecks(self) -> bool:
        """Whether the chat model is asked about documents the evaluator rejected all of."""
        return self.recheck_threshold is not None and self.recheck_threshold <= 1.0

    @property
    def has_web(self) -> bool:
        """Whether the Incorrect route has a web to search."""
        return self.web_backend != "none"

    def quote_from(self, calibrated: Thresholds) -> float:
        """The score a strip needs to be quoted: the explicit value, else the evaluator's calibrated
        upper threshold. Not the run's routing pair: an ablation that forces a route (upper below −1)
        must not make every strip quotable."""
        return calibrated.upper if self.quote_threshold is None else self.quote_threshold

    def thresholds(self, calibrated: Thresholds) -> Thresholds:
        """Explicit values, else the preset, else the evaluator's calibrated pair; ValueError when
        the result conflicts (a lone lower threshold above the upper one it is combined with)."""
        base = PRESETS[self.preset] if self.preset else calibrated
        return base.with_overrides(upper=self.upper_threshold, lower=self.lower_threshold)
