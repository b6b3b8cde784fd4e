"""Overview views: layers, stats, map, related, guide, open."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from invmap import query
from invmap.cli.querying import examples
from invmap.cli.shared import (
    ColorOpt,
    FieldsOpt,
    FormatOpt,
    JsonOpt,
    LayerOpt,
    NamesArg,
    NoPagerOpt,
    SourceArg,
    TypeOpt,
    YearOpt,
    at_least_one,
    emit,
    filters,
    format_opt,
    index,
    output,
    write,
)
from invmap.errors import NotFoundError
from invmap.fields import SCORED_FIELDS
from invmap.render import Result

commands = typer.Typer()


@commands.command(
    "layers", epilog=examples("invmap layers", "invmap layers --json | jq -r '.[] | \"\\(.code) \\(.title)\"'")
)
def layers(
    ctx: typer.Context,
    type_: TypeOpt = None,
    year: YearOpt = None,
    fmt: FormatOpt = None,
    json_flag: JsonOpt = False,
    color: ColorOpt = None,
    no_pager: NoPagerOpt = False,
) -> None:
    """Show the six levels (L1..L6) and the companion projects (P0): title, scope and sources; then the
    free-text layer labels."""
    from invmap import overview

    out = output(ctx, fmt, json_flag, None, color, allowed=(), no_pager=no_pager)
    idx = index(ctx)
    selected = query.select(idx, filters(ctx, None, type_, year), ("id", "name", "layer", "layers"))
    rows = overview.layer_rows(idx.levels(), selected)
    fields = {
        "table": ["code", "title", "count", "names"],
        "markdown": ["code", "title", "scope", "count", "names"],
        "plain": ["code", "title", "count", "sources"],
    }.get(out.fmt, ["code", "title", "scope", "count", "sources", "names"])
    emit(out, Result(rows, fields))


@commands.command("stats", epilog=examples("invmap stats", "invmap stats --layer L5 --json"))
def stats(
    ctx: typer.Context,
    layer: LayerOpt = None,
    type_: TypeOpt = None,
    year: YearOpt = None,
    fmt: format_opt("stats") = None,  # type: ignore[valid-type]
    json_flag: JsonOpt = False,
    color: ColorOpt = None,
    no_pager: NoPagerOpt = False,
) -> None:
    """Count sources by type, by year and by level code: bar charts on one scale on a terminal."""
    from invmap import overview, render

    out = output(ctx, fmt, json_flag, None, color, allowed=(), no_pager=no_pager)
    counts = overview.stats(query.select(index(ctx), filters(ctx, layer, type_, year), ("type", "year", "layers")))

    def draw(width: int, color_on: bool) -> str:
        groups = [("By type", counts["by_type"]), ("By year", counts["by_year"]), ("By level code", counts["by_layer"])]
        noun = "source" if counts["total"] == 1 else "sources"
        return f"{counts['total']} {noun}\n\n" + render.bar_charts(groups, min(width, 100))

    emit(out, Result(overview.stats_rows(counts), ["group", "key", "count"], data=counts, draw=draw))


@commands.command("map", epilog=examples("invmap map", "invmap map --layer L3", "invmap map --json"))
def map_(
    ctx: typer.Context,
    layer: LayerOpt = None,
    type_: TypeOpt = None,
    year: YearOpt = None,
    fmt: format_opt("map") = None,  # type: ignore[valid-type]
    json_flag: JsonOpt = False,
    color: ColorOpt = None,
    no_pager: NoPagerOpt = False,
) -> None:
    """Show the map: each level with its sources by year (n.d. last), short names whole."""
    from invmap import overview, render

    out = output(ctx, fmt, json_flag, None, color, allowed=(), no_pager=no_pager)
    idx = index(ctx)
    chosen = filters(ctx, layer, type_, year)
    grid = overview.grid(query.select(idx, chosen, ("name", "year", "layers")), only=chosen.codes)
    titles = {code: title for code, (title, _) in idx.levels().items()}
    titles[overview.NO_CODE] = "labels without a level code"
    emit(
        out,
        Result(
            render.grid_lines(grid),
            ["layer", "year", "names"],
            data=grid,
            draw=lambda width, color_on: render.grid_view(grid, titles, width, color_on),
        ),
    )


@commands.command(
    "related", epilog=examples("invmap related PagedAttention", "invmap related mooncake --limit 3 --json")
)
def related(
    ctx: typer.Context,
    name: SourceArg,
    limit: Annotated[
        int, typer.Option("--limit", "-n", metavar="N", callback=at_least_one, help="At most N results (at least 1).")
    ] = 5,
    fmt: FormatOpt = None,
    json_flag: JsonOpt = False,
    fields: FieldsOpt = None,
    color: ColorOpt = None,
    no_pager: NoPagerOpt = False,
) -> None:
    """List the sources nearest to one source: shared level codes and similar mechanism and question."""
    out = output(ctx, fmt, json_flag, fields, color, allowed=SCORED_FIELDS, no_pager=no_pager)
    idx = index(ctx)
    hits = query.related(idx, query.resolve(idx, name), limit=limit)
    emit(out, Result(hits, out.pick(["score", "id", "name", "layer", "mechanism"], SCORED_FIELDS)))


@commands.command("guide", epilog=examples("invmap guide", "invmap guide --format markdown > procedure.md"))
def guide(
    ctx: typer.Context,
    fmt: format_opt("guide") = None,  # type: ignore[valid-type]
    json_flag: JsonOpt = False,
    color: ColorOpt = None,
    no_pager: NoPagerOpt = False,
) -> None:
    """Print the map's study procedure (five steps) and its notes."""
    from invmap import render

    out = output(ctx, fmt, json_flag, None, color, allowed=(), no_pager=no_pager)
    info = index(ctx).info()
    if out.fmt == "json":
        write(render.to_json(info))
    elif out.fmt == "table":
        emit(out, Result([], [], draw=lambda width, _c: render.guide_text(info, "plain", width=min(width, 100))))
    else:
        write(render.guide_text(info, out.fmt))


@commands.command("open", epilog=examples("invmap open mooncake", "invmap open vllm --code", "invmap open gqa --print"))
def open_(
    ctx: typer.Context,
    names: NamesArg,
    code: Annotated[
        bool, typer.Option("--code", help="The public source repository instead of the paper or page.")
    ] = False,
    print_only: Annotated[bool, typer.Option("--print", help="Print the link instead of opening it.")] = False,
) -> None:
    """Open a source's link (its page, arXiv or DOI) or, with --code, its repository, in the browser."""
    records = query.resolve_all(index(ctx), names)
    links = []
    for r in records:
        link = r["code"] if code else r["url"]
        if not link:
            what = (
                "no public source repository (code)" if code else "no link: the catalog gives no url, arXiv id or DOI"
            )
            raise NotFoundError(f"{r['name']} ({r['id']}) has {what}")
        if not link.startswith(("https://", "http://")):
            raise NotFoundError(f"{r['name']} ({r['id']}) has a link that is not http(s); not opening it")
        links.append(link)
    for link in links:
        if print_only or not _open_in_browser(link):
            write(link + "\n")


def _open_in_browser(link: str) -> bool:
    """True if a browser took the link; False where there is none (a server, CI, no display), so we print it."""
    import webbrowser

    graphical = sys.platform == "darwin" or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    if not graphical and not os.environ.get("BROWSER"):
        return False  # a console browser (lynx, w3m) would take over the terminal: print instead
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return False
    blocking = isinstance(browser, webbrowser.GenericBrowser) and not isinstance(browser, webbrowser.BackgroundBrowser)
    if blocking and not (sys.stdin.isatty() and sys.stdout.isatty()):
        return False
    return bool(browser.open(link))
