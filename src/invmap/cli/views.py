"""Overview commands: layers, stats, map, related, guide, open (declared in `options.py`)."""

from __future__ import annotations

import os
import shlex

import typer

from invmap import query
from invmap.cli.build import Args, implements
from invmap.cli.shared import emit, filters, index, output, state, write
from invmap.environment import Environment
from invmap.errors import FileAccessError, NotFoundError, UsageError
from invmap.fields import SCORED_FIELDS
from invmap.render import Result
from invmap.text import plural


@implements("layers")
def layers(ctx: typer.Context, args: Args) -> None:
    from invmap import overview
    from invmap.render.levels import level_view, levels_table

    out = output(ctx, args)
    idx = index(ctx)
    chosen = filters(ctx, args, idx)
    selected = query.records_matching(idx, chosen, ("id", "name", "layer", "layers", "question"))
    details = idx.level_details()
    if args.code:
        code = overview.level_code(args.code, [d["code"] for d in details])
        level = overview.one_level(code, details, selected)
        fields = ["code", "title", "scope", "question", "metrics", "symptoms", "count", "sources"]
        emit(
            out,
            Result([level], fields, data=level, single=True, draw=lambda w, c: level_view(level, w, c)),
        )
        return
    rows = overview.layer_rows(details, selected)
    fields = {
        "table": ["code", "title", "scope", "count"],
        "markdown": ["code", "title", "scope", "count", "names"],
        "plain": ["code", "title", "count", "sources"],
    }.get(out.fmt, ["code", "title", "scope", "question", "metrics", "symptoms", "count", "sources", "names"])
    emit(out, Result(rows, fields, draw=lambda w, c: levels_table(rows, w, c)))


@implements("stats")
def stats(ctx: typer.Context, args: Args) -> None:
    from invmap import overview
    from invmap.render.overview import bar_charts

    out = output(ctx, args)
    idx = index(ctx)
    counts = overview.stats(query.records_matching(idx, filters(ctx, args, idx), ("type", "year", "layers")))

    def draw(width: int, color_on: bool) -> str:
        groups = [("By type", counts["by_type"]), ("By year", counts["by_year"]), ("By level code", counts["by_layer"])]
        noun = "source" if counts["total"] == 1 else "sources"
        return f"{counts['total']} {noun}\n\n" + bar_charts(groups, min(width, 100))

    emit(out, Result(overview.stats_rows(counts), ["group", "key", "count"], data=counts, draw=draw))


@implements("map")
def map_(ctx: typer.Context, args: Args) -> None:
    from invmap import overview
    from invmap.render.overview import grid_lines, grid_view

    out = output(ctx, args)
    idx = index(ctx)
    chosen = filters(ctx, args, idx)
    grid = overview.grid(query.records_matching(idx, chosen, ("name", "year", "layers")), only=chosen.codes)
    titles = {code: title for code, (title, _) in idx.levels().items()}
    titles[overview.NO_CODE] = "labels without a level code"
    emit(
        out,
        Result(
            grid_lines(grid),
            ["layer", "year", "names"],
            data=grid,
            draw=lambda width, color_on: grid_view(grid, titles, width, color_on),
        ),
    )


@implements("related")
def related(ctx: typer.Context, args: Args) -> None:
    out = output(ctx, args)
    idx = index(ctx)
    hits = query.related(idx, query.resolve(idx, args.name), limit=args.limit)
    emit(out, Result(hits, out.pick(["score", "id", "name", "layer", "mechanism"], SCORED_FIELDS)))


@implements("guide")
def guide(ctx: typer.Context, args: Args) -> None:
    from invmap.render.documents import guide_text

    out = output(ctx, args)
    info = index(ctx).info()
    draw = lambda width, _c: guide_text(info, "plain", width=min(width, 100))  # noqa: E731
    emit(out, Result([], [], data=info if info is not None else {}, draw=draw))


@implements("open")
def open_(ctx: typer.Context, args: Args) -> None:
    """Open a source's link (its page, arXiv or DOI) or, with --code, its repository, in the browser."""
    records = query.resolve_all(index(ctx), args.names)
    if args.place is not None and not args.code:
        raise UsageError("--place needs --code: it opens a place in the code (invmap open --code NAME --place N)")
    links = []
    for r in records:
        link = r["code"] if args.code else r["url"]
        if args.place is not None:
            places = r.get("places") or []
            if not places:
                raise NotFoundError(f"{r['name']} ({r['id']}) has no pinned places in its code")
            if args.place > len(places):
                raise NotFoundError(
                    f"{r['name']} ({r['id']}) has {plural(len(places), 'place')} in its code, "
                    f"not {args.place} (see 'invmap show {r['id']}')"
                )
            link = places[args.place - 1].get("url")
        if not link:
            what = (
                "no public source repository (code)"
                if args.code
                else "no link: the catalog gives no url, arXiv id or DOI"
            )
            raise NotFoundError(f"{r['name']} ({r['id']}) has {what}")
        if not link.startswith(("https://", "http://")):
            raise NotFoundError(f"{r['name']} ({r['id']}) has a link that is not http(s); not opening it")
        links.append(link)
    env = state(ctx).env
    for link in links:
        if args.print_only or not _open_in_browser(link, env):
            write(link + "\n")


def _open_in_browser(link: str, env: Environment) -> bool:
    """True if a browser took the link; False where there is none (a server, CI, no display), so we print it."""
    import webbrowser

    browser_var = env.get("BROWSER")
    if not env.graphical and not browser_var:
        return False  # a console browser (lynx, w3m) would take over the terminal: print instead
    if browser_var:
        for command in browser_var.split(os.pathsep):
            try:
                shlex.split(command)
            except ValueError as exc:
                raise FileAccessError(f"cannot use $BROWSER ({command!r}): {exc}") from None
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return False
    except ValueError as exc:  # a malformed $BROWSER that webbrowser tripped over
        raise FileAccessError(f"cannot use $BROWSER: {exc}") from None
    blocking = isinstance(browser, webbrowser.GenericBrowser) and not isinstance(browser, webbrowser.BackgroundBrowser)
    if blocking and not (env.stdin_isatty and env.stdout_isatty):
        return False
    try:
        return bool(browser.open(link))
    except (OSError, ValueError) as exc:
        raise FileAccessError(f"cannot start the browser: {exc}") from None
