"""`crag chat`: question after question with the models loaded once, on one thread so follow-ups work;
`/` commands change the settings."""

from __future__ import annotations

import contextlib
import dataclasses
import shlex
import sys
import time
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

import typer

from crag import resources
from crag.cli.common import error_line, fail, quiet_transformers
from crag.cli.render import print_details, print_grounding, show, stream_run
from crag.cli.settings import (
    RUN_ERRORS,
    AsJson,
    System,
    Thread,
    ThreadsDb,
    field_of,
    on_command_line,
    option_of,
    parse_value,
    with_settings,
)
from crag.runtime.extras import MissingExtra
from crag.settings import Context
from crag.settings import settings as declared_settings
from crag.threads import check_thread_id, memory_graph, redacted, thread_config, thread_turn, threaded_graph
from crag.threads import threads_location as resolve_threads_db

PROMPT = "crag> "
# settings that name a model, a store or the web index: changing one loads it before the next question
LOADED = {"evaluator", "chat_model", "chroma_dir", "chroma_url", "collection", "embeddings", "web_backend", "web_index"}
HELP = """\
Ask a question, or type a command:
  /set NAME VALUE   change a setting for the next questions (VALUE 'default' unsets it); /show lists them
  /show             the settings, the thread and the view
  /new [ID]         start a new conversation thread (follow-ups no longer refer to the earlier turns)
  /verbose          after each answer, also show the action, every document's score and the knowledge
  /json             print each run as one JSON object instead (as crag ask --json); again to stop
  /help             this text
  /quit             leave (so do Ctrl-D and Ctrl-C at the prompt; Ctrl-C during an answer drops that answer)"""


@dataclasses.dataclass(frozen=True)
class Command:
    name: str
    args: list[str]


COMMANDS: dict[str, int | tuple[int, ...]] = {
    "help": 0,
    "set": 2,
    "show": 0,
    "new": (0, 1),
    "verbose": 0,
    "json": 0,
    "quit": 0,
    "exit": 0,
}


def parse_command(line: str) -> Command | None:
    """A `/` command as typed, or None for a question; ValueError for an unknown command or wrong arguments.
    `/set`'s VALUE is the rest of the line (a path may hold spaces)."""
    line = line.strip()
    if not line.startswith("/"):
        return None
    name, _, rest = line[1:].partition(" ")
    name, rest = name.lower(), rest.strip()
    if name not in COMMANDS:
        raise ValueError(f"unknown command /{name}; /help lists the commands")
    if name == "set":
        setting, _, value = rest.partition(" ")
        if not setting or not value.strip():
            raise ValueError("usage: /set NAME VALUE (e.g. /set k 5; /set upper default); /show lists the settings")
        value = value.strip()
        with contextlib.suppress(ValueError):  # an unbalanced quote: the value as typed
            value = " ".join(shlex.split(value)) if value[0] in "'\"" else value
        return Command(name, [setting, value])
    args = rest.split()
    arity = COMMANDS[name]
    counts = arity if isinstance(arity, tuple) else (arity,)
    if len(args) not in counts:
        raise ValueError(f"/{name} takes {' or '.join(map(str, counts))} argument(s); /help lists the commands")
    return Command(name, args)


class ChatSession:
    """One chat: its settings, its thread, its view, and what the `/` commands do to them."""

    def __init__(self, options: dict[str, Any], graph: Any, thread_id: str, threads_db: Any = None):
        self.options = dict(options)  # the Context fields the user set; Context fills in the rest
        self.context = Context(**self.options)
        self.graph, self.thread_id, self.threads_db = graph, thread_id, threads_db
        self.verbose = self.json = False

    def warm_up(self, context: Context) -> float:
        """Load `context`'s models and store now; the seconds it took."""
        started = time.perf_counter()
        resources.warm_up(context)
        return time.perf_counter() - started

    def handle(self, line: str) -> bool:
        """Answer a question or carry out a command; False when the chat should end."""
        command = parse_command(line)
        if command is None:
            if line.strip():
                self.ask(line.strip())
            return True
        if command.name in ("quit", "exit"):
            return False
        {
            "help": lambda: typer.echo(HELP),
            "set": lambda: self.set(*command.args),
            "show": self.show,
            "new": lambda: self.new(*command.args),
            "verbose": lambda: self.toggle("verbose"),
            "json": lambda: self.toggle("json"),
        }[command.name]()
        return True

    def set(self, name: str, text: str) -> None:
        """Change one setting; on any error keep the old value and the models already loaded."""
        field = field_of(name)
        value = parse_value(field, text)
        options = {k: v for k, v in self.options.items() if k != field}
        if value is not None:
            options[field] = value
        context = Context(**options)  # Context checks names, ranges and combinations
        if field in LOADED:
            typer.secho(f"loading for {option_of(field)} ...", dim=True, err=True)
            self.warm_up(context)
        resources.thresholds(context, resources.evaluator(context))  # a lone threshold against the calibrated pair
        self.options, self.context = options, context
        typer.echo(f"{option_of(field)} = {self._value(field)}")

    def _value(self, field: str) -> str:
        """A setting as /show prints it: the value given, or the default in effect."""
        value = getattr(self.context, field)
        if field in ("upper_threshold", "lower_threshold") and value is None:
            pair = resources.thresholds(self.context, resources.evaluator(self.context))
            source = f"{self.context.preset} preset" if self.context.preset else "calibrated"
            return f"{pair.upper if field == 'upper_threshold' else pair.lower:+.3f} ({source})"
        if field == "evaluator" and value is None:
            shown = "shipped"
        elif isinstance(value, bool) or value is None:
            shown = {True: "on", False: "off", None: "-"}[value]
        else:  # an object given in code (an app's or a test's model) by its type
            shown = str(value) if isinstance(value, str | int | float) else f"a {type(value).__name__}"
        return shown if field in self.options else f"{shown} (default)"

    def show(self) -> None:
        for spec in declared_settings():
            if on_command_line(spec):
                typer.echo(f"  {option_of(spec.name):<25} {self._value(spec.name)}")
        where = f"in {redacted(str(self.threads_db))}" if self.threads_db else "in memory, until the chat ends"
        typer.echo(f"  {'thread':<25} {self.thread_id} ({where})")
        view = "json" if self.json else "streamed, with details" if self.verbose else "streamed"
        typer.echo(f"  {'view':<25} {view}")

    def new(self, thread_id: str | None = None) -> None:
        self.thread_id = check_thread_id(thread_id) if thread_id else new_thread_id()
        resume = f": go on with it later with --thread {self.thread_id}" if self.threads_db else ""
        typer.echo(f"new thread {self.thread_id}{resume}")

    def toggle(self, view: str) -> None:
        setattr(self, view, not getattr(self, view))
        typer.echo(f"{view} {'on' if getattr(self, view) else 'off'}")

    def ask(self, question: str) -> dict[str, Any]:
        """One turn on the thread, shown in the session's view; the run's state."""
        started = time.perf_counter()
        config = thread_config(self.thread_id)
        with self._turn():
            if self.json:
                result = self.graph.invoke({"question": question}, config=config, context=self.context)
            else:
                result = stream_run(self.graph, question, self.context, config)
        if self.json:
            show(result, "json")
        else:
            if self.verbose:
                print_details(result)
            print_grounding(result, replacement_shown=True)
        typer.secho(f"({time.perf_counter() - started:.1f} s)", dim=True, err=True)
        return result

    def _turn(self):
        if self.threads_db is None:
            return contextlib.nullcontext()
        return thread_turn(
            self.thread_id,
            self.threads_db,
            on_wait=lambda: typer.secho(
                f"waiting for another turn on thread {self.thread_id!r} to finish ...", fg=typer.colors.YELLOW, err=True
            ),
        )


def new_thread_id() -> str:
    return datetime.now().strftime("chat-%Y%m%d-%H%M%S-%f")


def run_chat(session: ChatSession, read: Callable[[str], str]) -> None:
    """The prompt loop: `read` is `input`, or a test's input lines."""
    while True:
        try:
            line = read(PROMPT)
        except (EOFError, KeyboardInterrupt):  # Ctrl-D or Ctrl-C at the prompt: leave cleanly
            typer.echo()
            return
        try:
            if not session.handle(line):
                return
        except KeyboardInterrupt:  # Ctrl-C during an answer: drop it, keep the chat
            typer.echo()
            typer.secho("interrupted: that answer was dropped", fg=typer.colors.YELLOW, err=True)
        except (*RUN_ERRORS, MissingExtra) as exc:
            error_line(str(exc))


@with_settings
def chat_cmd(
    as_json: AsJson = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", help="After each answer, also show the action, the scores and the knowledge.")
    ] = False,
    thread: Thread = None,
    threads_db: ThreadsDb = None,
    system: System = "crag",
    *,
    settings: dict[str, Any],
) -> None:
    """Ask questions one after another with the models loaded once, on one conversation thread.

    Takes crag ask's options; /set changes them between questions, /help lists the commands. Without
    --thread the conversation is kept in memory; with it, in the threads database, to resume later.
    """
    quiet_transformers()
    with contextlib.suppress(ImportError):  # readline (line editing for input()) is missing on Windows
        import readline  # noqa: F401, PLC0415  (its effect on input(); here, so other commands never set it up)
    with contextlib.ExitStack() as stack:
        try:
            if thread is not None:
                check_thread_id(thread)
                db = resolve_threads_db(threads_db)
                graph = stack.enter_context(threaded_graph(db, system))
            else:
                db, graph = None, memory_graph(system)
            session = ChatSession(settings, graph, thread or new_thread_id(), db)
            typer.secho("loading the models (once for this chat) ...", dim=True, err=True)
            seconds = session.warm_up(session.context)
        except (*RUN_ERRORS, MissingExtra) as exc:
            fail(str(exc))
        session.json, session.verbose = as_json, verbose
        typer.secho(
            f"ready in {seconds:.1f} s; thread {session.thread_id}. Ask a question; /help lists the commands.", err=True
        )
        # the prompt only at a terminal: piped in, the output is the answers alone (e.g. one JSON line each)
        run_chat(session, input if sys.stdin.isatty() else lambda prompt: input())
