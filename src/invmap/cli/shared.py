"""What every command shares: the run's state, completion callbacks, options, and `emit`, the one
place output is routed (stdout, a pager, or stderr for notices)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from invmap import complete
from invmap import location as catalog_io
from invmap.errors import WriteError
from invmap.fields import FIELD_HELP, SCORED_FIELDS, SOURCE_FIELDS
from invmap.render import MACHINE_FORMATS, Result, formats_of
from invmap.safe import escape

if TYPE_CHECKING:  # loaded with the catalog; --help and --version never need them
    from invmap.index import Index
    from invmap.query import Filters

COLOR_MODES = ("auto", "always", "never")
TABLE_ROW_CAP = 200  # a terminal table of 100,000 rows takes minutes to draw; say how many are left
PAGER_VAR = "INVMAP_PAGER"


# --- global state -----------------------------------------------------------------------------


@dataclass
class State:
    location: catalog_io.Location
    color: str
    pager: bool = True
    _index: Index | None = None

    def index(self) -> Index:
        if self._index is None:
            from invmap.index import open_catalog

            self._index = open_catalog(self.location)
        return self._index


def state(ctx: typer.Context) -> State:
    obj = ctx.find_root().obj
    if isinstance(obj, State):
        return obj
    return State(catalog_io.locate(None), "auto")  # completion runs without the root callback


def _completion_index(ctx: typer.Context, kind: str, incomplete: str) -> complete.Index | None:
    """What completion needs, from the catalog's index; `--catalog` may already be on the command line."""
    from invmap.index import open_catalog

    root = ctx.find_root()
    try:
        location = catalog_io.locate(root.params.get("catalog"))
        # A TAB never waits on stdin, a FIFO or a device (`-c /dev/zero`): regular files only.
        if not os.path.isfile(location.path) or os.path.getsize(location.path) > catalog_io.max_size():
            return None
        return complete.from_index(open_catalog(location), kind, incomplete)
    except Exception:
        return None  # a broken catalog completes nothing rather than printing errors into the prompt


def complete_source(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    index = _completion_index(ctx, "source", incomplete)
    return complete.sources(index, incomplete) if index else []


def complete_layer(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    index = _completion_index(ctx, "layer", incomplete)
    return complete.layers(index, incomplete) if index else []


def complete_type(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    index = _completion_index(ctx, "type", incomplete)
    return complete.types(index, incomplete) if index else []


def complete_color(incomplete: str) -> list[tuple[str, str]]:
    return complete.choices(COLOR_MODES, incomplete)


def complete_sort(incomplete: str) -> list[tuple[str, str]]:
    from invmap.query import SORT_KEYS

    return complete.choices(SORT_KEYS, incomplete)


def complete_search_in(incomplete: str) -> list[tuple[str, str]]:
    from invmap.query import SEARCH_FIELDS

    return complete.choices(SEARCH_FIELDS, incomplete)


def complete_fields(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    allowed = SCORED_FIELDS if ctx.info_name in ("search", "related") else SOURCE_FIELDS
    return complete.fields(allowed, incomplete, FIELD_HELP)


def color_mode(value: str) -> str:
    if value not in COLOR_MODES:
        raise typer.BadParameter(f"'{escape(value)}' is not one of {', '.join(COLOR_MODES)}", param_hint="'--color'")
    return value


def at_least_one(value: int | None) -> int | None:
    if value is not None and value < 1:
        raise typer.BadParameter(f"must be at least 1, not {value}")
    return value


# --- shared options ---------------------------------------------------------------------------

LayerOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--layer",
        "-l",
        metavar="LAYER",
        autocompletion=complete_layer,
        help="A level code (L1..L6, P0), words of a level's title or scope (disaggregation), or part "
        "of a layer label. Repeat or use commas to OR.",
    ),
]
TypeOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--type",
        "-t",
        metavar="TYPE",
        autocompletion=complete_type,
        help="Direction/type, any case (Current, Foundational, ...). Repeat or use commas to OR.",
    ),
]
YearOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--year", "-y", metavar="YEARS", help="2024, 2023..2025, 2025.., ..2017 or n.d. Repeat or use commas to OR."
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Same as --format json.")]
FieldsOpt = Annotated[
    Optional[str],
    typer.Option(
        "--fields",
        metavar="F1,F2",
        autocompletion=complete_fields,
        help="Only these fields, in this order (see 'invmap fields').",
    ),
]
ColorOpt = Annotated[
    Optional[str],
    typer.Option("--color", metavar="WHEN", autocompletion=complete_color, help="Colour: auto, always or never."),
]
NoPagerOpt = Annotated[bool, typer.Option("--no-pager", help="Never send output through a pager.")]
SortOpt = Annotated[
    Optional[str],
    typer.Option(
        "--sort",
        "-s",
        metavar="KEY",
        autocompletion=complete_sort,
        help="Sort by year, name, id, layer or type; undated sources sort last.",
    ),
]
ReverseOpt = Annotated[bool, typer.Option("--reverse", "-r", help="Reverse the order.")]
LimitOpt = Annotated[
    Optional[int],
    typer.Option("--limit", "-n", metavar="N", callback=at_least_one, help="At most N results (at least 1)."),
]
AllOpt = Annotated[bool, typer.Option("--all", help=f"Tables: show every row (default: first {TABLE_ROW_CAP}).")]
NamesArg = Annotated[
    list[str],
    typer.Argument(
        metavar="NAME...",
        autocompletion=complete_source,
        help="Id, name, Source text, title, arXiv id, DOI or link; case, spacing and small typos are forgiven.",
    ),
]
SourceArg = Annotated[
    str,
    typer.Argument(
        metavar="NAME",
        autocompletion=complete_source,
        help="Id, name, Source text, title, arXiv id, DOI or link; case, spacing and small typos are forgiven.",
    ),
]


def format_opt(command: str | None = None) -> Any:
    """`--format` listing only the formats `command` supports (`render.COMMAND_FORMATS`)."""
    formats = formats_of(command)
    return Annotated[
        Optional[str],
        typer.Option(
            "--format",
            "-f",
            metavar="FORMAT",
            autocompletion=lambda incomplete: complete.choices(formats, incomplete),
            help=f"One of: {', '.join(formats)}. Default: table on a terminal, plain in a pipe.",
        ),
    ]


FormatOpt = format_opt()


# --- output -----------------------------------------------------------------------------------


@dataclass
class Output:
    """How one command's result is written: format, fields, colour, pager."""

    fmt: str
    fields: list[str] | None
    color: bool
    pager: bool
    links: bool = False  # OSC 8 hyperlinks: colour on and stdout a terminal (never in a pipe)

    def pick(self, human: Sequence[str], machine: Sequence[str]) -> list[str]:
        """The fields asked for, else the command's defaults for this kind of format."""
        if self.fields is not None:
            return self.fields
        return list(machine if self.fmt in MACHINE_FORMATS else human)


def output(
    ctx: typer.Context,
    fmt: str | None,
    json_flag: bool,
    fields: str | None,
    color: str | None,
    allowed: Sequence[str] = SOURCE_FIELDS,
    no_pager: bool = False,
) -> Output:
    from invmap.render import choose_format, parse_fields

    mode = color_mode(color) if color is not None else state(ctx).color
    terminal = stdout_is_terminal()
    chosen = choose_format(fmt, json_flag, terminal, formats_of(ctx.info_name), f"'{ctx.info_name}'")
    color_on = use_color(mode, terminal) and chosen == "table"
    return Output(
        chosen, parse_fields(fields, allowed), color_on, state(ctx).pager and not no_pager, links=color_on and terminal
    )


def stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (ValueError, AttributeError):
        return False


def use_color(mode: str, is_terminal: bool) -> bool:
    """auto: colour only on a terminal, and never with NO_COLOR set (non-empty) or TERM=dumb.
    always: colour even in a pipe. Never with NO_COLOR or TERM=dumb in auto mode."""
    if mode == "never":
        return False
    if mode == "always":
        return True
    return is_terminal and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def terminal_size() -> os.terminal_size:
    return shutil.get_terminal_size((80, 24))


def to_text(renderable: Any, width: int, color: bool) -> str:
    """A rich renderable as text `width` wide; escape sequences only when colour is on."""
    import io

    from rich.console import Console

    buffer = io.StringIO()
    screen = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        color_system="truecolor" if color else None,
        legacy_windows=False,
        emoji=False,
        markup=False,
    )
    screen.print(renderable, crop=False, overflow="ignore")
    out = buffer.getvalue()
    if not color:
        out = "\n".join(line.rstrip() for line in out.split("\n"))
    return out


def say(message: str) -> None:
    """Lines for a person on stderr, control characters escaped; a closed or broken stderr is ignored
    (it must not change the exit code)."""
    text = "\n".join(escape(line) for line in message.split("\n")) + "\n"
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(text)
        sys.stderr.flush()


def notice(message: str) -> None:
    """A line for a person on stderr (never into the data): only when stderr is a terminal."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if sys.stderr.isatty():
            say(message)


def emit(out: Output, result: Result, *, show_all: bool = True, excel: bool = False) -> None:
    """Render `result` in the chosen format and send it to stdout, through a pager when it is taller
    than the terminal."""
    from invmap import render

    if out.fmt != "table":
        for piece in render.pieces(result, out.fmt, excel=excel):
            write(piece)
        return
    if not result.rows and result.draw is None:
        return  # an empty table is only its header: the notice on stderr says why
    size = terminal_size()
    rows = list(result.rows if show_all or result.draw else result.rows[:TABLE_ROW_CAP])  # read once
    if result.draw is not None:
        drawing = result.draw(size.columns, out.color)
    else:
        drawing = render.records_table(rows, result.fields, size.columns, out.color, out.links)
    text = drawing if isinstance(drawing, str) else to_text(drawing, size.columns, out.color)
    page(text, out.pager and stdout_is_terminal(), size.lines)
    if len(result.rows) > len(rows):
        notice(f"{len(result.rows) - len(rows)} more rows; use --all, or a machine format (--format jsonl, csv)")


def page(text: str, allowed: bool, height: int) -> None:
    """Through `$INVMAP_PAGER`, else `$PAGER`, else `less` (-FRX), when the text is taller than the
    terminal; an empty INVMAP_PAGER or `cat` means no pager; a pager that fails means print."""
    command = os.environ.get(PAGER_VAR)
    if command is None:
        command = os.environ.get("PAGER") or "less"
    if not allowed or not command.strip() or command.strip() == "cat" or text.count("\n") < height:
        write(text)
        return
    import shlex
    import subprocess

    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    sys.stdout.flush()
    import signal

    try:
        pager = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, env=env)
    except (OSError, ValueError):
        write(text)  # no such pager: print directly
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the pager's, as with git
    try:
        # OSError: the reader quit early; what it did not read is not wanted
        with contextlib.suppress(OSError):
            assert pager.stdin is not None
            pager.stdin.write(text.encode(sys.stdout.encoding or "utf-8", "backslashreplace"))
            pager.stdin.close()
    finally:
        pager.wait()
        signal.signal(signal.SIGINT, previous)


def write(text: str) -> None:
    """Data to stdout; characters the stream cannot encode are escaped, never lost or fatal."""
    from invmap.safe import quiet_stdout

    stream = sys.stdout
    if stream is None:
        raise WriteError("cannot write to stdout: it is closed")

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
        raise WriteError(f"cannot write to stdout: {getattr(exc, 'strerror', None) or exc}") from None


def index(ctx: typer.Context) -> Index:
    return state(ctx).index()


def filters(ctx: typer.Context, layer: list[str] | None, type_: list[str] | None, year: list[str] | None) -> Filters:
    from invmap.query import build_filters

    return build_filters(index(ctx), layer, type_, year)


def empty_notice(out: Output, what: Filters | None, hint: str | None = None, prefix: str = "no sources match") -> None:
    """On a terminal, say why nothing printed; in a pipe or a machine format, stay silent."""
    if out.fmt in MACHINE_FORMATS or not stdout_is_terminal():
        return
    described = " ".join(what.described) if what and what.described else ""
    notice(f"{prefix} {described}".rstrip() + (f"; {hint}" if hint else ""))
