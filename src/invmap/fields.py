"""The one declaration of a source's fields, and of the kinds of value a field holds.

Everything that knows about fields derives from `FIELDS`: the pydantic model (`model.py`), the JSON
key order, the SQLite index's columns and the search weights (`index/`), table headers and column
rules (`render/`), `invmap fields`, `--fields` and `--sort` and their completion, and the options of
`add` and `edit`. Adding a field means adding one line here; a field of a new kind (a number, say)
means one `Kind` subclass too, which knows its SQL type, its command-line parsing, and its JSON, human
and machine forms. No pydantic, no rich, no typing: completion and help read this module too.
"""

from __future__ import annotations

from collections import namedtuple

LIST_SEPARATOR = ";"  # lists in csv, tsv and plain output; a list item may not contain it
_ROW_SEPARATOR = "\x1f"  # lists inside the index (a control character, which catalog text never holds)


class Kind:
    """Text: the default kind. Each method is one form of a value; `None` is an absent value."""

    name = "text"
    sql = "TEXT"
    metavar = "TEXT"
    many = False  # a list: `add --X` repeats; `edit` has --X (add), --remove-X and --set-Xs (`Field`)

    def json(self, value):  # the model's value -> the JSON contract's
        return value

    def row(self, value):  # the JSON contract's value -> the index's column
        return value

    def unrow(self, value):  # the index's column -> the JSON contract's value
        return value

    def human(self, value) -> str:  # tables, Markdown, `show`
        return "" if value is None else str(value)

    def machine(self, value) -> str:  # csv, tsv and plain cells
        return "" if value is None else str(value)

    def parse(self, texts):  # a command-line value (a list of them for a list) -> the model's; ValueError
        return texts

    def parse_items(self, text: str):  # a list's `--set-Xs "a;b"` -> the model's value ([] clears it)
        return self.parse(text.split(LIST_SEPARATOR)) or []

    def sort_key(self, value):  # (group, key): absent values sort last in either direction
        return (value is None, "" if value is None else str(value).casefold())


class Label(Kind):
    """A layer label: text that names level codes (`L2 and L3`); sorted by its first code."""

    name = "label"

    def sort_key(self, value):
        from invmap.vocabulary import LAYER_CODES, layer_codes

        codes = layer_codes(value) if value else ()
        return (False, (LAYER_CODES.index(codes[0]) if codes else len(LAYER_CODES), (value or "").casefold()))


class Year(Kind):
    """A year, or None for an undated source (`n.d.`)."""

    name = "year"
    sql = "INTEGER"
    metavar = "YEAR"

    def human(self, value) -> str:
        return "n.d." if value is None else str(value)

    def parse(self, texts):
        text = texts.strip()
        if text.casefold() in ("n.d.", "n.d", "nd"):
            return None
        if text.isascii() and text.isdigit() and len(text) == 4:
            return int(text)
        raise ValueError(f"takes a year such as 2024, or n.d. for an undated source, not '{texts}'")

    def sort_key(self, value):
        return (value is None, 0 if value is None else value)


class Date(Kind):
    """A calendar date: a TOML date in the catalog, `YYYY-MM-DD` text everywhere else."""

    name = "date"
    metavar = "DATE"

    def json(self, value):
        return None if value is None else value.isoformat()

    def parse(self, texts):
        import datetime as dt

        try:
            return dt.date.fromisoformat(texts.strip())
        except ValueError:
            raise ValueError(f"takes a date such as 2026-08-07, not '{texts}'") from None


class List(Kind):
    """A list of short texts (`keywords`, `author_names`): an array in TOML and JSON (`[]` when absent),
    `;`-joined in csv, tsv and plain output, `, `-joined in tables."""

    name = "list"
    many = True

    def json(self, value):
        return list(value) if value else []

    def row(self, value):
        return _ROW_SEPARATOR.join(value) if value else None

    def unrow(self, value):
        return value.split(_ROW_SEPARATOR) if value else []

    def human(self, value) -> str:
        return ", ".join(value) if value else ""

    def machine(self, value) -> str:
        return LIST_SEPARATOR.join(value) if value else ""

    def parse(self, texts):
        return [t.strip() for t in texts if t.strip()] or None

    def sort_key(self, value):
        return (not value, LIST_SEPARATOR.join(value or ()).casefold())


class Codes(List):
    """The level codes a layer label covers (derived: never stored, never given)."""

    name = "codes"

    def row(self, value):
        return LIST_SEPARATOR.join(value) if value else ""

    def unrow(self, value):
        return value.split(LIST_SEPARATOR) if value else []


class Choice(Kind):
    """One of a fixed set of words (`entry_type`): matched ignoring case, stored as declared."""

    name = "choice"

    def __init__(self, *choices: str) -> None:
        self.choices = choices
        self.metavar = "[" + "|".join(choices) + "]"

    def parse(self, texts):
        folded = {c.casefold(): c for c in self.choices}
        try:
            return folded[texts.strip().casefold()]
        except KeyError:
            raise ValueError(f"takes one of {', '.join(self.choices)}, not '{texts}'") from None


class Tables(Kind):
    """A list of small tables (`places`, `settings`): each item a table of the declared `columns`
    (`Column`: name, required, searched, form, help). In TOML an array of inline tables, in JSON an
    array of objects (every column, null when absent, then the `derived` keys), in csv, tsv and plain
    each item's `cell` (`;`-joined), in tables each item's `label`. On the command line an item is
    `key=value` pairs joined by `;` (`path=vllm/x.py;commit=...`); the option is repeatable and the
    items given replace the whole list. `defaults`: a column that, absent, takes the value of one of
    the source's fields (a place's `repo` is the source's `code`). In the index an item is its searched
    columns, then (after U+001D) the others, so full-text search sees only the searched ones."""

    name = "tables"
    many = True
    metavar = "KEY=VALUE;..."

    def __init__(self, columns, cell, label, defaults=None, derived=None) -> None:
        self.columns = tuple(columns)
        self.names = tuple(c.name for c in self.columns)
        self.searched = tuple(c.name for c in self.columns if c.searched)
        self.hidden = tuple(c.name for c in self.columns if not c.searched)
        self._cell, self._label = cell, label
        self.defaults = dict(defaults or {})
        self.derived = dict(derived or {})

    def fill(self, items, source):
        """Stored items -> items with each default column filled from the source's fields (a mapping)."""
        if not items:
            return items
        filled = []
        for item in items:
            item = dict(item)
            for column, field in self.defaults.items():
                if item.get(column) is None and source.get(field) is not None:
                    item[column] = source.get(field)
            filled.append(item)
        return filled

    def json(self, value):
        if not value:
            return []
        out = []
        for item in value:
            shown = {c: item.get(c) for c in self.names}
            shown.update({k: derive(shown) for k, derive in self.derived.items()})
            out.append(shown)
        return out

    def row(self, value):
        if not value:
            return None
        sep = "\x1e"

        def part(names):
            return _ROW_SEPARATOR.join(sep.join(item.get(c) or "" for c in names) for item in value)

        return part(self.searched) + "\x1d" + part(self.hidden)

    def unrow(self, value):
        if not value:
            return []
        searched, _, hidden = value.partition("\x1d")
        items = []
        for seen, unseen in zip(searched.split(_ROW_SEPARATOR), hidden.split(_ROW_SEPARATOR)):
            cells = dict(zip(self.searched, seen.split("\x1e")))
            cells.update(zip(self.hidden, unseen.split("\x1e")))
            items.append({c: cells.get(c) or None for c in self.names})
        return self.json(items)

    def human(self, value) -> str:
        return "; ".join(self._label(item) for item in value) if value else ""

    def machine(self, value) -> str:
        return LIST_SEPARATOR.join(self._cell(item) for item in self.json(value)) if value else ""

    def parse(self, texts):
        """`key=value;key=value` texts -> items; ValueError naming what is wrong."""
        items = []
        for text in texts:
            if not text.strip():
                continue
            item = {}
            for pair in text.split(LIST_SEPARATOR):
                if not pair.strip():
                    continue
                key, eq, val = pair.partition("=")
                key, val = key.strip(), val.strip()
                if not eq or key not in self.names:
                    raise ValueError(
                        f"takes key=value pairs joined by '{LIST_SEPARATOR}' (keys: {', '.join(self.names)}), "
                        f"not '{pair.strip()}'"
                    )
                if key in item:
                    raise ValueError(f"gives '{key}' twice in '{text}'")
                if val:
                    item[key] = val
            missing = [c.name for c in self.columns if c.required and c.name not in item]
            if missing:
                raise ValueError(f"needs {' and '.join(missing)} in '{text}'")
            items.append({c: item[c] for c in self.names if c in item})
        return items or None

    def sort_key(self, value):
        return (not value, self.machine(value).casefold())


Column = namedtuple("Column", ("name", "required", "searched", "form", "help"))


def permalink(place) -> str | None:
    """A place's permalink: `REPO/blob/COMMIT/PATH` for a file, `REPO/tree/COMMIT/PATH` for a folder
    (a path ending in `/`); None without a repository."""
    repo, commit, path = place.get("repo"), place.get("commit"), place.get("path")
    if not (repo and commit and path):
        return None
    folder = path.endswith("/")
    return f"{repo.rstrip('/')}/{'tree' if folder else 'blob'}/{commit}/{path.rstrip('/') if folder else path}"


PLACES = Tables(
    (
        Column("repo", False, False, "url", "the repository, when not the source's code"),
        Column("path", True, True, "path", "a file, or a folder ending in /, relative to the repository's root"),
        Column("symbol", False, True, "text", "a class or function in it"),
        Column("note", False, True, "text", "a few words on what is there"),
        Column("commit", True, False, "commit", "the 40-hex commit the path was read at"),
        Column("version", False, False, "version", "the release tag that commit is, when it is one (v0.30.0)"),
    ),
    cell=lambda item: item.get("url") or item.get("path") or "",
    label=lambda item: item["path"] + (f" ({item['symbol']})" if item.get("symbol") else ""),
    defaults={"repo": "code"},
    derived={"url": permalink},
)
SETTINGS = Tables(
    (
        Column("engine", True, True, "text", "the engine (vLLM, SGLang, TGI, ...)"),
        Column("flag", True, True, "text", "the flag, configuration key or environment variable"),
        Column("version", False, False, "version", "the release tag it was read at (v0.30.0), else main@ and a commit"),
        Column("commit", False, False, "commit", "the 40-hex commit of that version"),
        Column("file", False, False, "path", "the file it was read from, relative to the engine's repository"),
        Column("note", False, True, "text", "what it does for the mechanism"),
        Column(
            "deprecated",
            False,
            True,
            "deprecation",
            "the version that deprecated or removed it and how ('v0.13.0: deprecated; not read from v0.15.0')",
        ),
        Column("replaced_by", False, True, "text", "the flag or variable to use instead"),
    ),
    cell=lambda item: f"{item['engine']} {item['flag']}",
    label=lambda item: f"{item['engine']} {item['flag']}" + (" (deprecated)" if item.get("deprecated") else ""),
)


class Number(Kind):
    """A score (0-100, one decimal): search, related and triage only."""

    name = "number"
    sql = "REAL"

    def human(self, value) -> str:
        return "" if value is None else f"{value:.1f}"


class Mapping(Kind):
    """Words read as others (`corrected`: {typed: used}): an object in JSON (`{}` when none),
    `typed=used` pairs `;`-joined in csv, tsv and plain output, `typed → used` in tables."""

    name = "mapping"

    def json(self, value):
        return dict(value) if value else {}

    def human(self, value) -> str:
        return ", ".join(f"{k} → {v}" for k, v in value.items()) if value else ""

    def machine(self, value) -> str:
        return LIST_SEPARATOR.join(f"{k}={v}" for k, v in value.items()) if value else ""


TEXT, LABEL, YEAR, DATE, LIST, CODES, NUMBER = Kind(), Label(), Year(), Date(), List(), Codes(), Number()
MAPPING = Mapping()
ENTRY_TYPES = Choice("inproceedings", "article", "techreport", "misc")


class Field(
    namedtuple(  # collections' namedtuple, not typing's: a TAB press reads this module, and typing costs ~2 ms
        "Field",
        ("name", "header", "help", "kind", "required", "stored", "wrap", "example", "weight", "option", "sortable"),
        defaults=(TEXT, False, True, False, "", 0.0, "", False),
    )
):
    """One field: `name`, table `header`, `help`; its `kind` (a `Kind`); `required`; `stored` (False:
    derived, never written to catalog.toml); `wrap` (True: a sentence that may wrap at spaces; False:
    never split across lines); `example` for `add --FIELD`; `weight`: how much a search match in it
    counts (0: not searched unless named with `--in`); `option`: the name of its `add`/`edit` option
    when not the field's own (a list's option is singular and repeatable: `--keyword`); `sortable`:
    a `--sort` key."""

    __slots__ = ()

    @property
    def flag(self) -> str:
        """`add`'s and `edit`'s option; for a list it adds one item (`--keyword`)."""
        return "--" + (self.option or self.name).replace("_", "-")

    @property
    def remove_flag(self) -> str:
        """A list's `edit` option removing one item (`--remove-keyword`)."""
        return "--remove-" + (self.option or self.name).replace("_", "-")

    @property
    def set_flag(self) -> str:
        """A list's `edit` option replacing the whole list (`--set-keywords "a;b"`)."""
        return "--set-" + self.name.replace("_", "-")


FIELDS: tuple[Field, ...] = (
    Field(
        "id",
        "ID",
        "unique lowercase kebab-case id, at most 24 characters (pagedattention, llm-d)",
        required=True,
        example="pagedattention",
        weight=8.0,
        sortable=True,
    ),
    Field(
        "name",
        "Name",
        "short name, at most 32 characters (PagedAttention, vLLM)",
        required=True,
        example="PagedAttention",
        weight=10.0,
        sortable=True,
    ),
    Field(
        "source",
        "Source",
        "the seed's Source cell, verbatim",
        required=True,
        wrap=True,
        example="PagedAttention, Kwon et al.",
        weight=3.0,
    ),
    Field(
        "title",
        "Title",
        "the primary paper's full title, or null",
        wrap=True,
        example="Efficient Memory Management for Large Language Model Serving with PagedAttention",
        weight=5.0,
    ),
    Field(
        "keywords",
        "Keywords",
        "the named techniques, problems solved and aliases the source is known for, beyond its cells",
        kind=LIST,
        wrap=True,
        example="block table",
        weight=5.0,
        option="keyword",
    ),
    Field(
        "authors",
        "Authors",
        "authors as the Source names them, or null",
        wrap=True,
        example="Kwon et al.",
        weight=2.0,
    ),
    Field(
        "author_names",
        "Author names",
        "the full author list, as the paper gives it",
        kind=LIST,
        wrap=True,
        example="Woosuk Kwon",
        weight=2.0,
        option="author_name",
    ),
    Field("arxiv", "arXiv", "arXiv id, or null", example="2309.06180"),
    Field("doi", "DOI", "DOI, or null", example="10.1145/3600006.3613165"),
    Field("url", "URL", "the catalog's own link, else the arXiv or DOI page, or null", example="https://docs.vllm.ai/"),
    Field(
        "code",
        "Code",
        "the public source repository (http or https), or null",
        example="https://github.com/vllm-project/vllm",
    ),
    Field(
        "settings",
        "Settings",
        "engine flags that switch the mechanism on or tune it: engine, flag, version, commit, file, note, "
        "deprecated, replaced_by",
        kind=SETTINGS,
        wrap=True,
        example="engine=vLLM;flag=--enable-prefix-caching;version=v0.30.0;"
        "commit=ced6857afa0ea7b2e3f0846a62e1394e90f15607;file=vllm/engine/arg_utils.py;note=automatic prefix caching",
        weight=0.5,
        option="setting",
    ),
    Field(
        "seam",
        "Where to look",
        "where in the code base its mechanism lives, or null",
        wrap=True,
        example="the scheduler and the KV-cache manager",
        weight=1.0,
    ),
    Field(
        "places",
        "Places",
        "pinned places in the code: repo (default: the code link), path (a folder ends in /), symbol, note, commit, "
        "version (the release tag the commit is)",
        kind=PLACES,
        wrap=True,
        example="repo=https://github.com/vllm-project/vllm;path=vllm/v1/core/block_pool.py;symbol=BlockPool;"
        "note=the pool of physical KV blocks;commit=c59cb7941357443da7c5eef75cfa8697d683d228",
        weight=0.5,
        option="place",
    ),
    Field(
        "recreate",
        "Recreate",
        "the invmap commands that recreate the source's mechanism under the field guide's rules (simulate, estimate)",
        kind=LIST,
        wrap=True,
        example="invmap simulate batching --strategy continuous",
        option="recreate",
    ),
    Field(
        "type",
        "Type",
        "direction/type (Current, Foundational, Official project, ...)",
        required=True,
        example="Current",
        sortable=True,
    ),
    Field("year", "Year", "publication year, or null for n.d.", kind=YEAR, example="2023", sortable=True),
    Field(
        "venue", "Venue", "where it was published (SOSP 2023, arXiv preprint), or null", example="SOSP 2023", weight=1.0
    ),
    Field(
        "published_in",
        "Published in",
        "the proceedings, journal or institution in full (BibTeX's booktitle, journal or institution), or null",
        wrap=True,
        example="Proceedings of the ACM SIGOPS 29th Symposium on Operating Systems Principles",
        weight=0.5,
    ),
    Field(
        "entry_type",
        "Entry type",
        "its BibTeX entry type: inproceedings, article, techreport or misc (the default)",
        kind=ENTRY_TYPES,
        example="inproceedings",
    ),
    Field("report_number", "Report number", "a technical report's number, or null", example="UCB/EECS-2008-134"),
    Field(
        "layer",
        "Layer",
        "layer label, verbatim (L3, L2 and L3, Runtime lever)",
        kind=LABEL,
        required=True,
        wrap=True,
        example="L2 and L3",
        weight=1.0,
        sortable=True,
    ),
    Field("layers", "Codes", "layer codes the label covers (L1..L6, RL, P0)", kind=CODES, stored=False),
    Field("mechanism", "Central mechanism", "central mechanism", required=True, wrap=True, weight=2.0),
    Field("objective", "Reported objective", "reported objective", required=True, wrap=True, weight=1.5),
    Field(
        "question",
        "Unresolved engineering question",
        "unresolved engineering question",
        required=True,
        wrap=True,
        weight=1.5,
    ),
    Field(
        "availability",
        "Implementation availability",
        "implementation availability",
        required=True,
        wrap=True,
        weight=0.5,
    ),
    Field(
        "accessed",
        "Accessed",
        "access date, YYYY-MM-DD",
        kind=DATE,
        required=True,
        example="2026-08-07",
        sortable=True,
    ),
)

BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}

# The JSON contract's key order, and the order of columns everywhere.
SOURCE_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS)
STORED_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.stored)
# Identifiers: found by `show`, never searched for words.
IDENTIFIERS: tuple[str, ...] = ("arxiv", "doi", "url", "code")
# invmap's own commands (`recreate`): not the source's words, so never searched nor weighed by `related`.
COMMAND_FIELDS: tuple[str, ...] = ("recreate",)
# Fields of words (searchable with --in): every stored field of text, a label or a list, but the
# identifiers and invmap's commands.
TEXT_FIELDS: tuple[str, ...] = tuple(
    f.name
    for f in FIELDS
    if f.stored
    and f.kind.name in ("text", "label", "list", "tables")
    and f.name not in IDENTIFIERS
    and f.name not in COMMAND_FIELDS
)
# What `search` looks at unless told otherwise (the words of each source's levels too: `index.py`).
DEFAULT_SEARCH: tuple[str, ...] = tuple(f.name for f in FIELDS if f.weight > 0)
SORT_KEYS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.sortable)

# Fields a command adds to its records, beside the source's: scores, why a result matched, records.
EXTRA: tuple[Field, ...] = (
    Field("score", "Score", "search, related or triage score, 0-100 (those commands only)", kind=NUMBER),
    Field("matched", "Matched", "the fields a search result matched in, best first (search only)", kind=LIST),
    Field(
        "corrected",
        "Corrected",
        "the query's words search read as others, {typed: used}: typos, a quoted phrase no source holds (search only)",
        kind=MAPPING,
    ),
    Field("why", "Why", "the best-matching field with the matched words marked (search only)", wrap=True),
    Field("records", "Records", "valid experiment records addressing the question (questions with records)", kind=LIST),
    Field("reports", "Reports", "ids of the real reports the source addresses (show only)", kind=LIST, wrap=True),
    Field(
        "invalid_records",
        "Invalid records",
        "records citing the source that fail 'record check' (questions with records)",
        kind=LIST,
    ),
    Field(
        "estimated_records",
        "Estimated records",
        "the valid records among them that are estimates, which leave a question open (questions with records)",
        kind=LIST,
    ),
    Field(
        "simulated_records",
        "Simulated records",
        "the valid records among them that are simulations, which leave a question open too (questions with records)",
        kind=LIST,
    ),
)
SCORED_FIELDS: tuple[str, ...] = (*SOURCE_FIELDS, "score")
SEARCH_RESULT_FIELDS: tuple[str, ...] = (*SOURCE_FIELDS, "score", "matched", "corrected", "why")

HEADERS: dict[str, str] = {f.name: f.header for f in (*FIELDS, *EXTRA)}
FIELD_HELP: dict[str, str] = {f.name: f.help for f in (*FIELDS, *EXTRA)}
WRAPPING: frozenset[str] = frozenset(f.name for f in (*FIELDS, *EXTRA) if f.wrap)
KINDS: dict[str, Kind] = {f.name: f.kind for f in (*FIELDS, *EXTRA)}


def _folded(text: str) -> str:
    return "".join(c for c in text.casefold() if c.isalnum())


def _aliases() -> dict[str, str]:
    """A field by the words of its header, as `show` labels it (`where to look`, `where-to-look`) and
    by the header's first word when no field name starts with it and no other header does (`where`,
    `unresolved`): `--in` and `field:word` accept them."""
    out: dict[str, str] = {}
    firsts = [f.header.split()[0].casefold() for f in FIELDS]
    for f, first in zip(FIELDS, firsts):
        out.setdefault(_folded(f.header), f.name)
        if firsts.count(first) == 1 and not any(g.name.startswith(first) for g in FIELDS):
            out.setdefault(_folded(first), f.name)
    for f in FIELDS:  # a field's own name always means itself
        out[_folded(f.name)] = f.name
    return out


FIELD_ALIASES: dict[str, str] = _aliases()


def field_named(text: str) -> str:
    """The field a user's word names (its name, its header's words, an alias), else the word as given."""
    return FIELD_ALIASES.get(_folded(text), text.strip().casefold())


# Limits `check` warns about (a user's catalog may exceed them; the shipped one never does).
MAX_ID = 24
MAX_NAME = 32

# The shape of the declaration itself: part of the index's key, so a changed field list is a new index.
SCHEMA = ";".join(f"{f.name}:{f.kind.name}:{int(f.stored)}:{f.weight:g}" for f in FIELDS)

# Fields that hold lists of small tables (`Tables`): their columns are checked one by one.
TABLE_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.kind.name == "tables")
