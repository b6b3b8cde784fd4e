"""The one registry of output formats: a name, machine or human, the views it serves and its renderer.

A command prints one *view* of its result (`records`: a list of sources; `source`: one source;
`levels`, `counts`, `grid`, `document`, `terms`, `triage`, `links`, `diff`: the other shapes; `catalog`:
what `export` writes). A format serves the views it names; every other command refuses it with a usage
error naming the formats it does take. Renderers are named as `module:function` and imported only when
used, so this module is as light as the completion fast path needs (no typing, no rich): adding a
format is one entry here plus its renderer (and its tests, which iterate this registry).

A renderer is `render(result, context) -> iterator of str`; `result` is `render.Result`, `context`
`render.Context` (width, colour, hyperlinks, excel-safe cells).
"""

from __future__ import annotations

from collections import namedtuple

RECORDS, SOURCE, LEVELS, COUNTS, GRID, DOCUMENT, TERMS, TRIAGE, LINKS, DIFF, CATALOG, ESTIMATE, SWEEP = QUERY_VIEWS = (
    "records",
    "source",
    "levels",
    "counts",
    "grid",
    "document",
    "terms",
    "triage",
    "links",
    "diff",
    "catalog",
    "estimate",
    "sweep",  # a list of estimates, one a scenario (`render/sweep.py`)
)
# Views a person reads as the result's own drawing (`table` and `plain` alike: the table renderer
# draws `Result.draw`): the authoring commands (`where`, `check`, `check --links`, `add`/`edit`,
# `record check`) and `fields`; the machine formats keep the README's JSON contracts (`where --json`
# is one line).
WHERE, CHECK, LINK_CHECK, WRITTEN, RECORD_CHECK, FIELD_LIST = DRAWN_VIEWS = (
    "where",
    "check",
    "link check",
    "written",
    "record check",
    "fields",  # `invmap fields`: the names --fields takes, with their meanings
)
# `simulate batching|kv`: the runs side by side (table and plain), `ie`'s JSON (written a piece at a time).
SIMULATION = "simulation"
VIEWS = (*QUERY_VIEWS, *DRAWN_VIEWS, SIMULATION)
_LISTS = (RECORDS, SOURCE, LEVELS, TERMS, TRIAGE, LINKS)  # results that are a list of flat records


class Format(namedtuple("Format", ("name", "machine", "help", "views", "escapes", "extensions"), defaults=(False, ()))):
    """`views`: view -> renderer (`module:function`) for each view the format serves; `escapes`: the
    renderer writes control characters escaped itself (rich's tables, JSON's `\\u` escapes). Every
    other format's text has them escaped on the way out (`safe.data_text`): a record's field or a file
    name may hold any. `extensions`: the file names that mean it (`export -o map.bib`)."""

    __slots__ = ()


def _each(views, renderer):
    return {view: renderer for view in views}


FORMATS: tuple[Format, ...] = (
    Format(
        "table",
        False,
        "a table drawn to the terminal's width (the default on a terminal)",
        _each(
            (*_LISTS, COUNTS, GRID, DOCUMENT, DIFF, ESTIMATE, SWEEP, *DRAWN_VIEWS, SIMULATION),
            "invmap.render.tables:table",
        ),
        True,
    ),
    Format(
        "json",
        True,
        "JSON: an array of objects (one object for `show` and the overviews)",
        {
            **_each(
                (*_LISTS, COUNTS, GRID, DOCUMENT, DIFF, CATALOG, ESTIMATE, SWEEP, *DRAWN_VIEWS),
                "invmap.render.machine:json_text",
            ),
            WHERE: "invmap.render.machine:jsonl_text",  # `where --json` is one line
            SIMULATION: "invmap.render.simulate_json:json_text",
        },
        True,
        (".json",),
    ),
    Format(
        "jsonl",
        True,
        "one JSON object per line",
        _each((*_LISTS, CATALOG, SWEEP, *DRAWN_VIEWS), "invmap.render.machine:jsonl_text"),
        True,
        (".jsonl",),
    ),
    *(
        Format(
            name,
            True,
            f"{separated}-separated values with a header row",
            _each((*_LISTS, COUNTS, GRID, DIFF, CATALOG, SWEEP), f"invmap.render.machine:{name}_text"),
            extensions=(f".{name}",),
        )
        for name, separated in (("csv", "comma"), ("tsv", "tab"))
    ),
    Format(
        "markdown",
        False,
        "a GitHub Markdown table (export: the seed's whole document)",
        {
            **_each((*_LISTS, COUNTS, GRID, DIFF), "invmap.render.machine:markdown_text"),
            DOCUMENT: "invmap.render.documents:document_markdown",
            CATALOG: "invmap.interchange:markdown_document",
        },
        extensions=(".md", ".markdown"),
    ),
    Format(
        "plain",
        False,
        "tab-separated lines without a header (the default in a pipe)",
        {
            **_each((*_LISTS, COUNTS, GRID, DIFF), "invmap.render.machine:plain_text"),
            DOCUMENT: "invmap.render.documents:document_plain",
            ESTIMATE: "invmap.render.estimate:plain_text",
            SIMULATION: "invmap.render.simulate:plain_text",
            SWEEP: "invmap.render.sweep:plain_text",
            **_each(DRAWN_VIEWS, "invmap.render.tables:table"),
        },
    ),
    Format(
        "bibtex",
        True,
        "BibTeX, one entry per source",
        {CATALOG: "invmap.interchange:bibtex_document"},
        extensions=(".bib",),
    ),
    Format(
        "toml",
        True,
        "the catalog's canonical TOML",
        {CATALOG: "invmap.interchange:toml_document"},
        extensions=(".toml",),
    ),
)

BY_NAME: dict[str, Format] = {f.name: f for f in FORMATS}
NAMES: tuple[str, ...] = tuple(f.name for f in FORMATS)
MACHINE: frozenset[str] = frozenset(f.name for f in FORMATS if f.machine)


def for_path(path: str, view: str = CATALOG) -> str | None:
    """The format a file name's extension means (`map.bib` -> bibtex), among those serving `view`."""
    lowered = path.lower()
    return next((f.name for f in FORMATS if view in f.views and lowered.endswith(f.extensions or ("\0",))), None)


def names_for(view: str) -> tuple[str, ...]:
    """The formats that serve `view`, in registry order."""
    return tuple(f.name for f in FORMATS if view in f.views)


def renderer(name: str, view: str):
    """The renderer of format `name` for `view` (imported now)."""
    import importlib

    chosen = BY_NAME[name]
    module, _, function = chosen.views[view].partition(":")
    render = getattr(importlib.import_module(module), function)
    if chosen.escapes:
        return render
    from invmap.safe import data_text

    return lambda result, context: map(data_text, render(result, context))
