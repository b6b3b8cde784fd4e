"""`check` and `check --links` without the command line: a catalog's problems and warnings, each
with its line and column where one can be told, and its links asked, the permanent redirects among
them rewritten on request. Results are plain data; the CLI renders them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from invmap import catalog as catalogs
from invmap import spans, validation, writers
from invmap.errors import CatalogError, FileAccessError, InvmapError, UsageError

Located = list[tuple[str, "tuple[int, int] | None"]]


@dataclass
class CheckReport:
    """What `check` found in the catalog at `location`: valid or not, the number of sources, every
    problem (when invalid, with the exit code it means) and every warning (when valid)."""

    location: Any
    valid: bool
    sources: int | None
    problems: list[str]
    warnings: list[str]
    exit_code: int = 0

    def located(self, most: int | None = None) -> Located:
        """The problems (or, when valid, the warnings; the first `most` of them) each with its (line,
        column) in the file."""
        found = self.problems if not self.valid else self.warnings
        return located(self.location, found if most is None else found[:most])

    def data(self) -> dict[str, Any]:
        """The README's `check --json`: `{path, valid, sources, problems, warnings, details}`."""
        details = (
            []
            if self.valid
            else [{"problem": p, "line": at and at[0], "column": at and at[1]} for p, at in self.located()]
        )
        return {
            "path": self.location.path,
            "valid": self.valid,
            "sources": self.sources,
            "problems": self.problems,
            "warnings": self.warnings,
            "details": details,
        }


def check(location: Any) -> CheckReport:
    """Validate the catalog at `location` (a file that cannot be read still raises)."""
    try:
        cat = catalogs.load(location)
    except CatalogError as exc:
        return CheckReport(location, False, None, _of_base(location, exc), [], exc.exit_code)
    return CheckReport(location, True, len(cat.sources), [], validation.warnings(cat))


def _of_base(location: Any, exc: CatalogError) -> list[str]:
    """The problems of a file the catalog extends (a missing or invalid base) name that file: the
    report is about the overlay, and "no such file" alone would seem to be about it."""
    import os

    where = getattr(exc, "path", None)
    if not where or location.is_stdin or os.path.realpath(str(where)) == os.path.realpath(location.path):
        return list(exc.problems)
    return [f"the base catalog {where} ([catalog] extends): {p}" for p in exc.problems]


def located(location: Any, problems: list[str]) -> Located:
    """Each problem with its (line, column) in the file, where one can be told (not for stdin)."""
    if not problems or location.is_stdin:
        return [(p, None) for p in problems]
    try:
        data = catalogs.read_bytes(location.path)
    except InvmapError:
        return [(p, None) for p in problems]

    return list(zip(problems, spans.locate_problems(data, problems)))


# --- check --links -------------------------------------------------------------------------------


@dataclass
class LinkCheckOptions:
    """`check --links`: the catalog, the sources named (none: every source), and how to ask."""

    location: Any
    ids: Sequence[str] = ()
    max_age: str = "24h"
    per_host: int = 2
    timeout: float = 10.0
    update_redirects: bool = False


LINK_FIELDS = ("id", "field", "url", "status", "code", "final_url", "error")


def links_to_check(opts: LinkCheckOptions, index: Callable[[], Any]) -> list[Any]:
    """The links of the sources chosen (`opts.ids` resolved in `index()`, as `show` resolves names),
    every option checked first."""
    from invmap import links as linking

    max_age(opts)
    if not opts.timeout > 0:
        raise UsageError(f"--timeout must be more than 0 seconds, not {opts.timeout:g}")
    if opts.update_redirects:
        writers.require_writable(opts.location)
    cat = catalogs.load(opts.location)
    chosen = cat.sources
    if opts.ids:
        from invmap import query

        wanted = [r["id"] for r in query.resolve_all(index(), opts.ids)]
        by_id = {s.id: s for s in cat.sources}
        chosen = [by_id[i] for i in dict.fromkeys(wanted)]
    return linking.links_of(chosen)


def max_age(opts: LinkCheckOptions) -> float:
    """`--max-age` in seconds (a usage error when it cannot be read)."""
    from invmap import links as linking

    try:
        return linking.parse_age(opts.max_age)
    except ValueError as exc:
        raise UsageError(f"--max-age {exc}") from None


def url_count(found: Sequence[Any]) -> int:
    return len({link.url for link in found})


def check_links(found: Sequence[Any], opts: LinkCheckOptions, progress: Any = None) -> list[tuple[Any, Any]]:
    """Each link with its outcome (cached ones reused); no network at all is a `FileAccessError`."""
    from invmap import links as linking
    from invmap.cache import cache_folder

    results = linking.check(
        found,
        per_host=opts.per_host,
        timeout=opts.timeout,
        max_age=max_age(opts),
        cache_folder=cache_folder(),
        progress=progress,
    )
    if linking.network_unusable(results):
        first = next((o.error for _, o in results if o.error), "no answer")
        raise FileAccessError(f"cannot check links: the network cannot be used ({first})")
    return results


def shown(results: Sequence[tuple[Any, Any]], every: bool) -> list[tuple[Any, Any]]:
    """The links worth a line: those not plainly alive (every link with `every`)."""
    return [(link, o) for link, o in results if every or o.status != "alive"]


def link_rows(results: Sequence[tuple[Any, Any]]) -> list[dict[str, Any]]:
    """`check --links --json`: `[{id, field, url, status, code, final_url, error}]`."""
    return [
        {"id": k.id, "field": k.field, "url": k.url, **{f: getattr(o, f) for f in LINK_FIELDS[3:]}} for k, o in results
    ]


def counts(results: Sequence[tuple[Any, Any]]) -> tuple[int, int, int]:
    """(links checked, dead, to look at: neither alive nor dead)."""
    from invmap import links as linking

    dead = sum(o.status in linking.DEAD for _, o in results)
    warned = sum(o.status not in ("alive", *linking.DEAD) for _, o in results)
    return len(results), dead, warned


def any_dead(results: Sequence[tuple[Any, Any]]) -> bool:
    from invmap import links as linking

    return any(o.status in linking.DEAD for _, o in results)


def update_redirects(location: Any, results: Sequence[tuple[Any, Any]]) -> Iterator[tuple[str, str, str]]:
    """Stored url/code values whose first hop is a permanent redirect, rewritten to where it ends, a
    source at a time; yields (id, field, new url) as each is written."""
    from invmap import edits

    changes: dict[str, dict[str, str]] = {}
    for link, outcome in results:
        if link.stored and outcome.permanent and outcome.final_url and outcome.status in ("redirected",):
            changes.setdefault(link.id, {})[link.field] = outcome.final_url
    for ident, fields in changes.items():
        edits.edit_source(location, ident, fields, ())
        for name, url in fields.items():
            yield ident, name, url
