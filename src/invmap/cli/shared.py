"""What every command shares: the run's state (its catalog, colour mode and `Environment`), the
output bundle (`Output`), the filter bundle, and `emit`, the one place output is routed (stdout, a
pager, or stderr for notices)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import typer

from invmap import complete, formats
from invmap import location as catalog_location
from invmap.environment import PAGER_VAR, Environment
from invmap.errors import FileAccessError, UsageError
from invmap.render import Result
from invmap.safe import escape

if TYPE_CHECKING:  # loaded with the catalog; --help and --version never need them
    from invmap.cli.build import Args
    from invmap.index import Index
    from invmap.query import Filters

COLOR_MODES = complete.CHOICES["color"]
TABLE_ROW_CAP = 200  # a terminal table of 100,000 rows takes minutes to draw; say how many are left


# --- global state -----------------------------------------------------------------------------


@dataclass
class State:
    location: catalog_location.Location
    color: str
    pager: bool = True
    env: Environment = field(default_factory=lambda: current())  # the run's
    _index: Index | None = None

    def index(self) -> Index:
        if self._index is None:
            from invmap.index import open_catalog
            from invmap.render.progress import catalog_progress

            self._index = open_catalog(
                self.location, progress=catalog_progress(self.env.stderr, self.env.stderr_isatty)
            )
        return self._index


def state(ctx: typer.Context) -> State:
    obj = ctx.find_root().obj
    if isinstance(obj, State):
        return obj
    return State(catalog_location.locate(None), "auto")  # completion runs without the root callback


# The running command's environment, made once a run by `running` (the root group's `main`).
_RUNNING: ContextVar[Environment | None] = ContextVar("invmap_environment", default=None)


@contextlib.contextmanager
def running(env: Environment | None) -> Iterator[Environment]:
    """One run of the app in `env` (a test's), else in the process's own environment."""
    made = env if env is not None else Environment.of_process()
    token = _RUNNING.set(made)
    try:
        yield made
    finally:
        _RUNNING.reset(token)


def current() -> Environment:
    """The running command's environment; outside a run (an error reported after it), the process's."""
    return _RUNNING.get() or Environment.of_process()


def complete_color(incomplete: str) -> list[tuple[str, str]]:
    return complete.choices(COLOR_MODES, incomplete)


def color_mode(value: str) -> str:
    if value not in COLOR_MODES:
        raise typer.BadParameter(f"'{escape(value)}' is not one of {', '.join(COLOR_MODES)}", param_hint="'--color'")
    return value


# --- the output bundle ------------------------------------------------------------------------


@dataclass
class Output:
    """How one command's result is written: format, fields, colour, pager."""

    fmt: str
    fields: list[str] | None
    color: bool
    pager: bool
    view: str = formats.RECORDS
    links: bool = False  # OSC 8 hyperlinks: colour on and stdout a terminal (never in a pipe)

    @property
    def machine(self) -> bool:
        return self.fmt in formats.MACHINE

    def pick(self, human: Sequence[str], machine: Sequence[str]) -> list[str]:
        """The fields asked for, else the command's defaults for this kind of format."""
        if self.fields is not None:
            return self.fields
        return list(machine if self.machine else human)


def choose_format(fmt: str | None, json_flag: bool, is_terminal: bool, view: str, command: str) -> str:
    """`--json` is `--format json`; with neither, a table on a terminal and plain lines in a pipe."""
    allowed = formats.names_for(view)
    if json_flag:
        if fmt not in (None, "json"):
            raise UsageError(f"--json and --format {fmt} contradict each other: use one of them")
        fmt = "json"
    if fmt is None:
        fmt = "table" if is_terminal else "plain"
    if fmt not in allowed:
        raise UsageError(f"'{command}' cannot print '{fmt}' (its formats: {', '.join(allowed)})")
    return fmt


def parse_fields(value: str | None, allowed: Sequence[str]) -> list[str] | None:
    """`id,name,year` -> ['id', 'name', 'year']; an unknown name is a UsageError with a suggestion."""
    if value is None:
        return None
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise UsageError(f"--fields needs at least one field name (valid fields: {', '.join(allowed)})")
    unknown = [n for n in names if n not in allowed]
    if unknown:
        from invmap.query import did_you_mean

        word = "field" if len(unknown) == 1 else "fields"
        close = did_you_mean(unknown[0], allowed)
        hint = f"; did you mean '{close}'?" if close else ""
        raise UsageError(
            f"unknown {word} {', '.join(repr(n) for n in unknown)}{hint} (valid fields: {', '.join(allowed)})"
        )
    return list(dict.fromkeys(names))


def output(ctx: typer.Context, args: Args) -> Output:
    """The output bundle's values -> one `Output` (format checked against the command's view)."""
    from invmap.options import fields_for

    command = args.command
    color = getattr(args, "color", None)
    run = state(ctx)
    mode = color_mode(color) if color is not None else run.color
    terminal = run.env.stdout_isatty
    chosen = choose_format(
        getattr(args, "fmt", None), getattr(args, "json_flag", False), terminal, command.view, command.path
    )
    color_on = run.env.use_color(mode) and chosen == "table"
    return Output(
        chosen,
        parse_fields(getattr(args, "fields", None), fields_for(command.path)),
        color_on,
        run.pager and not getattr(args, "no_pager", False),
        view=command.view,
        links=color_on and terminal,
    )


def say(message: str) -> None:
    """Lines for a person on stderr, control characters escaped; a closed or broken stderr is ignored
    (it must not change the exit code)."""
    env = current()
    from invmap.safe import message_text

    lines = [message_text(line) for line in message.split("\n")]
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if env.stderr_isatty:  # a person reads it: wrapped at spaces to the width, never inside a word
            import textwrap

            width = max(env.stderr_columns - 1, 20)
            lines = [
                part
                for line in lines
                for part in (
                    textwrap.wrap(line, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
                    if len(line) > width
                    else [line]
                )
            ]
        text = "\n".join(lines) + "\n"
        env.stderr.write(text)
        env.stderr.flush()


def notice(message: str) -> None:
    """A line for a person on stderr (never into the data): only when stderr is a terminal."""
    if current().stderr_isatty:
        say(message)


def emit(out: Output, result: Result, *, show_all: bool = True, excel: bool = False) -> None:
    """Render `result` in the chosen format and send it to stdout; a table on a terminal goes through
    a pager when it is taller than the terminal, and shows at most TABLE_ROW_CAP rows unless `show_all`
    (a table into a pipe or a file always holds every row)."""
    from invmap import render
    from invmap.render.layout import hidden_columns

    env = current()
    context = render.Context(width=env.columns, color=out.color, links=out.links, excel=excel)
    renderer = formats.renderer(out.fmt, out.view)
    if out.fmt != "table":
        for piece in renderer(result, context):
            write(piece)
        return
    if not result.rows and result.draw is None:
        return  # an empty table is only its header: the notice on stderr says why
    terminal = env.stdout_isatty
    capped = terminal and not show_all and result.draw is None and len(result.rows) > TABLE_ROW_CAP
    rows = result.rows[:TABLE_ROW_CAP] if capped else result.rows
    if hasattr(rows, "index") and not isinstance(rows, list):
        rows = list(rows)  # a lazy selection, read once
    shown = replace(result, rows=rows)
    if terminal and out.pager:  # the pager decides on the whole text's height
        page("".join(renderer(shown, context)), True, env.lines)
    else:  # a pipe or a file: written piece by piece, never whole in memory
        for piece in renderer(shown, context):
            write(piece)
    if capped:
        notice(f"{len(result.rows) - len(rows)} more rows; use --all, or a machine format (--format jsonl, csv)")
    if terminal and result.draw is None and rows:
        hidden = hidden_columns(rows, result.fields, env.columns)
        if hidden:  # a column the width left out is said, never dropped silently
            notice(f"{', '.join(hidden)} hidden at {env.columns} columns; --fields to choose")


def help_out(ctx: Any, text: str) -> None:
    """`--help` (and a bare `invmap`): through the pager, as other long output, when stdout is a
    terminal the text is taller than, unless --no-pager (given before or after the command)."""
    root = ctx.find_root()
    obj = root.obj
    off = (isinstance(obj, State) and not obj.pager) or root.params.get("no_pager") or "--no-pager" in sys.argv[1:]
    env = current()
    page(text, env.stdout_isatty and not off, env.lines)


def page(text: str, allowed: bool, height: int) -> None:
    """Through `$INVMAP_PAGER`, else `$PAGER`, else `less` (-FRX), when the text is taller than the
    terminal; an empty INVMAP_PAGER or `cat` means no pager; a pager that cannot start means print,
    and one that fails once started is an error (exit 4)."""
    env = current()
    command = env.pager_command
    if not allowed or not command.strip() or command.strip() == "cat" or text.count("\n") < height:
        write(text)
        return
    import shlex
    import subprocess

    env.stdout.flush()
    import signal

    try:
        pager = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, env=env.pager_variables())
    except (OSError, ValueError):
        write(text)  # no such pager: print directly
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the pager's, as with git
    try:
        # OSError: the reader quit early; what it did not read is not wanted
        with contextlib.suppress(OSError):
            assert pager.stdin is not None
            pager.stdin.write(text.encode(env.stdout.encoding or "utf-8", "backslashreplace"))
            pager.stdin.close()
    finally:
        status = pager.wait()
        signal.signal(signal.SIGINT, previous)
    if status != 0:  # it started but failed (or was killed): the output may not have been seen
        how = f"was killed by signal {-status}" if status < 0 else f"failed with exit status {status}"
        raise FileAccessError(f"the pager ({command}) {how}; pass --no-pager or set {PAGER_VAR}=cat")


def write(text: str) -> None:
    """Data to stdout; characters the stream cannot encode are escaped, never lost or fatal."""
    from invmap.safe import quiet_stdout

    stream = current().stdout
    if stream is None:
        raise FileAccessError("cannot write to stdout: it is closed")

    try:
        try:
            stream.write(text)
        except UnicodeEncodeError:
            encoding = stream.encoding or "ascii"
            stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
        stream.flush()
    except BrokenPipeError:
        quiet_stdout()  # the reader went away (`| head`): what it did not read is not wanted
        raise SystemExit(0) from None
    except (OSError, ValueError) as exc:
        quiet_stdout()
        raise FileAccessError(f"cannot write to stdout: {getattr(exc, 'strerror', None) or exc}") from None


def index(ctx: typer.Context) -> Index:
    return state(ctx).index()


def filters(ctx: typer.Context, args: Args, index: Index | None = None) -> Filters:
    """The filter bundle's values -> one `Filters` (SQL over the index), each value checked."""
    from invmap.query import build_filters

    return build_filters(index or state(ctx).index(), args.filters)


def empty_notice(out: Output, what: Filters | None, hint: str | None = None, prefix: str = "no sources match") -> None:
    """On a terminal, say why nothing printed; in a pipe or a machine format, stay silent."""
    if out.machine or not current().stdout_isatty:
        return
    described = " ".join(what.described) if what and what.described else ""
    notice(f"{prefix} {described}".rstrip() + (f"; {hint}" if hint else ""))
