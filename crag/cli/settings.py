"""The command-line options of the settings, one per declaration in `crag.settings`, and chat's `/set`
parsing of them."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any

import typer

from crag.evaluator.checkpoint import EvaluatorError
from crag.graphs import BUILDERS
from crag.models.gguf import ModelFileError
from crag.questions.checks import InvalidQuestion
from crag.search.store import StoreError
from crag.settings import about, annotation, check, env_name, settings
from crag.threads import InvalidThreadId, ThreadsError

Thread = Annotated[str | None, typer.Option(help="Thread id: keep the conversation (follow-up questions) across runs.")]
ThreadsDb = Annotated[
    str | None,
    typer.Option(
        help="Where threads are kept: a SQLite file or a postgresql:// URL (default $CRAG_THREADS_URL, "
        "$CRAG_THREADS_DB or .crag/threads.sqlite)."
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print one JSON object per answer.")]


def _known_system(name: str) -> str:
    if name not in BUILDERS:
        raise typer.BadParameter(f"unknown system {name!r}; choose from {', '.join(BUILDERS)}")
    return name


System = Annotated[
    str,
    typer.Option(
        callback=_known_system,
        help=f"The system that answers: {', '.join(BUILDERS)} (CRAG, or one it is measured against).",
    ),
]

# what a run raises for bad input or an unusable store, model or thread: one error line, not a traceback
RUN_ERRORS = (InvalidQuestion, InvalidThreadId, EvaluatorError, ValueError, StoreError, ThreadsError, ModelFileError)


def on_command_line(spec: dataclasses.Field) -> bool:
    """Every setting but those that only take an object (a retriever)."""
    return annotation(spec.name) is not type(None)


def option(spec: dataclasses.Field) -> str:
    """The setting's option name without dashes: its `flag`, else its own name."""
    return about(spec)["flag"] or spec.name


def option_of(field: str) -> str:
    return option(next(spec for spec in settings() if spec.name == field))


def flag(name: str) -> str:
    """The option as typed on the command line: refine_mode -> --refine-mode."""
    return "--" + name.replace("_", "-")


def _shown(value: Any) -> str:
    return "empty" if value is None else "on" if value is True else "off" if value is False else str(value)


def _parameter(spec: dataclasses.Field) -> inspect.Parameter:
    kind = annotation(spec.name)
    base = typing.get_args(kind)[0] if typing.get_origin(kind) is Annotated else kind
    options = (
        typing.get_args(base) if typing.get_origin(base) is typing.Union or isinstance(base, type(int | None)) else ()
    )
    plain = next((o for o in options if o is not type(None)), base) if options else base
    declared = flag(option(spec))
    if plain is bool:
        declared = f"{declared}/--no-{declared[2:]}"
    declared_as = about(spec)
    env = f"${env_name(spec.name)}, else " if declared_as["env"] else ""
    help_text = f"{declared_as['help']} (default: {env}{_shown(declared_as['default'])})"
    # a type made at run time, for typer (no type a checker can see); an object, or a mapping (a filter), is typed as text: the setting's check reads the name or the JSON
    hint = str if declared_as["objects"] or typing.get_origin(plain) is dict else plain
    typed = Annotated[hint | None, typer.Option(declared, help=help_text, rich_help_panel=declared_as["group"])]  # type: ignore[valid-type]
    return inspect.Parameter(spec.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=typed)


def with_settings(*names: Any) -> Any:
    """Add one option per setting (or per named setting) to a command; it gets those given as `settings`."""
    if len(names) == 1 and callable(names[0]):
        return _with(names[0], ())
    return lambda command: _with(command, names)


def _with(command: Callable[..., Any], names: tuple[str, ...]) -> Callable[..., Any]:
    hints = typing.get_type_hints(command, include_extras=True)  # the command's own, resolved in its module
    own = [
        p.replace(annotation=hints.get(name, p.annotation))
        for name, p in inspect.signature(command).parameters.items()
        if name != "settings"
    ]
    chosen = [spec for spec in settings() if on_command_line(spec) and (not names or spec.name in names)]
    unknown = set(names) - {spec.name for spec in chosen}
    if unknown:
        raise ValueError(f"no such settings: {', '.join(sorted(unknown))}")
    added = [_parameter(spec) for spec in chosen]
    added_names = {p.name for p in added}

    @functools.wraps(command)
    def wrapper(**given: Any) -> Any:
        chosen_values = {name: value for name, value in given.items() if name in added_names and value is not None}
        return command(**{k: v for k, v in given.items() if k not in added_names}, settings=chosen_values)

    wrapper.__signature__ = inspect.Signature([*own, *added])  # type: ignore[attr-defined]
    # typer reads the signature above and these resolved types, not the command's own (text, in its module)
    wrapper.__annotations__ = {p.name: p.annotation for p in [*own, *added]}
    del wrapper.__wrapped__
    return wrapper


def field_of(name: str) -> str:
    """The setting a name in `/set` means: its option (upper, refine-mode) or its own name."""
    key = name.strip().lstrip("-").replace("-", "_")
    for spec in settings():
        if on_command_line(spec) and key in (spec.name, option(spec)):
            return spec.name
    raise ValueError(f"unknown setting {name!r}; /show lists them")


def parse_value(field: str, text: str) -> Any:
    """A value typed as text, as the setting holds it; 'default' (None) unsets it."""
    text = text.strip()
    if text == "default":
        return None
    if not text:
        raise ValueError(f"{field} needs a value (or 'default')")
    return check(field, text)


__all__ = ["RUN_ERRORS", "AsJson", "Thread", "ThreadsDb", "field_of", "flag", "option", "parse_value", "with_settings"]
