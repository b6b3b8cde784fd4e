"""Catalog authoring: where, check, init, add, fmt, export, import."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from invmap import catalog as catalog_io
from invmap import complete
from invmap.cli.querying import examples
from invmap.cli.shared import JsonOpt, LayerOpt, TypeOpt, YearOpt, filters, index, say, state, write
from invmap.errors import CatalogError, NotFoundError, UsageError
from invmap.fields import FIELDS, SOURCE_FIELDS

if TYPE_CHECKING:  # the models load with the catalog; --help and --version never need them
    from invmap.index import Index
    from invmap.model import Catalog


commands = typer.Typer()

EXPORT_FORMATS = ("markdown", "csv", "tsv", "json", "jsonl", "bibtex", "toml")
OutputOpt = Annotated[
    Optional[str],
    typer.Option("--output", "-o", metavar="PATH", help="Write to PATH ('-' is stdout) instead of stdout."),
]
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite PATH if it exists.")]


def complete_export_format(incomplete: str) -> list[tuple[str, str]]:
    return complete.choices(EXPORT_FORMATS, incomplete)


def _to_output(target: str | None, text: Callable[[], str], force: bool) -> bool:
    """Write what `text()` returns to `target` (stdout when None or '-'); True if a file was written.
    For a file, `text()` runs under the file's lock, so it may read the very file it replaces."""
    if target is None or target == "-":
        write(text())
        return False
    catalog_io.write_output(target, text, force=force)
    return True


@commands.command("where", epilog=examples("invmap where", "invmap where --json | jq .index"))
def where(ctx: typer.Context, json_flag: JsonOpt = False) -> None:
    """Print which catalog file is active, and why; with --json, also the state of its index."""
    from invmap import index as index_db
    from invmap.render import to_json
    from invmap.safe import escape

    location = state(ctx).location
    if json_flag:
        write(
            to_json(
                {
                    "path": location.path,
                    "reason": location.reason,
                    "shipped": location.is_shipped,
                    "index": index_db.state_of(location.path),
                },
                indent=None,
            )
        )
    else:
        write(f"{escape(location.path)}\t({location.reason})\n")


@commands.command("check", epilog=examples("invmap check", "invmap --catalog my-map.toml check --json"))
def check(ctx: typer.Context, json_flag: JsonOpt = False) -> None:
    """Validate the active catalog and report every problem (exit 0 when valid, 3 when not)."""

    from invmap.render import to_json
    from invmap.safe import escape

    location = state(ctx).location
    try:
        cat = catalog_io.load(location)
    except CatalogError as exc:
        if not json_flag:
            raise
        write(
            to_json({"path": location.path, "valid": False, "sources": None, "problems": exc.problems, "warnings": []})
        )
        raise typer.Exit(exc.exit_code) from None
    warnings = catalog_io.warnings(cat)
    count = len(cat.sources)
    if json_flag:
        write(to_json({"path": location.path, "valid": True, "sources": count, "problems": [], "warnings": warnings}))
        return
    for line in warnings:
        say(f"warning: {location.path}: {line}")
    write(f"{escape(location.path)}: ok, {count} source{'s' if count != 1 else ''}\n")


@commands.command("init", epilog=examples("invmap init my-map.toml", "export INVMAP_CATALOG=$PWD/my-map.toml"))
def init(
    path: Annotated[str, typer.Argument(metavar="PATH", help="Where to write the new catalog.")],
    force: ForceOpt = False,
) -> None:
    """Start a catalog of your own: a copy of the shipped catalog at PATH."""
    from invmap.safe import escape

    written = escape(str(catalog_io.copy_shipped(path, force)))
    write(f"Wrote {written}; use it with --catalog {written} or INVMAP_CATALOG={written}\n")


# `add` takes one option per stored field of `fields.FIELDS`; these are the ones it may leave out.
_ADD_OPTIONAL = {"id": "Default: the name's slug.", "accessed": "Default: today."}


def _add(ctx: typer.Context, json_flag: bool = False, **values: Any) -> None:
    """Add a source to the active catalog (never the shipped one); a rejected add changes nothing."""
    import datetime as dt

    from invmap import query
    from invmap.sourcetext import slug

    location = state(ctx).location
    catalog_io.require_writable(location)
    for name, value in values.items():
        if isinstance(value, str) and any("\udc80" <= c <= "\udcff" for c in value):
            raise UsageError(f"--{name} is not valid UTF-8 text")
    entry: dict[str, Any] = {}
    for f in FIELDS:
        value = values.get(f.name)
        if not f.stored:
            continue
        if f.name == "id" and value is None:
            value = slug(values["name"])
        if f.name == "year" and value is not None:
            span = query.parse_year(value)
            if span.undated:
                continue
            if span.low is None or span.low != span.high:
                raise UsageError(f"--year takes one year or n.d., not a range: '{value}'")
            value = span.low
        if f.kind == "date":
            try:
                value = dt.date.fromisoformat(value) if value is not None else dt.date.today()
            except ValueError:
                raise UsageError(f"--{f.name} takes a date such as 2026-08-07, not '{value}'") from None
        if value is not None:
            entry[f.name] = value
    updated = catalog_io.add_source(location, entry)
    added = next(s for s in reversed(updated.sources) if s.id == entry["id"])
    if json_flag:
        from invmap.render import to_json

        write(to_json(added.to_dict()))
    else:
        from invmap.safe import escape

        write(f"Added {added.id} to {escape(location.path)}\n")


def _add_signature() -> inspect.Signature:
    """`add`'s options, derived from the field declaration."""
    params = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)]
    for f in FIELDS:
        if not f.stored:
            continue
        required = (f.required or f.name == "year") and f.name not in _ADD_OPTIONAL
        text = f.help[0].upper() + f.help[1:] + "."
        if f.name == "year":
            text = "Publication year, or n.d. for undated."
        elif f.example:
            text += f" Example: {f.example}."
        text += f" {_ADD_OPTIONAL.get(f.name, '')}".rstrip()
        option = typer.Option(f"--{f.name}", metavar="TEXT" if f.kind == "text" else f.kind.upper(), help=text)
        annotation = Annotated[str, option] if required else Annotated[Optional[str], option]
        params.append(
            inspect.Parameter(
                f.name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=annotation,
                default=inspect.Parameter.empty if required else None,
            )
        )
    params.append(inspect.Parameter("json_flag", inspect.Parameter.KEYWORD_ONLY, annotation=JsonOpt, default=False))
    return inspect.Signature(params)


def add(ctx: typer.Context, **values: Any) -> None:
    _add(ctx, **values)


add.__signature__ = _add_signature()  # type: ignore[attr-defined]
add.__annotations__ = {p.name: p.annotation for p in add.__signature__.parameters.values()}  # type: ignore[attr-defined]
add.__doc__ = _add.__doc__
commands.command(
    "add",
    epilog=examples(
        'invmap -c my-map.toml add --name TestServe --source "TestServe, Doe et al." --type Current \\',
        '    --year 2025 --layer "L2 and L5" --mechanism "..." --objective "..." --question "..." \\',
        '    --availability "Primary paper." --arxiv 2501.00001',
    ),
)(add)


@commands.command("fmt", epilog=examples("invmap -c my-map.toml fmt", "invmap -c my-map.toml fmt --check"))
def fmt_(
    ctx: typer.Context,
    check_only: Annotated[
        bool, typer.Option("--check", help="Change nothing; exit 1 if the file is not canonical.")
    ] = False,
) -> None:
    """Rewrite the active catalog in its one canonical form."""

    from invmap.safe import escape

    location = state(ctx).location
    changed = catalog_io.reformat(location, check_only)
    shown = escape(location.path)
    if not changed:
        write(f"{shown}: already canonical\n")
    elif check_only:
        say(f"{location.path}: not canonical; 'invmap fmt' would rewrite it")
        raise typer.Exit(1)
    else:
        write(f"{shown}: reformatted\n")


@commands.command(
    "export",
    epilog=examples(
        "invmap export --format bibtex -o map.bib",
        "invmap export --format markdown --links",
        "invmap export --format csv --excel-safe -o map.csv",
    ),
)
def export(
    ctx: typer.Context,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            metavar="FORMAT",
            autocompletion=complete_export_format,
            help=f"One of: {', '.join(EXPORT_FORMATS)}.",
        ),
    ] = "markdown",
    output_path: OutputOpt = None,
    force: ForceOpt = False,
    links: Annotated[
        bool, typer.Option("--links", help="Markdown: Source cells as links, availability linked to code.")
    ] = False,
    excel_safe: Annotated[
        bool, typer.Option("--excel-safe", help="csv/tsv: prefix ' to cells a spreadsheet would run as a formula.")
    ] = False,
    layer: LayerOpt = None,
    type_: TypeOpt = None,
    year: YearOpt = None,
) -> None:
    """Export the catalog (or the filtered sources) as Markdown like the seed, CSV, JSON, BibTeX or TOML."""
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"unknown export format '{fmt}' (valid formats: {', '.join(EXPORT_FORMATS)})")
    from invmap import query, render
    from invmap.index import open_catalog

    location = state(ctx).location
    filtered = bool(layer or type_ or year)
    filters(ctx, layer, type_, year)  # a bad filter value is a usage error before anything is written

    def records_text(idx: Index) -> Any:
        chosen = query.build_filters(idx, layer, type_, year)
        records = query.selection(idx, chosen)
        if not records:
            raise NotFoundError("no source matches these filters: nothing to export")
        return render.pieces(render.Result(records, list(SOURCE_FIELDS)), fmt, excel=excel_safe)

    def catalog_text() -> str:
        cat = catalog_io.load(location)
        if filtered:
            idx = open_catalog(location)
            chosen = query.build_filters(idx, layer, type_, year)
            wanted = {r["id"] for r in idx.records(chosen.where, chosen.params, ("id",))}
            if not wanted:
                raise NotFoundError("no source matches these filters: nothing to export")
            cat = cat.model_copy(update={"sources": [s for s in cat.sources if s.id in wanted]})
        return export_text(cat, fmt, links=links)

    if output_path is None or output_path == "-":
        if fmt in CATALOG_FORMATS:
            write(catalog_text())
        else:  # records only: read from the index and streamed, a batch at a time
            for piece in records_text(index(ctx)):
                write(piece)
        return
    # Into a file: the text is built under the file's lock from what the catalog holds then (the
    # file may be the catalog itself, and an `add` may be waiting for the lock or holding it).
    if fmt in CATALOG_FORMATS:
        _to_output(output_path, catalog_text, force)
    else:
        _to_output(output_path, lambda: "".join(records_text(open_catalog(location))), force)


CATALOG_FORMATS = ("markdown", "bibtex", "toml")  # written from the catalog itself (its notes, its layers)


def export_text(cat: Catalog, fmt: str, *, links: bool = False) -> str:
    """Markdown like the seed, BibTeX or TOML: the formats written from the catalog itself."""
    from invmap import interchange

    if fmt == "markdown":
        return interchange.to_markdown(cat, links=links)
    if fmt == "bibtex":
        return interchange.to_bibtex(cat)
    return catalog_io.dumps(cat)


@commands.command(
    "import", epilog=examples("invmap import research-map.md -o my-map.toml", "invmap export | invmap import -")
)
def import_(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="A Markdown file with the seed's table ('-' reads stdin).")
    ],
    output_path: OutputOpt = None,
    force: ForceOpt = False,
) -> None:
    """Turn a Markdown table with the seed's columns (cells may hold links) into a catalog (TOML)."""
    from invmap import interchange
    from invmap.safe import escape

    data = catalog_io.read_bytes(file)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CatalogError(file, ["not UTF-8 text"]) from None
    cat = catalog_io.validate(interchange.read_markdown(text, file), file)
    if _to_output(output_path, lambda: catalog_io.dumps(cat), force):
        count = len(cat.sources)
        write(f"Wrote {escape(str(output_path))}: {count} source{'s' if count != 1 else ''}\n")
