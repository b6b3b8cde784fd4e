"""The one declaration of a source's fields, and of the kinds of value a field holds.

Everything that knows about fields derives from `FIELDS`: the pydantic model (`model.py`), the JSON
key order, the SQLite index's columns and the search weights (`index.py`), table headers and column
rules (`render.py`), `invmap fields`, `--fields` and `--sort` and their completion, and the options of
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
    many = False  # a list: its option is repeatable and replaces the whole list

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


class Number(Kind):
    """A score (0-100, one decimal): search, related and triage only."""

    name = "number"
    sql = "REAL"

    def human(self, value) -> str:
        return "" if value is None else f"{value:.1f}"


TEXT, LABEL, YEAR, DATE, LIST, CODES, NUMBER = Kind(), Label(), Year(), Date(), List(), Codes(), Number()
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
        return "--" + (self.option or self.name).replace("_", "-")


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
        "seam",
        "Where to look",
        "where in the code base its mechanism lives, or null",
        wrap=True,
        example="the scheduler and the KV-cache manager",
        weight=1.0,
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
# Fields of words (searchable with --in): every stored field of text, a label or a list, but the identifiers.
TEXT_FIELDS: tuple[str, ...] = tuple(
    f.name for f in FIELDS if f.stored and f.kind.name in ("text", "label", "list") and f.name not in IDENTIFIERS
)
# What `search` looks at unless told otherwise (the words of each source's levels too: `index.py`).
DEFAULT_SEARCH: tuple[str, ...] = tuple(f.name for f in FIELDS if f.weight > 0)
SORT_KEYS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.sortable)

# Fields a command adds to its records, beside the source's: scores, why a result matched, records.
EXTRA: tuple[Field, ...] = (
    Field("score", "Score", "search, related or triage score, 0-100 (those commands only)", kind=NUMBER),
    Field("matched", "Matched", "the fields a search result matched in, best first (search only)", kind=LIST),
    Field("why", "Why", "the best-matching field with the matched words marked (search only)", wrap=True),
    Field("records", "Records", "valid experiment records addressing the question (questions with records)", kind=LIST),
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
)
SCORED_FIELDS: tuple[str, ...] = (*SOURCE_FIELDS, "score")
SEARCH_RESULT_FIELDS: tuple[str, ...] = (*SOURCE_FIELDS, "score", "matched", "why")

HEADERS: dict[str, str] = {f.name: f.header for f in (*FIELDS, *EXTRA)}
FIELD_HELP: dict[str, str] = {f.name: f.help for f in (*FIELDS, *EXTRA)}
WRAPPING: frozenset[str] = frozenset(f.name for f in (*FIELDS, *EXTRA) if f.wrap)
KINDS: dict[str, Kind] = {f.name: f.kind for f in (*FIELDS, *EXTRA)}

# Limits `check` warns about (a user's catalog may exceed them; the shipped one never does).
MAX_ID = 24
MAX_NAME = 32

# The shape of the declaration itself: part of the index's key, so a changed field list is a new index.
SCHEMA = ";".join(f"{f.name}:{f.kind.name}:{int(f.stored)}:{f.weight:g}" for f in FIELDS)
