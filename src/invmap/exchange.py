"""`export` and `import` without the command line: which format an export writes, the sources it
holds (the filters applied), what a Markdown export cannot keep, and a Markdown map read into a
catalog (for `import` and `diff`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from invmap import catalog as catalogs
from invmap import validation
from invmap.errors import NotFoundError, UsageError
from invmap.fields import FIELDS


def markdown_catalog(data: bytes, name: str) -> Any:
    """A Markdown table with the seed's columns (the bytes of file `name`) as a validated catalog."""
    from invmap import interchange
    from invmap.reading import utf8_text

    return validation.validate(interchange.read_markdown(utf8_text(data, name, "not UTF-8 text"), name), name)


def read_map(path: str) -> Any:
    """The Markdown map at `path` ('-': stdin) as a validated catalog."""
    return markdown_catalog(catalogs.read_bytes(path), path)


def export_format(given: str | None, output_path: str | None) -> tuple[str, str | None]:
    """(the format to write, the one `output_path`'s extension means): `--format`, else the
    extension's, else Markdown; a format no export writes is a usage error."""
    from invmap import formats

    allowed = formats.names_for(formats.CATALOG)
    meant = formats.for_path(output_path) if to_file(output_path) else None
    fmt = given or meant or "markdown"
    if fmt not in allowed:
        raise UsageError(f"unknown export format '{fmt}' (valid formats: {', '.join(allowed)})")
    return fmt, meant


def to_file(output_path: str | None) -> bool:
    return output_path is not None and output_path != "-"


def selection(
    index: Any,
    location: Any,
    filter_values: dict[str, Any],
    leaves_out: Callable[[Any], None] | None = None,
) -> Any:
    """What `export` writes from `index`: the sources the filters choose (every source when none is
    given) and `catalog()`, the catalog at `location` holding just those (passed to `leaves_out`
    first, when given), as `(records, catalog)`. No source chosen is `NotFoundError`."""
    from invmap import query

    chosen = query.build_filters(index, filter_values)
    records = query.lazy_selection(index, chosen)
    if not records:
        raise NotFoundError("no source matches these filters: nothing to export")
    filtered = any(filter_values.values())
    wanted = {r["id"] for r in index.records(chosen.where, chosen.params, ("id",))} if filtered else None

    def catalog() -> Any:
        cat = catalogs.load(location)
        if wanted is not None:
            cat = cat.model_copy(update={"sources": [s for s in cat.sources if s.id in wanted]})
        if leaves_out is not None:
            leaves_out(cat)
        return cat

    return records, catalog


def markdown_leaves_out(cat: Any, links: bool) -> list[str]:
    """The fields (and tables) holding values that the seed's nine-column table cannot keep (the
    url and code are kept as links with `links`)."""
    from invmap.vocabulary import SEED_COLUMNS

    kept = {key for _, key in SEED_COLUMNS} | ({"url", "code"} if links else set())
    lost = [f.name for f in FIELDS if f.stored and f.name not in kept and any(getattr(s, f.name) for s in cat.sources)]
    return lost + [name for name in ("layers", "glossary") if getattr(cat, name)]
