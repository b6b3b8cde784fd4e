"""`export`, `import`, `diff` and `refresh`: flags -> the core (`exchange.py`, `diffing.py`,
`refresh.py`), the result rendered through the format registry, messages on stderr."""

from __future__ import annotations

from typing import Any

import typer

from invmap import canonical, exchange
from invmap.cli.authoring import to_output
from invmap.cli.build import Args, implements
from invmap.cli.shared import emit, filters, index, notice, output, say, state, write
from invmap.render import Result
from invmap.safe import escape
from invmap.text import plural

_LEFT_OUT_NOTE = (
    "note: a Markdown export keeps the seed's nine columns and leaves out {} "
    "('invmap import' derives id, name, authors, arXiv id and DOI from the Source cell again); "
    "--format toml or json keeps every field"
)


@implements("export")
def export(ctx: typer.Context, args: Args) -> None:
    """Export the catalog (or the filtered sources) as Markdown like the seed, CSV, JSON, BibTeX or TOML;
    without --format, the format `-o PATH`'s extension means (else Markdown)."""
    from invmap import formats, render
    from invmap.fields import SOURCE_FIELDS
    from invmap.index import open_catalog

    fmt, meant = exchange.export_format(args.fmt, args.output_path)
    if args.fmt and meant and meant != args.fmt:
        say(f"warning: writing {fmt} to {args.output_path}, a name that means {meant}")
    location = state(ctx).location
    filters(ctx, args)  # a bad filter value is a usage error before anything is written
    renderer = formats.renderer(fmt, formats.CATALOG)
    context = render.Context(excel=args.excel_safe, cell_links=args.links)

    def left_out(cat: Any) -> None:  # the seed's table has nine columns: say what it cannot keep
        lost = exchange.markdown_leaves_out(cat, args.links)
        if lost:
            say(_LEFT_OUT_NOTE.format(", ".join(lost)))

    def result(idx: Any) -> Any:
        records, catalog = exchange.selection(idx, location, args.filters, left_out if fmt == "markdown" else None)
        return render.Result(records, list(SOURCE_FIELDS), catalog=catalog)

    if not exchange.to_file(args.output_path):  # streamed, a batch at a time
        for piece in renderer(result(index(ctx)), context):
            write(piece)
        return
    # Into a file: the text is built under the file's lock from what the catalog holds then (the
    # file may be the catalog itself, and an `add` may be waiting for the lock or holding it).
    counted: list[int] = []

    def text() -> str:
        chosen = result(open_catalog(location))
        counted.append(len(chosen.rows))
        return "".join(renderer(chosen, context))

    to_output(args.output_path, text, args.force)
    count = counted[-1]
    write(f"Wrote {escape(args.output_path)}: {plural(count, 'source')} as {fmt}\n")


@implements("import")
def import_(ctx: typer.Context, args: Args) -> None:
    """Turn a Markdown table with the seed's columns (cells may hold links) into a catalog (TOML)."""
    cat = exchange.read_map(args.file)
    if to_output(args.output_path, lambda: canonical.dumps(cat), args.force):
        count = len(cat.sources)
        write(f"Wrote {escape(str(args.output_path))}: {plural(count, 'source')}\n")


@implements("diff")
def diff(ctx: typer.Context, args: Args) -> None:
    """What changed from A to B; exit 1 when anything did (like diff)."""
    from invmap import diffing

    difference = diffing.run(args.old, args.new)
    out = output(ctx, args)
    emit(out, Result(diffing.rows(difference), diffing.FIELDS, data=difference))
    if not diffing.is_empty(difference):
        raise typer.Exit(1)
    if not out.machine and state(ctx).env.stdout_isatty:
        notice("no differences")  # a table of nothing prints nothing: say why


@implements("refresh")
def refresh(ctx: typer.Context, args: Args) -> None:
    """Compare the catalog's titles, author lists, venues and DOIs with arXiv and Crossref; --write
    applies what differs. Exit 1 when something differs (and was not written), like diff."""
    from invmap import diffing
    from invmap import refresh as refreshing

    out = output(ctx, args)  # a wrong --format is refused before any request
    opts = refreshing.RefreshOptions(state(ctx).location, args.ids or (), args.write)
    changed = refreshing.run(opts, lambda: index(ctx))
    emit(out, Result(refreshing.rows(changed), diffing.FIELDS, data=changed))
    if args.write and changed:  # every change validated together, then one write (or none)
        refreshing.write(opts.location, changed)
        say(f"updated {plural(len(changed), 'source')} in {opts.location.path}")
        return
    if changed:
        raise typer.Exit(1)
