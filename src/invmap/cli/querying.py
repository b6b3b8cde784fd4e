"""Query commands: list, show, questions, search, fields."""

from __future__ import annotations

from typing import Annotated, Any, Optional

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
    NamesArg,
    NoPagerOpt,
    ReverseOpt,
    SortOpt,
    TypeOpt,
    YearOpt,
    at_least_one,
    complete_search_in,
    emit,
    empty_notice,
    filters,
    index,
    output,
    write,
)
from invmap.fields import SCORED_FIELDS, SOURCE_FIELDS
from invmap.render import Result


def examples(*lines: str) -> str:
    """A command's help epilog: an Examples section, kept as written (`\\b` stops click rewrapping it)."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


commands = typer.Typer()


@commands.command(
    "list",
    epilog=examples(
        "invmap list --layer L3",
        "invmap list --layer disaggregation --type current",
        "invmap list --year 2023..2025 --json | jq -r '.[].id'",
    ),
)
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
    no_pager: NoPagerOpt = False,
) -> None:
    """List sources, filtered by layer, type and year."""
    out = output(ctx, fmt, json_flag, fields, color, no_pager=no_pager)
    chosen = filters(ctx, layer, type_, year)
    fields_ = out.pick(("id", "name", "year", "layer", "mechanism"), SOURCE_FIELDS)
    columns = [*fields_, "url"] if out.links and "url" not in fields_ else fields_  # a table links each name
    records = query.selection(index(ctx), chosen, columns, sort, reverse, limit)
    if not records:
        empty_notice(out, chosen)
    emit(out, Result(records, fields_), show_all=show_all)


@commands.command(
    "show",
    epilog=examples(
        "invmap show PagedAttention", "invmap show 2407.00079", "invmap show https://docs.vllm.ai/ sglang --json"
    ),
)
def show(
    ctx: typer.Context,
    names: NamesArg,
    fmt: FormatOpt = None,
    json_flag: JsonOpt = False,
    fields: FieldsOpt = None,
    color: ColorOpt = None,
    no_pager: NoPagerOpt = False,
) -> None:
    """Show every field of one or more sources, found by id, name, Source text, title, arXiv id, DOI or
    link. Every name is resolved first; any miss fails the whole command."""
    out = output(ctx, fmt, json_flag, fields, color, no_pager=no_pager)
    records = query.resolve_all(index(ctx), names)
    fields_ = out.fields or list(SOURCE_FIELDS)
    if len(records) == 1:
        result = Result(records, fields_, single=True, draw=_record_drawing(records[0], fields_))
    else:
        result = Result(records, fields_, draw=_records_drawing(records, fields_))
    emit(out, result)


def _record_drawing(record: dict[str, Any], fields: list[str]) -> Any:
    from invmap import render

    return lambda width, color: render.record_view(record, fields, width, color)


def _records_drawing(records: list[dict[str, Any]], fields: list[str]) -> Any:
    def draw(width: int, color: bool) -> Any:
        from rich.console import Group
        from rich.text import Text

        from invmap import render

        parts: list[Any] = []
        for n, r in enumerate(records):
            if n:
                parts.append(Text(""))
            parts.append(render.record_view(r, fields, width, color))
        return Group(*parts)

    return draw


@commands.command(
    "questions",
    epilog=examples(
        "invmap questions --layer L5",
        "invmap questions --records experiments --open",
        "invmap questions --format jsonl | jq -r .question",
    ),
)
def questions(
    ctx: typer.Context,
    layer: LayerOpt = None,
    type_: TypeOpt = None,
    year: YearOpt = None,
    records_dir: Annotated[
        Optional[str],
        typer.Option(
            "--records",
            metavar="DIR",
            help="Show which experiment records address each question (default: $INVMAP_RECORDS).",
        ),
    ] = None,
    open_only: Annotated[bool, typer.Option("--open", help="Only questions no record addresses yet.")] = False,
    sort: SortOpt = None,
    reverse: ReverseOpt = False,
    limit: LimitOpt = None,
    show_all: AllOpt = False,
    fmt: FormatOpt = None,
    json_flag: JsonOpt = False,
    fields: FieldsOpt = None,
    color: ColorOpt = None,
    no_pager: NoPagerOpt = False,
) -> None:
    """Print the unresolved engineering question of each selected source."""
    from invmap.cli.records import addressed_by, records_folder

    allowed = (*SOURCE_FIELDS, "records")
    out = output(ctx, fmt, json_flag, fields, color, allowed=allowed, no_pager=no_pager)
    chosen = filters(ctx, layer, type_, year)
    folder = records_folder(records_dir)
    human = ["id", "name", "layer", "question"]
    machine = ["id", "name", "layer", "layers", "question"]
    if folder is not None:
        by_source = addressed_by(index(ctx), folder)
        records: Any = list(query.selection(index(ctx), chosen, SOURCE_FIELDS, sort, reverse))
        for r in records:
            r["records"] = by_source.get(r["id"], [])
        if open_only:
            records = [r for r in records if not r["records"]]
        human.append("records")
        machine.append("records")
        records = records[:limit]
    elif open_only:
        from invmap.errors import UsageError

        raise UsageError("--open needs a records folder: --records DIR or $INVMAP_RECORDS")
    else:
        records = query.selection(index(ctx), chosen, SOURCE_FIELDS, sort, reverse, limit)
    if not records:
        empty_notice(out, chosen, prefix="no open questions match" if open_only else "no sources match")
    emit(out, Result(records, out.pick(human, machine)), show_all=show_all)


@commands.command(
    "search",
    epilog=examples(
        'invmap search "speculative decoding"',
        'invmap search "virtual memory" --in mechanism',
        "invmap search goodput --in all --json",
    ),
)
def search(
    ctx: typer.Context,
    text: Annotated[
        list[str],
        typer.Argument(
            metavar="TEXT...", help="Words to look for, quoted or not; order, case and typos do not matter."
        ),
    ],
    within: Annotated[
        Optional[list[str]],
        typer.Option(
            "--in",
            metavar="FIELD",
            autocompletion=complete_search_in,
            help="Field to search (any text field, or 'all'); repeat or use commas. "
            "Default: name, id, source, title and mechanism.",
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", metavar="N", callback=at_least_one, help="At most N results (at least 1).")
    ] = 10,
    min_score: Annotated[
        float, typer.Option("--min-score", metavar="SCORE", help="Drop results scoring below SCORE (0 to 100).")
    ] = 60.0,
    layer: LayerOpt = None,
    type_: TypeOpt = None,
    year: YearOpt = None,
    fmt: FormatOpt = None,
    json_flag: JsonOpt = False,
    fields: FieldsOpt = None,
    color: ColorOpt = None,
    no_pager: NoPagerOpt = False,
) -> None:
    """Search names, Source texts, titles and mechanisms (or other fields), best match first, scored 0-100."""
    from invmap.errors import UsageError

    if not 0 <= min_score <= 100:
        raise UsageError(f"--min-score must be between 0 and 100, not {min_score:g}")
    out = output(ctx, fmt, json_flag, fields, color, allowed=SCORED_FIELDS, no_pager=no_pager)
    searched = query.search_fields(within)
    chosen = filters(ctx, layer, type_, year)
    words = " ".join(text)
    hits = query.search(index(ctx), chosen, words, searched, limit=limit, min_score=min_score)
    # The table shows who matched, and the first two searched sentences (mechanism by default).
    sentences = [f for f in searched if f not in query.NAME_TIER + query.TITLE_TIER]
    human = ["score", "id", "name", "layer", *sentences[:2]]
    if not hits:
        looked = ", ".join(dict.fromkeys(f for f in searched))
        hint = f"search looked at {looked}" + ("; try --in all" if within is None else "")
        empty_notice(out, None, hint=hint, prefix=f"nothing matches '{words}'")
    emit(out, Result(hits, out.pick(human, SCORED_FIELDS)))


@commands.command("fields", epilog=examples("invmap fields", "invmap list --fields id,name,url"))
def fields_cmd() -> None:
    """List the field names that --fields accepts, with their meanings."""
    from invmap.render import fields_text

    write(fields_text())
