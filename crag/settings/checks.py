"""A setting's type as text gives it, and a value checked against it with a message in crag's words, for the
settings class `cls` (`Context`, which checks its own values with them; `crag.settings` binds them to it)."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import ErrorDetails


def settings_of(cls: type) -> list[dataclasses.Field]:
    """Every setting, in declaration order."""
    return list(dataclasses.fields(cls))


@functools.cache
def annotation_of(cls: type, name: str) -> Any:
    """A setting's type as text gives it (the command line, a request, `CRAG_<NAME>`), ranges included
    (`Annotated[int, Field(ge=1)]`): without the ready objects it also takes (`SkipJsonSchema[...]`);
    `NoneType` for one that only takes an object (`retriever`)."""
    kind = typing.get_type_hints(cls, include_extras=True)[name]
    if typing.get_origin(kind) not in (typing.Union, types.UnionType):
        return kind
    named = [a for a in typing.get_args(kind) if not _an_object(a)]
    if len(named) == len(typing.get_args(kind)):
        return kind
    return named[0] if len(named) == 1 else typing.Union[tuple(named)]  # noqa: UP007 (a union made at run time)


def _an_object(kind: Any) -> bool:
    """Whether a member of a setting's union is a ready object (`SkipJsonSchema[...]`)."""
    if typing.get_origin(kind) is not Annotated:
        return False
    # SkipJsonSchema is a class at run time, an alias of Annotated to a type checker
    return any(isinstance(m, SkipJsonSchema) for m in kind.__metadata__)  # type: ignore[misc]


@functools.cache
def _adapter(cls: type, name: str) -> TypeAdapter:
    return TypeAdapter(annotation_of(cls, name))


def checked(cls: type, name: str, value: Any) -> Any:
    """`value` as setting `name` holds it (text converted: "12" for a number), or a ValueError that names
    the setting and says what it takes."""
    try:
        return _adapter(cls, name).validate_python(value)
    except ValidationError as exc:
        raise ValueError(_said(cls, name, value, exc.errors()[0])) from None


def _said(cls: type, name: str, value: Any, problem: ErrorDetails) -> str:
    """pydantic's complaint in the words crag's messages use."""
    kind, limits = problem["type"], problem.get("ctx", {})
    if kind == "value_error":  # a validator's own message (`check_filter`) already names the setting
        return str(limits.get("error") or problem["msg"])
    if kind == "literal_error":
        choices = [a for a in typing.get_args(_plain(annotation_of(cls, name))) if isinstance(a, str)]
        return f"unknown {name} {value!r}; choose {' or '.join(choices)}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = {
            "greater_than_equal": "at least",
            "greater_than": "more than",
            "less_than_equal": "at most",
            "less_than": "less than",
        }
        limit = next(iter(limits.values()))
        return f"{name} must be {bound[kind]} {limit}, got {value!r}"
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return f"{name} is a whole number, not {value!r}"
    if kind in ("float_parsing", "finite_number", "float_type"):
        return f"{name} must be a number, not {value!r}"
    if kind in ("bool_parsing", "bool_type"):
        return f"{name} is on or off, not {value!r}"
    return f"{name}: {problem['msg'].lower()}, got {value!r}"


def _plain(kind: Any) -> Any:
    """A type without its `Annotated` ranges and its `| None`: the Literal of a choice setting."""
    if typing.get_origin(kind) is Annotated:
        kind = typing.get_args(kind)[0]
    options = (
        [a for a in typing.get_args(kind) if a is not type(None)]
        if typing.get_origin(kind) in (typing.Union, types.UnionType)
        else []
    )
    return options[0] if len(options) == 1 else kind
