"""Overview views: layers, stats, map, related, guide, open."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from invmap import query
from invmap.cli.shared import (
    ColorOpt,
    FieldsOpt,
    FormatOpt,
    JsonOpt,
    LayerOpt,
    SourceArg,
    TypeOpt,
    YearOpt,
    console,
    emit_records,
    emit_view,
    output,
    selected,
    state,
    write,
)
from invmap.errors import NotFoundError, UsageError
from invmap.render import MACHINE_FORMATS
from invmap.vocabulary import SCORED_FIELDS

commands = typer.Typer()


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
    records = [h.to_dict() for h in hits]
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
    blocking = isinstance(browser, webbrowser.GenericBrowser) and not isinstance(browser, webbrowser.BackgroundBrowser)
    if blocking and not (sys.stdin.isatty() and sys.stdout.isatty()):
        return False  # a console browser (lynx, w3m) would take over a script's terminal: print instead
    return bool(browser.open(link))
