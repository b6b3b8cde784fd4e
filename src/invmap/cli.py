"""The Typer app: options, completion callbacks, output routing, errors -> exit codes.

Commands stay thin: parse options, call the core (catalog, query, render), route the result. Data
goes to stdout, every message to stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer

from invmap import __version__, complete
from invmap import catalog as catalog_io
from invmap import query
from invmap.errors import CatalogError, InvmapError, NotFoundError, UsageError
from invmap.render import FORMATS, MACHINE_FORMATS
from invmap.vocabulary import FIELD_HELP, SCORED_FIELDS, SOURCE_FIELDS

if TYPE_CHECKING:  # the models load with the catalog; --help and --version never need them
    from invmap.model import Catalog, Source

COLOR_MODES = ("auto", "always", "never")
TABLE_ROW_CAP = 200  # a terminal table of 100,000 rows takes minutes to draw; say how many are left


class InvmapGroup(typer.core.TyperGroup):
    """The root command group.

    Builds a subcommand only when it is used: Typer would otherwise turn every command's signature
    into click parameters on every run (~1 ms a command), and `list` pays for `add` and `export`.
    Turns every InvmapError raised by a command into its message on stderr and its exit code.
    """

    def list_commands(self, ctx: typer.Context) -> list[str]:
        return [info.name for info in commands.registered_commands if info.name]

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:
        for info in commands.registered_commands:
            if info.name == cmd_name:
                return typer.main.get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)
        return None

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:  # bare `invmap`: the help, as a success
            sys.stdout.write(ctx.get_help() + "\n")
            ctx.exit(0)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: typer.Context, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except Exception as exc:  # click's UsageError ("No such command"), which typer does not export
            # Typer's own "Did you mean" looks at the eagerly built command table, which we skip.
            from difflib import get_close_matches

            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches and isinstance(getattr(exc, "message", None), str) and "Did you mean" not in exc.message:
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"
            raise

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except InvmapError as exc:
            report(exc)
            raise typer.Exit(exc.exit_code) from None


def report(exc: InvmapError) -> None:
    lines = [f"Error: {exc.message}"]
    if isinstance(exc, NotFoundError) and exc.candidates:
        lines.append(f"{(exc.hint or 'candidates').capitalize()}:")
        lines += [f"  {c}" for c in exc.candidates]
    elif exc.hint:
        lines.append(f"Hint: {exc.hint}")
    sys.stderr.write("\n".join(lines) + "\n")


app = typer.Typer(
    cls=InvmapGroup,
    name="invmap",
    help="Query a curated map of LLM-inference-engineering research: which sources address a layer, "
    "what mechanism each proposes, and which engineering question is still open.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain click help: rich's help renderer costs ~60 ms on every --help
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
# The subcommands, registered here and built one at a time by InvmapGroup.get_command.
commands = typer.Typer(context_settings={"help_option_names": ["-h", "--help"]})


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


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"invmap {__version__}\n")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    catalog: Annotated[
        Optional[str],
        typer.Option("--catalog", "-c", metavar="PATH", help="Catalog file to use ('-' reads stdin). "
                     "Default: $INVMAP_CATALOG, else the catalog shipped with invmap."),
    ] = None,  # fmt: skip
    color: Annotated[
        str, typer.Option("--color", metavar="WHEN", help="Colour: auto, always or never.", autocompletion=complete_color)
    ] = "auto",
    version: Annotated[
        bool, typer.Option("--version", "-V", help="Print the version and exit.", callback=_version, is_eager=True)
    ] = False,
) -> None:
    """Query a curated map of LLM-inference-engineering research."""
    ctx.obj = State(catalog_io.locate(catalog), _color_mode(color))


def _color_mode(value: str) -> str:
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

    mode = _color_mode(color) if color is not None else state(ctx).color
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


def emit_records(out: Output, records: list[dict[str, Any]], fields: Sequence[str], *, title: str | None = None,
                 show_all: bool = False) -> None:  # fmt: skip
    from invmap import render

    if out.fmt != "table":
        write(render.render_records(records, fields, out.fmt))
        return
    shown = records if show_all else records[:TABLE_ROW_CAP]
    screen = console(out.color)
    screen.print(render.records_table(shown, fields, width=screen.width, title=title))
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


def fail(message: str, code: int = 2) -> NoReturn:
    sys.stderr.write(f"Error: {message}\n")
    raise typer.Exit(code)


# --- query commands ---------------------------------------------------------------------------


@commands.command("list")
def list_(
    ctx: typer.Context,
    layer: LayerOpt = None,
    type_: TypeOpt = None,
    year: YearOpt = None,
    sort: SortOpt = None,
    reverse: ReverseOpt = False,
    limit: LimitOpt = None,
    show_all: AllOpt = False,
    fmt: FormatOpt = None,
    json_flag: JsonOpt = False,
    fields: FieldsOpt = None,
    color: ColorOpt = None,
) -> None:
    """List sources, filtered by layer, type and year."""
    out = output(ctx, fmt, json_flag, fields, color)
    _, sources = selected(ctx, layer, type_, year)
    sources = _sorted(sources, sort, reverse)[:limit]
    fields_ = out.pick(("id", "name", "type", "year", "layer", "mechanism"), SOURCE_FIELDS)
    emit_records(out, [s.to_dict() for s in sources], fields_, show_all=show_all)


def _sorted(sources: list[Source], key: str | None, reverse: bool) -> list[Source]:
    if key is not None and key not in query.SORT_KEYS:
        raise UsageError(f"unknown sort key '{key}' (valid keys: {', '.join(query.SORT_KEYS)})")
    return query.sort_sources(sources, key, reverse)


@commands.command("show")
def show(
    ctx: typer.Context,
    name: SourceArg,
    fmt: FormatOpt = None,
    json_flag: JsonOpt = False,
    fields: FieldsOpt = None,
    color: ColorOpt = None,
) -> None:
    """Show every field of one source, found by id, name, Source text, arXiv id or DOI."""
    out = output(ctx, fmt, json_flag, fields, color)
    source = query.resolve(state(ctx).catalog(), name)
    emit_record(out, source.to_dict(), out.fields or list(SOURCE_FIELDS))


@commands.command("questions")
def questions(
    ctx: typer.Context,
    layer: LayerOpt = None,
    type_: TypeOpt = None,
    year: YearOpt = None,
    sort: SortOpt = None,
    reverse: ReverseOpt = False,
    limit: LimitOpt = None,
    show_all: AllOpt = False,
    fmt: FormatOpt = None,
    json_flag: JsonOpt = False,
    fields: FieldsOpt = None,
    color: ColorOpt = None,
) -> None:
    """The unresolved engineering question of each selected source."""
    out = output(ctx, fmt, json_flag, fields, color)
    _, sources = selected(ctx, layer, type_, year)
    sources = _sorted(sources, sort, reverse)[:limit]
    fields_ = out.pick(("name", "layer", "question"), ("id", "name", "layer", "layers", "question"))
    emit_records(out, [s.to_dict() for s in sources], fields_, show_all=show_all)


@commands.command("search")
def search(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="Words to look for; order and small typos do not matter.")],
    within: Annotated[
        Optional[list[str]],
        typer.Option("--in", metavar="FIELD", autocompletion=complete_search_in,
                     help=f"Field to search: {', '.join(query.SEARCH_FIELDS)}. Repeat to widen. Default: mechanism."),
    ] = None,  # fmt: skip
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most N results.")] = 10,
    min_score: Annotated[float, typer.Option("--min-score", min=0, max=100, help="Drop results scoring below this.")] = 60.0,
    layer: LayerOpt = None,
    type_: TypeOpt = None,
    year: YearOpt = None,
    fmt: FormatOpt = None,
    json_flag: JsonOpt = False,
    fields: FieldsOpt = None,
    color: ColorOpt = None,
) -> None:
    """Fuzzy-search the central mechanisms (or other fields), best first, scored 0-100."""
    out = output(ctx, fmt, json_flag, fields, color, allowed=SCORED_FIELDS)
    searched = list(dict.fromkeys(within or ["mechanism"]))
    unknown = [f for f in searched if f not in query.SEARCH_FIELDS]
    if unknown:
        raise UsageError(f"cannot search field '{unknown[0]}' (searchable: {', '.join(query.SEARCH_FIELDS)})")
    _, sources = selected(ctx, layer, type_, year)
    hits = query.search(sources, text, searched, limit=limit, min_score=min_score)
    human = ["score", "id", "name", "layer", *[f for f in searched if f != "name"]]
    emit_records(out, [{**h.source.to_dict(), "score": h.score} for h in hits], out.pick(human, SCORED_FIELDS))


@commands.command("fields")
def fields_cmd() -> None:
    """List the field names that --fields accepts, with their meanings."""
    from invmap.render import fields_text

    write(fields_text())


# --- catalog authoring ------------------------------------------------------------------------

EXPORT_FORMATS = ("markdown", "csv", "tsv", "json", "jsonl", "bibtex", "toml")
OutputOpt = Annotated[
    Optional[str], typer.Option("--output", "-o", metavar="PATH", help="Write to PATH instead of stdout.")
]


def complete_export_format(incomplete: str) -> list[tuple[str, str]]:
    return complete.choices(EXPORT_FORMATS, incomplete)


@commands.command("where")
def where(ctx: typer.Context, json_flag: JsonOpt = False) -> None:
    """Print which catalog file is active, and why."""
    location = state(ctx).location
    if json_flag:
        import json

        write(json.dumps({"path": location.path, "reason": location.reason, "shipped": location.is_shipped}) + "\n")
    else:
        write(f"{location.path}\t({location.reason})\n")


@commands.command("check")
def check(ctx: typer.Context, json_flag: JsonOpt = False) -> None:
    """Validate the active catalog and report every problem (exit 0 when clean, 3 when not)."""
    from invmap.errors import CatalogError

    location = state(ctx).location
    try:
        cat = catalog_io.validate(catalog_io.parse(catalog_io.read_bytes(location.path), location.path), location.path)
    except CatalogError as exc:
        if not json_flag:
            raise
        import json

        write(json.dumps({"path": location.path, "valid": False, "sources": None, "problems": exc.problems}, indent=2) + "\n")
        raise typer.Exit(exc.exit_code) from None
    if json_flag:
        import json

        write(json.dumps({"path": location.path, "valid": True, "sources": len(cat.sources), "problems": []}, indent=2) + "\n")
    else:
        write(f"{location.path}: ok, {len(cat.sources)} sources\n")


@commands.command("init")
def init(
    path: Annotated[str, typer.Argument(metavar="PATH", help="Where to write the new catalog.")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite PATH if it exists.")] = False,
) -> None:
    """Start a catalog of your own: a copy of the shipped catalog at PATH."""
    written = catalog_io.copy_shipped(path, force)
    write(f"Wrote {written}; use it with --catalog {written} or INVMAP_CATALOG={written}\n")


@commands.command("add")
def add(
    ctx: typer.Context,
    name: Annotated[str, typer.Option("--name", help="Short name, e.g. PagedAttention.")],
    source: Annotated[str, typer.Option("--source", help="The Source text, e.g. 'PagedAttention, Kwon et al.'.")],
    type_: Annotated[str, typer.Option("--type", help="Direction/type, e.g. Current.")],
    year: Annotated[str, typer.Option("--year", help="Year, or n.d. for undated.")],
    layer: Annotated[str, typer.Option("--layer", help="Layer label, e.g. 'L3' or 'L2 and L3'.")],
    mechanism: Annotated[str, typer.Option("--mechanism", help="Central mechanism.")],
    objective: Annotated[str, typer.Option("--objective", help="Reported objective.")],
    question: Annotated[str, typer.Option("--question", help="Unresolved engineering question.")],
    availability: Annotated[str, typer.Option("--availability", help="Implementation availability.")],
    id_: Annotated[Optional[str], typer.Option("--id", help="Unique kebab-case id. Default: slug of --name.")] = None,
    authors: Annotated[Optional[str], typer.Option("--authors", help="Authors, e.g. 'Kwon et al.'.")] = None,
    arxiv: Annotated[Optional[str], typer.Option("--arxiv", help="arXiv id, e.g. 2407.00079.")] = None,
    doi: Annotated[Optional[str], typer.Option("--doi", help="DOI, e.g. 10.1145/3731569.3764815.")] = None,
    url: Annotated[Optional[str], typer.Option("--url", help="Link to the source.")] = None,
    accessed: Annotated[Optional[str], typer.Option("--accessed", help="Access date YYYY-MM-DD. Default: today.")] = None,
    json_flag: JsonOpt = False,
) -> None:
    """Add a source to the active catalog (never the shipped one); a rejected add changes nothing."""
    import datetime as dt

    from invmap.sourcetext import slug

    location = state(ctx).location
    catalog_io.require_writable(location)
    entry: dict[str, Any] = {"id": id_ if id_ is not None else slug(name), "name": name, "source": source}
    for key, value in (("authors", authors), ("arxiv", arxiv), ("doi", doi), ("url", url)):
        if value is not None:
            entry[key] = value
    entry["type"] = type_
    span = query.parse_year(year)
    if not span.undated:
        if span.low is None or span.low != span.high:
            raise UsageError(f"--year takes one year or n.d., not a range: '{year}'")
        entry["year"] = span.low
    entry.update(layer=layer, mechanism=mechanism, objective=objective, question=question, availability=availability)
    try:
        entry["accessed"] = dt.date.fromisoformat(accessed) if accessed is not None else dt.date.today()
    except ValueError:
        raise UsageError(f"--accessed takes a date such as 2026-08-07, not '{accessed}'") from None
    updated = catalog_io.add_source(location, entry)
    added = next(s for s in reversed(updated.sources) if s.id == entry["id"])
    if json_flag:
        import json

        write(json.dumps(added.to_dict(), ensure_ascii=False, indent=2) + "\n")
    else:
        write(f"Added {added.id} to {location.path}\n")


@commands.command("fmt")
def fmt_(
    ctx: typer.Context,
    check_only: Annotated[bool, typer.Option("--check", help="Change nothing; exit 1 if the file is not canonical.")] = False,
) -> None:
    """Rewrite the active catalog in its one canonical form."""
    location = state(ctx).location
    if not check_only:
        catalog_io.require_writable(location)
    current, canonical = catalog_io.canonical_status(location)
    if current == canonical:
        write(f"{location.path}: already canonical\n")
        return
    if check_only:
        sys.stderr.write(f"{location.path}: not canonical; 'invmap fmt' would rewrite it\n")
        raise typer.Exit(1)
    catalog_io.write_atomic(location.path, canonical)
    write(f"{location.path}: reformatted\n")


@commands.command("export")
def export(
    ctx: typer.Context,
    fmt: Annotated[
        str, typer.Option("--format", "-f", metavar="FORMAT", autocompletion=complete_export_format,
                          help=f"One of: {', '.join(EXPORT_FORMATS)}.")
    ] = "markdown",  # fmt: skip
    output_path: OutputOpt = None,
    layer: LayerOpt = None,
    type_: TypeOpt = None,
    year: YearOpt = None,
) -> None:
    """Export the catalog (or the filtered sources) as Markdown like the seed, CSV, JSON, BibTeX or TOML."""
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"unknown export format '{fmt}' (valid formats: {', '.join(EXPORT_FORMATS)})")
    cat, sources = selected(ctx, layer, type_, year)
    if len(sources) != len(cat.sources):
        if not sources:
            raise NotFoundError("no source matches these filters: nothing to export")
        cat = cat.model_copy(update={"sources": sources})
    text = export_text(cat, fmt)
    if output_path is None:
        write(text)
    else:
        catalog_io.write_output(output_path, text)


def export_text(cat: Catalog, fmt: str) -> str:
    from invmap import interchange, render

    if fmt == "markdown":
        return interchange.to_markdown(cat)
    if fmt == "bibtex":
        return interchange.to_bibtex(cat)
    if fmt == "toml":
        return catalog_io.dumps(cat)
    return render.render_records([s.to_dict() for s in cat.sources], SOURCE_FIELDS, fmt)


@commands.command("import")
def import_(
    file: Annotated[str, typer.Argument(metavar="FILE", help="A Markdown file with the seed's table ('-' reads stdin).")],
    output_path: OutputOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --output if it exists.")] = False,
) -> None:
    """Turn a Markdown table with the seed's columns into a catalog (TOML)."""
    from invmap import interchange

    data = catalog_io.read_bytes(file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CatalogError(file, ["not UTF-8 text"]) from None
    cat = catalog_io.validate(interchange.read_markdown(text, file), file)
    toml_text = catalog_io.dumps(cat)
    if output_path is None:
        write(toml_text)
    else:
        catalog_io.write_output(output_path, toml_text, force=force)
        write(f"Wrote {output_path}: {len(cat.sources)} sources\n")


# --- overview views -----------------------------------------------------------------------------


@commands.command("layers")
def layers(
    ctx: typer.Context, type_: TypeOpt = None, year: YearOpt = None, fmt: FormatOpt = None, json_flag: JsonOpt = False,
    color: ColorOpt = None,
) -> None:  # fmt: skip
    """Sources per layer code (L1..L6, P0), then the free-text layer labels."""
    from invmap import overview

    out = output(ctx, fmt, json_flag, None, color, allowed=())
    cat, sources = selected(ctx, None, type_, year)
    rows = overview.layer_rows(cat, sources)
    fields = ["code", "title", "count", "names"] if out.fmt in ("table", "markdown") else ["code", "title", "count", "sources"]
    if out.fmt in MACHINE_FORMATS:
        fields = ["code", "title", "count", "sources", "names"]
    emit_records(out, rows, fields, show_all=True)


@commands.command("stats")
def stats(
    ctx: typer.Context, layer: LayerOpt = None, type_: TypeOpt = None, year: YearOpt = None, fmt: FormatOpt = None,
    json_flag: JsonOpt = False, color: ColorOpt = None,
) -> None:  # fmt: skip
    """Counts by type, by year and by layer code, as bar charts on a terminal."""
    from invmap import overview, render

    out = output(ctx, fmt, json_flag, None, color, allowed=())
    _, sources = selected(ctx, layer, type_, year)
    counts = overview.stats(sources)

    def draw(screen: Any) -> None:
        screen.print(render.stats_charts(counts, min(screen.width, 100)), style="cyan" if out.color else None,
                     highlight=False, markup=False, end="")  # fmt: skip

    emit_view(out, counts, draw, overview.stats_rows(counts), ["group", "key", "count"])


@commands.command("map")
def map_(
    ctx: typer.Context, layer: LayerOpt = None, type_: TypeOpt = None, year: YearOpt = None, fmt: FormatOpt = None,
    json_flag: JsonOpt = False, color: ColorOpt = None,
) -> None:  # fmt: skip
    """The map as a grid: layer codes down, years across (n.d. last), short names in the cells."""
    from invmap import overview, render

    out = output(ctx, fmt, json_flag, None, color, allowed=())
    _, sources = selected(ctx, layer, type_, year)
    grid = overview.grid(sources)
    emit_view(out, grid, lambda screen: screen.print(render.grid_table(grid)), render.grid_lines(grid),
              ["layer", "year", "names"])  # fmt: skip


@commands.command("related")
def related(
    ctx: typer.Context,
    name: SourceArg,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most N results.")] = 5,
    fmt: FormatOpt = None,
    json_flag: JsonOpt = False,
    fields: FieldsOpt = None,
    color: ColorOpt = None,
) -> None:
    """The sources nearest to one source: shared layer codes and similar mechanism and question."""
    out = output(ctx, fmt, json_flag, fields, color, allowed=SCORED_FIELDS)
    cat = state(ctx).catalog()
    hits = query.related(cat, query.resolve(cat, name), limit=limit)
    records = [{**h.source.to_dict(), "score": h.score} for h in hits]
    emit_records(out, records, out.pick(["score", "id", "name", "layer", "mechanism"], SCORED_FIELDS))


@commands.command("guide")
def guide(ctx: typer.Context, fmt: FormatOpt = None, json_flag: JsonOpt = False, color: ColorOpt = None) -> None:
    """The map's study procedure (five steps) and its notes."""
    from invmap import render

    out = output(ctx, fmt, json_flag, None, color, allowed=())
    info = state(ctx).catalog().catalog
    if out.fmt in ("json", "jsonl"):
        import json

        write(json.dumps(info.model_dump(), ensure_ascii=False, indent=2 if out.fmt == "json" else None) + "\n")
    elif out.fmt == "table":
        screen = console(out.color)
        screen.print(render.guide_text(info, "plain", width=min(screen.width, 100)), markup=False, highlight=False, end="")
    elif out.fmt in ("plain", "markdown"):
        write(render.guide_text(info, out.fmt))
    else:
        raise UsageError(f"guide prints text: use --format table, plain, markdown or json, not {out.fmt}")


@commands.command("open")
def open_(
    ctx: typer.Context,
    name: SourceArg,
    print_only: Annotated[bool, typer.Option("--print", help="Print the link instead of opening it.")] = False,
) -> None:
    """Open a source's link (arXiv, DOI or the catalog's url) in the browser."""
    source = query.resolve(state(ctx).catalog(), name)
    link = source.link
    if link is None:
        raise NotFoundError(f"{source.name} ({source.id}) has no link: the catalog gives no url, arXiv id or DOI")
    if print_only or not _open_in_browser(link):
        write(link + "\n")


def _open_in_browser(link: str) -> bool:
    """True if a browser took the link; False where there is none (a server, CI), so we print it."""
    import webbrowser

    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return False
    return bool(browser.open(link))
