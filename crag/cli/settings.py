"""The settings of one question, as `crag ask` and `crag chat` take them: each option declared once here
(both commands list them), the `Context` field each one sets, the errors a run reports as one line, and
how chat's `/set NAME VALUE` reads a value typed as text. The knowledge-base and model options shared
with `serve` and `ingest` are in `common.py`."""

from __future__ import annotations

import math
import typing
from typing import Annotated, Any

import typer

from crag.evaluator.checkpoint import EvaluatorError
from crag.models.gguf import ModelFileError
from crag.questions.checks import InvalidQuestion
from crag.search.store import StoreError
from crag.settings import Context
from crag.threads import InvalidThreadId, ThreadsError

K = Annotated[int | None, typer.Option(min=1, help=f"Documents to retrieve (default {Context.default('k')}).")]
Preset = Annotated[str | None, typer.Option(help="Paper thresholds: popqa, pubhealth, arc, biography.")]
Upper = Annotated[float | None, typer.Option(help="Upper threshold (default: calibrated).")]
Lower = Annotated[float | None, typer.Option(help="Lower threshold (default: calibrated).")]
SearchMode = Annotated[
    str | None,
    typer.Option(
        help="How the knowledge base is searched: hybrid (embeddings and BM25 keywords, fused) or dense "
        f"(embeddings alone) (default {Context.default('search')})."
    ),
]
RefineMode = Annotated[
    str | None, typer.Option(help=f"fixed_num, excerption or selection (default {Context.default('refine_mode')}).")
]
AnswerWithoutKnowledge = Annotated[
    bool | None,
    typer.Option(
        help="With nothing relevant found, answer from the model's memory, marked ungrounded, instead of saying so (default: off)."
    ),
]
QuoteThreshold = Annotated[
    float | None,
    typer.Option(
        help="When the model's answer is unsupported or declines, quote the best "
        "kept passage about the question's subject scoring at least this instead (default: the evaluator's upper "
        "threshold; 2 = never)."
    ),
]
RecheckThreshold = Annotated[
    float | None,
    typer.Option(
        help="When the evaluator rejects every document, the chat model grades each one, and a document it grades "
        f"at least this (-1..1) is kept: the action becomes Ambiguous (default {Context.default('recheck_threshold')}; "
        "2 = never ask)."
    ),
]
Prompt = Annotated[
    str | None,
    typer.Option(
        help="Generation prompt: compact (default), paper (the CRAG paper's) or marked (compact over datamarked passages)."
    ),
]
RetryPrompt = Annotated[
    str | None,
    typer.Option(
        help="When knowledge was found but the model declines or its answer is withheld, and no passage can be "
        "quoted instead, ask once more with this prompt: paper (the default; it offers no way out, and the "
        "grounding check judges its answer) or off."
    ),
]
RewriteMode = Annotated[
    str | None,
    typer.Option(
        "--rewrite",
        help="The web query: keywords (the question's own; default), model (the paper's rewrite by the chat "
        "model) or off (the question as asked).",
    ),
]
RequeryMode = Annotated[
    str | None,
    typer.Option(
        "--requery",
        help="When nothing relevant is found, search the knowledge base again first, with a query (rewrite) or a "
        "passage (hyde) the chat model writes; off: not (default $CRAG_REQUERY or off).",
    ),
]
Thread = Annotated[str | None, typer.Option(help="Thread id: keep the conversation (follow-up questions) across runs.")]
ThreadsDb = Annotated[
    str | None,
    typer.Option(
        help="Where threads are kept: a SQLite file or a postgresql:// URL (default $CRAG_THREADS_URL, "
        "$CRAG_THREADS_DB or .crag/threads.sqlite)."
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print one JSON object per answer.")]

# option (as the commands' parameters are named) -> the Context field it sets
FIELDS = {
    "k": "k",
    "search": "search",
    "preset": "preset",
    "upper": "upper_threshold",
    "lower": "lower_threshold",
    "refine_mode": "refine_mode",
    "chat_model": "chat_model",
    "web_backend": "web_backend",
    "web_index": "web_index",
    "wikipedia_url": "wikipedia_url",
    "searxng_url": "searxng_url",
    "answer_without_knowledge": "answer_without_knowledge",
    "quote_threshold": "quote_threshold",
    "recheck_threshold": "recheck_threshold",
    "prompt": "generate_prompt",
    "retry_prompt": "retry_prompt",
    "rewrite": "rewrite",
    "requery": "requery",
    "chroma_dir": "chroma_dir",
    "chroma_url": "chroma_url",
    "collection": "collection",
    "embeddings": "embeddings",
    "evaluator": "evaluator",
}
OPTION_OF = {field: option for option, field in FIELDS.items()}

# what a run raises for bad input or an unusable store, model or thread: one error line, not a traceback
RUN_ERRORS = (InvalidQuestion, InvalidThreadId, EvaluatorError, ValueError, StoreError, ThreadsError, ModelFileError)


def context_options(parameters: dict[str, Any]) -> dict[str, Any]:
    """The Context fields set by a command's parameters (its `locals()`): the given options only, so that
    Context fills in its defaults (and environment variables) for the rest."""
    return {FIELDS[name]: value for name, value in parameters.items() if name in FIELDS and value is not None}


def flag(option: str) -> str:
    """The option as typed on the command line: refine_mode -> --refine-mode."""
    return "--" + option.replace("_", "-")


def field_of(name: str) -> str:
    """The Context field that a name in `/set` means: an option (upper, refine-mode) or the field itself."""
    key = name.strip().lstrip("-").replace("-", "_")
    if key in FIELDS:
        return FIELDS[key]
    if key in OPTION_OF:
        return key
    raise ValueError(f"unknown setting {name!r}; settings: {', '.join(FIELDS)}")


def parse_value(field: str, text: str) -> Any:
    """A value typed as text, converted to what the Context field holds; 'default' (None) unsets it."""
    text = text.strip()
    if text == "default":
        return None
    kinds = typing.get_args(typing.get_type_hints(Context)[field]) or (typing.get_type_hints(Context)[field],)
    if bool in kinds:
        if text.lower() not in ("on", "true", "yes", "1", "off", "false", "no", "0"):
            raise ValueError(f"{OPTION_OF[field]} is on or off, not {text!r}")
        return text.lower() in ("on", "true", "yes", "1")
    if int in kinds:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{OPTION_OF[field]} is a whole number, not {text!r}") from None
    if float in kinds:
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise ValueError(f"{OPTION_OF[field]} is a number, not {text!r}")
        return number
    if not text:
        raise ValueError(f"{OPTION_OF[field]} needs a value (or 'default')")
    return text
