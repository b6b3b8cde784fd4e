"""What every command shares: the run's state, completion callbacks, options, and output routing.

Renderers return text or rich tables; only these helpers write, data to stdout.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from invmap import catalog as catalog_io
from invmap import complete, query
from invmap.errors import InvmapError
from invmap.render import FORMATS, MACHINE_FORMATS
from invmap.vocabulary import FIELD_HELP, SCORED_FIELDS, SOURCE_FIELDS

if TYPE_CHECKING:  # the models load with the catalog; --help and --version never need them
    from invmap.model import Catalog, Source

COLOR_MODES = ("auto", "always", "never")
TABLE_ROW_CAP = 200  # a terminal table of 100,000 rows takes minutes to draw; say how many are left


# --- global state -----------------------------------------------------------------------------


@dataclass
class State:
    location: catalog_io.Location
    color: str
    _catalog: Catalog | None = None

    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = catalog_io.load(self.location)
        return self._catalog


def state(ctx: typer.Context) -> State:
    obj = ctx.find_root().obj
    if isinstance(obj, State):
        return obj
    return State(catalog_io.locate(None), "auto")  # completion runs without the root callback


def _completion_catalog(ctx: typer.Context) -> Catalog | None:
    """The catalog for completion: `--catalog` may already be on the command line."""
    root = ctx.find_root()
    try:
        return catalog_io.load(catalog_io.locate(root.params.get("catalog")))
    except InvmapError:
        return None  # a broken catalog completes nothing rather than printing errors into the prompt


def _index(ctx: typer.Context) -> complete.Index | None:
    cat = _completion_catalog(ctx)
    if cat is None:
        return None
    return complete.build_index(((s.id, s.name, s.type) for s in cat.sources), dict(cat.layers))


def complete_source(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    index = _index(ctx)
    return complete.sources(index, incomplete) if index else []


def complete_layer(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    index = _index(ctx)
    return complete.layers(index, incomplete) if index else []


def complete_type(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    index = _index(ctx)
    return complete.types(index, incomplete) if index else []


def complete_format(incomplete: str) -> list[tuple[str, str]]:
    return complete.choices(FORMATS, incomplete)


def complete_color(incomplete: str) -> list[tuple[str, str]]:
    return complete.choices(COLOR_MODES, incomplete)


def complete_sort(incomplete: str) -> list[tuple[str, str]]:
    return complete.choices(query.SORT_KEYS, incomplete)


def complete_search_in(incomplete: str) -> list[tuple[str, str]]:
    return complete.choices(query.SEARCH_FIELDS, incomplete)


def complete_fields(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    allowed = SCORED_FIELDS if ctx.info_name in ("search", "related") else SOURCE_FIELDS
    return complete.fields(allowed, incomplete, FIELD_HELP)


def color_mode(value: str) -> str:
    if value not in COLOR_MODES:
        raise typer.BadParameter(f"'{value}' is not one of {', '.join(COLOR_MODES)}", param_hint="'--color'")
    return value


# --- shared options ---------------------------------------------------------------------------

LayerOpt = Annotated[
    Optional[list[str]],
    typer.Option("--layer", "-l", metavar="CODE|LABEL", autocompletion=complete_layer,
                 help="Layer code (L1..L6, P0; matches every label covering it) or part of a label. Repeat to OR."),
]  # fmt: skip
TypeOpt = Annotated[
    Optional[list[str]],
    typer.Option("--type", "-t", metavar="TYPE", autocompletion=complete_type,
                 help="Direction/type, any case (Current, Foundational, ...). Repeat to OR."),
]  # fmt: skip
YearOpt = Annotated[
    Optional[list[str]],
    typer.Option("--year", "-y", metavar="YEARS", help="2024, 2023..2025, 2025.., ..2017 or n.d. Repeat to OR."),
]
FormatOpt = Annotated[
    Optional[str],
    typer.Option("--format", "-f", metavar="FORMAT", autocompletion=complete_format,
                 help=f"Output format: {', '.join(FORMATS)}. Default: table on a terminal, plain in a pipe."),
]  # fmt: skip
JsonOpt = Annotated[bool, typer.Option("--json", help="Same as --format json.")]
FieldsOpt = Annotated[
    Optional[str],
    typer.Option("--fields", metavar="F1,F2", autocompletion=complete_fields,
                 help="Only these fields, in this order (see 'invmap fields')."),
]  # fmt: skip
ColorOpt = Annotated[
    Optional[str],
    typer.Option("--color", metavar="WHEN", autocompletion=complete_color, help="Colour: auto, always or never."),
]
SortOpt = Annotated[
    Optional[str],
    typer.Option("--sort", "-s", metavar="KEY", autocompletion=complete_sort,
                 help=f"Sort by {', '.join(query.SORT_KEYS)}; undated sources sort last."),
]  # fmt: skip
ReverseOpt = Annotated[bool, typer.Option("--reverse", "-r", help="Reverse the order.")]
LimitOpt = Annotated[Optional[int], typer.Option("--limit", "-n", min=1, help="At most N results.")]
AllOpt = Annotated[bool, typer.Option("--all", help=f"Tables: show every row (default: first {TABLE_ROW_CAP}).")]
SourceArg = Annotated[
    str, typer.Argument(metavar="NAME", autocompletion=complete_source,
                        help="Id, name, Source text, arXiv id or DOI; case, spacing and small typos are forgiven.")
]  # fmt: skip


# --- output -----------------------------------------------------------------------------------


@dataclass
class Output:
    """How one command's result is written: format, fields, colour."""

    fmt: str
    fields: list[str] | None
    color: bool

    def pick(self, human: Sequence[str], machine: Sequence[str]) -> list[str]:
        """The fields asked for, else the command's defaults for this kind of format."""
        if self.fields is not None:
            return self.fields
        return list(machine if self.fmt in MACHINE_FORMATS else human)


def output(ctx: typer.Context, fmt: str | None, json_flag: bool, fields: str | None, color: str | None,
           allowed: Sequence[str] = SOURCE_FIELDS) -> Output:  # fmt: skip
    from invmap.render import choose_format, parse_fields

    mode = color_mode(color) if color is not None else state(ctx).color
    chosen = choose_format(fmt, json_flag, sys.stdout.isatty())
    return Output(chosen, parse_fields(fields, allowed), use_color(mode, sys.stdout.isatty()))


def use_color(mode: str, is_terminal: bool) -> bool:
    """auto: colour only on a terminal, and never with NO_COLOR set (non-empty) or TERM=dumb."""
    if mode != "auto":
        return mode == "always"
    return is_terminal and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def console(color: bool) -> Any:
    from rich.console import Console

    return Console(
        file=sys.stdout,
        force_terminal=True if color else None,
        no_color=not color,
        color_system="auto" if color else None,
        highlight=False,
    )


def write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def emit_records(out: Output, records: list[dict[str, Any]], fields: Sequence[str], *, show_all: bool = False) -> None:
    from invmap import render

    if out.fmt != "table":
        write(render.render_records(records, fields, out.fmt))
        return
    shown = records if show_all else records[:TABLE_ROW_CAP]
    screen = console(out.color)
    screen.print(render.records_table(shown, fields, width=screen.width))
    if len(records) > len(shown):
        screen.print(render.more_note(len(records) - len(shown)), style="dim", soft_wrap=True)


def emit_record(out: Output, record: dict[str, Any], fields: Sequence[str]) -> None:
    from invmap import render

    if out.fmt == "table":
        console(out.color).print(render.record_table(record, fields))
    else:
        write(render.render_record(record, fields, out.fmt))


def emit_view(out: Output, data: Any, draw: Any, rows: list[dict[str, Any]], fields: Sequence[str]) -> None:
    """A view with a JSON shape and a terminal drawing of its own; other formats get its flat rows."""
    if out.fmt == "json":
        import json

        write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    elif out.fmt == "table":
        draw(console(out.color))
    else:
        emit_records(out, rows, fields)


def selected(ctx: typer.Context, layer: list[str] | None, type_: list[str] | None,
             year: list[str] | None) -> tuple[Catalog, list[Source]]:  # fmt: skip
    cat = state(ctx).catalog()
    filters = query.build_filters(cat.sources, layer or (), type_ or (), year or ())
    return cat, query.select(cat.sources, filters)
