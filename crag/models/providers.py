"""Hosted and served models named '<provider>:<model>', through LangChain's factories, with the package
and API key checked at setup rather than at the first request."""

from __future__ import annotations

import os
from typing import Any

from langchain_core.messages import BaseMessage

from crag.runtime.extras import require

REQUEST_TIMEOUT = 60.0  # seconds per request to a hosted or served model
# providers with an extra of their own: the LangChain package behind each, imported through `require`
PROVIDER_EXTRAS = {"openai": "langchain_openai", "anthropic": "langchain_anthropic", "ollama": "langchain_ollama"}
PROVIDER_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def split_spec(spec: Any, what: str, help_text: str) -> tuple[str, str]:
    """(provider, model) of '<provider>:<model>', with the provider's package and API key checked."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"{what} must be {help_text}, got {spec!r}")
    provider, _, name = spec.strip().partition(":")
    if not provider or not name:
        raise ValueError(f"unknown {what} {spec!r}: use {help_text}")
    if provider in PROVIDER_EXTRAS:
        require(PROVIDER_EXTRAS[provider], provider)
    key = PROVIDER_KEYS.get(provider)
    if key and not os.environ.get(key):
        raise ValueError(f"{what} {spec!r} needs {key} in the environment")
    return provider, name


def client_limits(provider: str) -> dict[str, Any]:
    """The request timeout and retries in each provider's own words (Ollama's classes ignore `timeout`)."""
    if provider == "ollama":
        return {"client_kwargs": {"timeout": REQUEST_TIMEOUT}}
    return {"timeout": REQUEST_TIMEOUT, "max_retries": 2}


_CUT = {"finish_reason": "length", "stop_reason": "max_tokens", "done_reason": "length"}


def cut_short(message: BaseMessage) -> bool:
    """Whether the reply `message` ran out of tokens."""
    metadata = getattr(message, "response_metadata", None) or {}
    return any(metadata.get(key) == value for key, value in _CUT.items())
