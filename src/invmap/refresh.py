"""`refresh` without the command line: what arXiv and Crossref say differently about a catalog's
sources (titles, author lists, venues, DOIs), and the write applying it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from invmap import catalog as catalogs
from invmap import writers


@dataclass
class RefreshOptions:
    """`refresh`: the catalog, the sources named (none: every one with an arXiv id or DOI), `write`."""

    location: Any
    ids: Sequence[str] = ()
    write: bool = False


def run(opts: RefreshOptions, index: Callable[[], Any]) -> list[dict[str, Any]]:
    """`[{id, fields: {name: [old, new]}}]` for the sources chosen (`opts.ids` resolved in `index()`),
    every request of the run within metadata's deadline; nothing is written (see `write`)."""
    from invmap import metadata

    if opts.write:
        writers.require_writable(opts.location)
    cat = catalogs.load(opts.location)
    chosen = cat.sources
    if opts.ids:
        from invmap import query

        by_id = {s.id: s for s in cat.sources}
        chosen = [by_id[r["id"]] for r in query.resolve_all(index(), opts.ids)]
    with metadata.run():
        return differences([s for s in chosen if s.arxiv or s.doi])


def write(location: Any, changed: list[dict[str, Any]]) -> None:
    """Every change validated together, then one write (or none)."""
    from invmap import edits

    edits.edit_sources(location, {c["id"]: {f: new for f, (_, new) in c["fields"].items()} for c in changed})


def differences(sources: list[Any]) -> list[dict[str, Any]]:
    """`[{id, fields: {name: [old, new]}}]`: what arXiv (for a preprint: title, authors, a DOI it has
    gained) or Crossref (for a DOI: title, authors, venue) says differently about each source."""
    from invmap import metadata

    preprints = metadata.arxiv_works([s.arxiv for s in sources if s.arxiv and not s.doi])
    changed: list[dict[str, Any]] = []
    for s in sources:
        if s.doi:
            work, asked = metadata.crossref_work(s.doi), ("title", "author_names", "venue")
        else:
            work, asked = preprints.get(s.arxiv or ""), ("title", "author_names", "doi")
        fields = compared(s, work, asked) if work is not None else {}
        if fields:
            changed.append({"id": s.id, "fields": fields})
    return changed


def compared(source: Any, work: Any, asked: Sequence[str]) -> dict[str, list[Any]]:
    """`{name: [old, new]}` for each field `asked` the service gives a value of that differs (an
    absent old list is `[]`)."""
    fields = {}
    for name in asked:
        old, new = getattr(source, name), getattr(work, name)
        if new and not same(old, new):
            fields[name] = [old if old is not None else ([] if name == "author_names" else None), new]
    return fields


def same(old: Any, new: Any) -> bool:
    """Titles and venues alike whatever their spacing and case; lists exactly."""
    if isinstance(old, str) and isinstance(new, str):
        return " ".join(old.split()).casefold() == " ".join(new.split()).casefold()
    return old == new


def rows(changed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per changed field (`change`, `id`, `field`, `old`, `new`), as `diff` has them."""
    from invmap import diffing

    return [
        {"change": "changed", "id": c["id"], "field": f, "old": diffing.cell(old), "new": diffing.cell(new)}
        for c in changed
        for f, (old, new) in c["fields"].items()
    ]
