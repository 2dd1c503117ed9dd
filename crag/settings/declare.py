"""How a setting is declared (`setting()`: a dataclass field whose metadata holds its help, group, whether a
request may set it, its flag, whether it takes objects, and its environment variable) and read back (`about`)."""

from __future__ import annotations

import dataclasses
import functools
import os
import types
from dataclasses import field
from typing import Any

# The groups, in the order `--help` and the configuration page show them: what a user changes first, first
DOCUMENTS, MODELS, WEB, ANSWER, GRADE, KNOWLEDGE, ACTIVE = (
    "Your documents",
    "Models",
    "The web",
    "The answer",
    "The grade",
    "Refinement",
    "Active retrieval (FLARE)",
)
GROUPS = (DOCUMENTS, MODELS, WEB, ANSWER, GRADE, KNOWLEDGE, ACTIVE)


def setting(
    default: Any = None,
    *,
    help: str,
    group: str,
    request: bool = False,
    flag: str | None = None,
    objects: bool = False,
    env: bool = True,
) -> Any:
    """A `Context` field. `request`: a server request may set it (nothing that names a file, a URL or a
    model may be); `flag`: its command-line option when not `--name`; `objects`: it also takes a ready
    object (a model, a store, a search), which is then passed through unchecked; `env`: it can come from
    `CRAG_<NAME>` (read when the `Context` is made)."""
    # pydantic (LangGraph Studio's schema, a model holding a Context) reads a field's metadata as `Field` arguments:
    # the help is its description, the rest rides along as JSON schema extras
    extra = {"group": group, "request": request, "flag": flag, "objects": objects, "env": env}
    return field(default=default, metadata={"description": help, "json_schema_extra": extra})


def about(spec: dataclasses.Field) -> dict[str, Any]:
    """What `setting()` declared of a field: help, group, request, flag, objects, env and its built-in default."""
    return {"help": spec.metadata["description"], **spec.metadata["json_schema_extra"]}


def env_name(name: str) -> str:
    return f"CRAG_{name.upper()}"


def from_env(name: str, default: Any) -> Any:
    """The setting's value from `CRAG_<NAME>` (text, checked with the rest in `Context.__post_init__`), else
    its default."""
    text = os.environ.get(env_name(name), "").strip()
    return text if text else default


def read_environment(cls: type) -> type:
    """Each setting that may come from the environment gets a default factory reading `CRAG_<NAME>` when a
    `Context` is made; its built-in default stays in its metadata (`default_of`)."""
    for name, spec in list(vars(cls).items()):
        if isinstance(spec, dataclasses.Field):
            extra = {**spec.metadata["json_schema_extra"], "default": spec.default}
            spec.metadata = types.MappingProxyType({**spec.metadata, "json_schema_extra": extra})
            if extra["env"]:
                spec.default_factory = functools.partial(from_env, name, spec.default)
                spec.default = dataclasses.MISSING
    return cls
