"""Catalog authoring: where, check, init, add, fmt, export, import."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from invmap import catalog as catalog_io
from invmap import complete, query
from invmap.cli.shared import (
    JsonOpt,
    LayerOpt,
    TypeOpt,
    YearOpt,
    selected,
    state,
    write,
)
from invmap.errors import CatalogError, NotFoundError, UsageError
from invmap.vocabulary import SOURCE_FIELDS

if TYPE_CHECKING:  # the models load with the catalog; --help and --version never need them
    from invmap.model import Catalog


commands = typer.Typer()

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
