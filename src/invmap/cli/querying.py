"""Query commands: list, show, questions, search, fields."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from invmap import query
from invmap.cli.shared import (
    AllOpt,
    ColorOpt,
    FieldsOpt,
    FormatOpt,
    JsonOpt,
    LayerOpt,
    LimitOpt,
    ReverseOpt,
    SortOpt,
    SourceArg,
    TypeOpt,
    YearOpt,
    complete_search_in,
    emit_record,
    emit_records,
    output,
    selected,
    state,
    write,
)
from invmap.errors import UsageError
from invmap.vocabulary import SCORED_FIELDS, SOURCE_FIELDS

if TYPE_CHECKING:  # the models load with the catalog; --help and --version never need them
    from invmap.model import Source


commands = typer.Typer()


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
    sources = _selected_in_order(ctx, layer, type_, year, sort, reverse, limit)
    fields_ = out.pick(("id", "name", "year", "layer", "mechanism"), SOURCE_FIELDS)
    emit_records(out, [s.to_dict() for s in sources], fields_, show_all=show_all)


def _selected_in_order(ctx: typer.Context, layer: list[str] | None, type_: list[str] | None, year: list[str] | None,
                       sort: str | None, reverse: bool, limit: int | None) -> list[Source]:  # fmt: skip
    """What `list` and `questions` show: the filtered sources, sorted, cut to --limit."""
    if sort is not None and sort not in query.SORT_KEYS:
        raise UsageError(f"unknown sort key '{sort}' (valid keys: {', '.join(query.SORT_KEYS)})")
    _, sources = selected(ctx, layer, type_, year)
    return query.sort_sources(sources, sort, reverse)[:limit]


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
    sources = _selected_in_order(ctx, layer, type_, year, sort, reverse, limit)
    fields_ = out.pick(("name", "layer", "question"), ("id", "name", "layer", "layers", "question"))
    emit_records(out, [s.to_dict() for s in sources], fields_, show_all=show_all)


@commands.command("search")
def search(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="Words to look for; order and small typos do not matter.")],
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
    emit_records(out, [h.to_dict() for h in hits], out.pick(human, SCORED_FIELDS))


@commands.command("fields")
def fields_cmd() -> None:
    """List the field names that --fields accepts, with their meanings."""
    from invmap.render import fields_text

    write(fields_text())
