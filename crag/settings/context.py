"""`Context`: every setting of a run, each declared once with `setting()`."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Annotated, Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from crag.search.filters import FILTER_HELP
from crag.settings.checks import checked
from crag.settings.declare import (
    ACTIVE,
    ANSWER,
    DOCUMENTS,
    GRADE,
    KNOWLEDGE,
    MODELS,
    WEB,
    about,
    from_env,
    read_environment,
    setting,
)
from crag.settings.kinds import (
    AnswerStyle,
    DocumentRetriever,
    DocumentScorer,
    FlareQuery,
    Gate,
    GeneratePrompt,
    MetadataFilter,
    Probability,
    RefineMode,
    Requery,
    RetryPrompt,
    Rewrite,
    Route,
    Score,
    Search,
    WebBackend,
    WebSearcher,
)
from crag.thresholds import PRESETS, Preset, Thresholds
from crag.urls import check_api_url

DEFAULT_CHROMA_DIR = ".crag/chroma"
DEFAULT_COLLECTION = "crag"
DEFAULT_WIKIPEDIA_URL = "https://en.wikipedia.org/w/api.php"
CHAT_MODEL_HELP = (
    "'local' (Qwen2.5-Coder-1.5B-Instruct on llama.cpp), 'local:tiny' (SmolLM2-135M, fast), "
    "'local:/path/model.gguf' or '<provider>:<model>' (openai, anthropic, ollama, …)"
)
EMBEDDINGS_HELP = (
    "'local' (all-MiniLM-L6-v2, shipped), 'local:FOLDER' (a sentence-transformers model on disk) or "
    "'<provider>:<model>' (openai:text-embedding-3-small, ollama:nomic-embed-text, …)"
)


@dataclass(kw_only=True)
@read_environment
class Context:
    """Settings for one run of a crag graph (see the module docstring; `setting()` says what each part means).

    `evaluator`, `chat_model`, `rewrite_model`, `embeddings` and `web_backend` take a name or a ready object
    (a Runnable scorer, a chat model, LangChain `Embeddings`, an object with `.search(query, k)`, a retriever
    or a search tool), and `retriever` any LangChain retriever or vector store: that is how an application,
    or a test, injects its own models and backends.
    """

    # pydantic (a schema of the Context) checks the objects' types with isinstance: they are not its models
    __pydantic_config__ = ConfigDict(arbitrary_types_allowed=True)

    # -- your documents
    chroma_dir: str = setting(
        DEFAULT_CHROMA_DIR, group=DOCUMENTS, help="Embedded Chroma folder (unused with chroma_url)."
    )
    chroma_url: str | None = setting(
        group=DOCUMENTS, help="A Chroma server, e.g. http://127.0.0.1:8000, instead of the folder."
    )
    collection: str = setting(DEFAULT_COLLECTION, group=DOCUMENTS, help="The Chroma collection of your documents.")
    embeddings: str | SkipJsonSchema[Embeddings] = setting(
        "local",
        group=DOCUMENTS,
        objects=True,
        help=f"The collection's embeddings (those it was ingested with): {EMBEDDINGS_HELP}.",
    )
    k: Annotated[int, Field(ge=1, le=50)] = setting(
        10, group=DOCUMENTS, request=True, help="Documents retrieved for a question."
    )
    search: Search = setting(
        "hybrid",
        group=DOCUMENTS,
        request=True,
        help="How the collection is searched: 'hybrid' (embeddings and BM25 keywords, fused) or 'dense' (embeddings alone).",
    )
    filter: MetadataFilter = setting(
        group=DOCUMENTS,
        request=True,
        help=f"Search only your documents whose metadata match {FILTER_HELP}. Chroma, Qdrant and HybridRetriever "
        "filter in the search; another vector store gets it as filter=; another retriever's results are filtered "
        "after it returns them (fewer than k may be left). Web results are not filtered.",
    )
    self_rag_retrieve_threshold: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = setting(
        0.2,
        group=DOCUMENTS,
        request=True,
        help="Self-RAG and Self-CRAG search your documents when the chat model's probability that documents "
        "would help (its yes against its no) is above this (the Self-RAG paper's 0.2); below it the model "
        "answers from its memory, ungrounded. 0: always search, without asking.",
    )
    chroma_timeout: Annotated[float, Field(gt=0, allow_inf_nan=False)] = setting(
        30.0, group=DOCUMENTS, help="Seconds allowed for each request to the Chroma server."
    )
    retriever: SkipJsonSchema[BaseRetriever | VectorStore | DocumentRetriever] | None = setting(
        group=DOCUMENTS,
        objects=True,
        env=False,
        help="A LangChain retriever or vector store to search instead of Chroma (Python only).",
    )
    record_manager: str | None = setting(
        group=DOCUMENTS,
        objects=True,
        help="Where ingesting records each source's chunk ids (LangChain's Indexing API): a SQLite file, or a "
        "LangChain RecordManager (Python); empty: a file in the Chroma folder (with chroma_url, one rebuilt "
        "from the collection each time). A vector store given as the retriever needs one.",
    )
    # -- models
    chat_model: str | SkipJsonSchema[BaseChatModel] = setting(
        "local", group=MODELS, objects=True, help=f"The chat model that answers: {CHAT_MODEL_HELP}."
    )
    rewrite_model: str | SkipJsonSchema[BaseChatModel] | None = setting(
        group=MODELS,
        objects=True,
        help="The model that writes search queries and makes follow-ups self-contained; empty: chat_model.",
    )
    evaluator: str | SkipJsonSchema[DocumentScorer] | None = setting(
        group=MODELS,
        objects=True,
        help="An evaluator checkpoint folder (`crag evaluator adapt` writes one); empty: the shipped one.",
    )
    max_answer_tokens: Annotated[int, Field(ge=8, le=1024)] = setting(
        96, group=MODELS, request=True, help="The longest short answer the chat model writes, in tokens."
    )
    long_answer_tokens: Annotated[int, Field(ge=32, le=1024)] = setting(
        320,
        group=MODELS,
        request=True,
        help="The longest answer the chat model writes with answer_style 'long', in tokens (FLARE's too).",
    )
    # -- the web
    web_backend: WebBackend | SkipJsonSchema[WebSearcher | BaseRetriever | BaseTool] | None = setting(
        group=WEB,
        objects=True,
        request=True,
        help="Where Incorrect and Ambiguous search: 'local' (BM25 over web_index), 'tavily' (needs TAVILY_API_KEY), "
        "'wikipedia', 'searxng' (needs searxng_url) or 'none'. Empty: 'local' when web_index is set, else 'none'.",
    )
    web_index: str | None = setting(
        group=WEB, help="A JSONL file of {title, text} records, searched by the local web backend."
    )
    wikipedia_url: str = setting(
        DEFAULT_WIKIPEDIA_URL, group=WEB, help="The MediaWiki API the wikipedia backend searches."
    )
    searxng_url: str | None = setting(group=WEB, help="The SearxNG instance the searxng backend searches.")
    web_k: Annotated[int, Field(ge=1, le=10)] = setting(5, group=WEB, request=True, help="Web results used per search.")
    web_timeout: Annotated[float, Field(gt=0, le=120, allow_inf_nan=False)] = setting(
        10.0, group=WEB, help="Seconds allowed for a search or a page fetch."
    )
    allow_private_fetch: bool = setting(False, group=WEB, help="Allow fetching pages on private or loopback addresses.")
    rewrite: Rewrite = setting(
        "keywords",
        group=WEB,
        request=True,
        help="The web query: 'keywords' (the question's own), 'model' (the CRAG paper's rewrite by rewrite_model) "
        "or 'off' (the question as asked).",
    )
    # -- the answer
    generate_prompt: GeneratePrompt = setting(
        "compact",
        group=ANSWER,
        request=True,
        flag="prompt",
        help="The answer's prompt: 'compact' (for small models), 'paper' (the CRAG paper's) or 'marked' "
        "(compact over passages marked against instructions planted in them).",
    )
    answer_style: AnswerStyle = setting(
        "short",
        group=ANSWER,
        request=True,
        help="'short': one sentence, up to max_answer_tokens (a question of fact); 'long': a paragraph of several "
        'sentences, up to long_answer_tokens ("Tell me a bio of X.", a report).',
    )
    retry_prompt: RetryPrompt | None = setting(
        "paper",
        group=ANSWER,
        request=True,
        help="When the model declines or its answer is withheld and no passage can be quoted, ask once more "
        "with this prompt; 'off': ask once.",
    )
    prompts: str | None = setting(
        group=ANSWER,
        objects=True,
        help="Prompts replaced by name (compact, paper, marked, no_knowledge, no_knowledge_long, rewrite, requery, "
        "hyde, condense, grade): a YAML or JSON file mapping each name to its template; in Python also a dict of "
        "names to ChatPromptTemplates. Empty: the built-in prompts.",
    )
    quote_threshold: Gate | None = setting(
        group=ANSWER,
        request=True,
        help="When the model's answer is unsupported or declines, quote the best kept passage about the question's "
        "subject scoring at least this instead. Empty: the evaluator's upper threshold; above 1: never.",
    )
    judge_quotes: bool = setting(
        False,
        group=ANSWER,
        request=True,
        help="Quote a passage only when the chat model judges that it answers the question.",
    )
    answer_without_knowledge: bool = setting(
        False,
        group=ANSWER,
        request=True,
        help="With nothing relevant found, answer from the model's memory (marked ungrounded) instead of saying so.",
    )
    # -- the grade
    preset: Preset | None = setting(
        group=GRADE, request=True, help="The CRAG paper's thresholds for one of its datasets."
    )
    upper_threshold: Score | None = setting(
        group=GRADE, request=True, flag="upper", help="Correct when a document scores at least this; empty: calibrated."
    )
    lower_threshold: Score | None = setting(
        group=GRADE,
        request=True,
        flag="lower",
        help="Incorrect when every document scores below this; empty: calibrated.",
    )
    route: Route = setting(
        "auto",
        group=GRADE,
        help="'auto': the thresholds choose the action; 'correct', 'incorrect' or 'ambiguous' force it.",
    )
    recheck_threshold: Gate | None = setting(
        -0.4,
        group=GRADE,
        request=True,
        help="When the evaluator rejects every document, the chat model grades them (its yes/no, in -1..1): one "
        "graded at least this is kept and the action becomes Ambiguous. Empty or above 1: never asked.",
    )
    recheck_k: Annotated[int, Field(ge=1, le=10)] = setting(
        5,
        group=GRADE,
        help="The chat model's second opinion reads at most this many documents, best retrieval rank first.",
    )
    requery: Requery = setting(
        "off",
        group=GRADE,
        request=True,
        help="When nothing relevant is found, search your documents again before the web: with a query ('rewrite') "
        "or a passage ('hyde') that rewrite_model writes; 'off': not.",
    )
    # -- refinement
    refine_mode: RefineMode = setting(
        "excerption",
        group=KNOWLEDGE,
        request=True,
        help="How documents are cut into strips: 50-word windows, sentences by three, or whole passages.",
    )
    top_k_strips: Annotated[int, Field(ge=1, le=1000)] = setting(
        5, group=KNOWLEDGE, request=True, help="Strips kept from the retrieved documents."
    )
    strip_threshold: Score = setting(
        -0.5, group=KNOWLEDGE, request=True, help="Strips whose selection score is below this are dropped."
    )
    strip_set_weight: Annotated[float, Field(ge=0, le=10, allow_inf_nan=False)] = setting(
        2.73,
        group=KNOWLEDGE,
        request=True,
        help="How much a strip's closeness to the question, against the other strips', adds to its evaluator "
        "score; 0: the evaluator's score alone, as in the paper.",
    )
    further_strips: Annotated[int, Field(ge=0, le=50)] = setting(
        5,
        group=KNOWLEDGE,
        request=True,
        help="When the model says it does not know over the kept strips, it reads this many more (once); 0: never.",
    )
    knowledge_tokens: Annotated[int, Field(ge=0, le=4000)] = setting(
        0,
        group=KNOWLEDGE,
        request=True,
        help="After the kept strips, whole retrieved documents, best rank first, while the knowledge stays within "
        "this many tokens (words and punctuation); 0: the kept strips only.",
    )
    choose_strips: Annotated[int, Field(ge=0, le=9)] = setting(
        0,
        group=KNOWLEDGE,
        request=True,
        help="The chat model picks the strips that answer among this many of refinement's best; 0: refinement's ranking.",
    )
    # -- active retrieval (the flare system: `crag.graphs.flare`)
    flare_threshold: Probability = setting(
        0.8,
        group=ACTIVE,
        request=True,
        help="FLARE searches for the next sentence when any token of the model's draft of it has a probability "
        "below this (θ; the official code's 0.8); 0: never, 1: before every sentence.",
    )
    flare_mask: Probability = setting(
        0.4,
        group=ACTIVE,
        request=True,
        help="The draft's tokens below this probability (β; the official code's 0.4) are left out of its masked "
        "query, and are what its generated questions ask about.",
    )
    flare_query: FlareQuery = setting(
        "masked",
        group=ACTIVE,
        request=True,
        help="FLARE's search for an unsure sentence: 'masked' (the draft without its unsure tokens), 'questions' "
        "(questions the rewrite model asks about them) or 'previous' (no draft: a search before every sentence "
        "with the sentence before it, the paper's baseline).",
    )
    flare_sentences: Annotated[int, Field(ge=1, le=40)] = setting(
        8,
        group=ACTIVE,
        request=True,
        help="The most sentences a FLARE answer has; it also ends with the model's reply or the answer's tokens "
        "(max_answer_tokens, long_answer_tokens for long answers).",
    )
    flare_correct: bool = setting(
        True,
        group=ACTIVE,
        request=True,
        help="Grade and refine each FLARE search with CRAG's evaluator (its actions: the web when nothing relevant "
        "is found); off: the documents whole, as the FLARE paper reads them.",
    )

    def __post_init__(self) -> None:
        if self.retry_prompt in ("", "none"):
            self.retry_prompt = "off"
        if isinstance(self.rewrite, bool):  # the setting's values before it had three
            self.rewrite = "model" if self.rewrite else "off"
        if self.web_backend is None:
            self.web_backend = "local" if self.web_index else "none"
        for spec in dataclasses.fields(self):
            value = getattr(self, spec.name)
            if about(spec)["objects"] and not isinstance(value, str | None):
                continue
            setattr(self, spec.name, checked(type(self), spec.name, value))
        if self.retry_prompt in ("off", "none"):  # as the command line, the server and `/set` say it
            self.retry_prompt = None
        self._check_together()

    def _check_together(self) -> None:
        # a setting that also takes an object: a name that is not blank, or an object that can do the work
        for name, able in (
            ("embeddings", "embed_query"),
            ("chat_model", "invoke"),
            ("rewrite_model", "invoke"),
            ("evaluator", "invoke"),
        ):
            value = getattr(self, name)
            if (value is None and name != "embeddings") or hasattr(value, able):
                continue
            if not isinstance(value, str) or not value.strip():
                help_text = (
                    EMBEDDINGS_HELP if name == "embeddings" else CHAT_MODEL_HELP if "model" in name else "a folder"
                )
                raise ValueError(f"{name} must be {help_text}, got {value!r}")
        if not isinstance(self.web_backend, str) and not (
            callable(getattr(self.web_backend, "search", None)) or hasattr(self.web_backend, "invoke")
        ):
            raise ValueError(
                f"unknown web_backend: choose one of {', '.join(typing.get_args(WebBackend))} or an object that searches "
                f"(.search(query, k), a retriever or a tool), got {type(self.web_backend).__name__}"
            )
        if self.retriever is not None and not (
            hasattr(self.retriever, "invoke") or hasattr(self.retriever, "similarity_search")
        ):
            raise ValueError(
                f"retriever must be a LangChain retriever or vector store, got {type(self.retriever).__name__}"
            )
        if self.prompts is not None:  # a name that is no prompt, a variable missing: said now, not mid-run
            # imported only when prompts are replaced: it costs seconds (LangChain's prompts, the English rules)
            from crag.templates import replacements  # noqa: PLC0415

            replacements(self.prompts)
        if self.web_backend == "local" and not self.web_index:
            raise ValueError(
                "the local web backend needs web_index (a JSONL file of {title, text} records); "
                "set it, or CRAG_WEB_INDEX, or choose web_backend 'wikipedia', 'tavily' or 'none'"
            )
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
        """The default of one setting: its environment variable read now, else the built-in value."""
        spec = cls.__dataclass_fields__[name]
        declared = about(spec)
        value = from_env(name, declared["default"]) if declared["env"] else declared["default"]
        return checked(cls, name, value) if isinstance(value, str) else value

    @property
    def answer_tokens(self) -> int:
        """The longest answer the chat model writes in the run's `answer_style`."""
        return self.long_answer_tokens if self.answer_style == "long" else self.max_answer_tokens

    @property
    def rechecks(self) -> bool:
        """Whether the chat model is asked about documents the evaluator rejected all of."""
        return self.recheck_threshold is not None and self.recheck_threshold <= 1.0

    @property
    def has_web(self) -> bool:
        """Whether the Incorrect route has a web to search."""
        return self.web_backend != "none"

    def quote_from(self, calibrated: Thresholds) -> float:
        """The score a strip needs to be quoted: the explicit value, else the evaluator's calibrated upper
        threshold (not the run's pair: a route forced by thresholds must not make every strip quotable)."""
        return calibrated.upper if self.quote_threshold is None else self.quote_threshold

    def thresholds(self, calibrated: Thresholds) -> Thresholds:
        """Explicit values, else the preset, else the evaluator's calibrated pair; ValueError when the result
        conflicts (a lone lower threshold above the upper one it is combined with)."""
        base = PRESETS[self.preset] if self.preset else calibrated
        return base.with_overrides(upper=self.upper_threshold, lower=self.lower_threshold)
