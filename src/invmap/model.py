"""Typed records of the map: a source, the levels, the glossary, and the catalog around them.

No I/O here: `catalog`, `reading` and `writers` read and write files, this module only says what a valid record is.
`Source` is built from the one field declaration in `fields.py`: each field's kind names its type
(`ANNOTATIONS`), and a few fields add a pattern (`PATTERNS`).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal, Optional

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, create_model

from invmap.fields import FIELDS, KINDS, LIST_SEPARATOR, TABLE_FIELDS
from invmap.fields import Field as FieldDecl
from invmap.vocabulary import LAYER_CODES, LAYER_CODES_TEXT, TRIAGE_CODES, layer_codes

# Characters no catalog text may hold: C0 and C1 controls, line/paragraph separators, bidi marks,
# overrides and isolates, zero-width spaces and the word joiner, invisible operators (U+2061-2064),
# the deprecated format controls (U+206A-206F), the Mongolian vowel separator (U+180E), tag
# characters (U+E0000-E007F), and a byte-order mark inside text. They could drive a terminal or hide
# text; `check` names the field. (U+200C and U+200D, the joiners that Persian and Indic scripts
# need, stay allowed.) safe.py escapes the same set on output.
FORBIDDEN = (
    "\x00-\x1f\x7f-\x9f\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f"
    "\ufeff\U000e0000-\U000e007f"
)
# URLs also hold no braces or backslashes (a URL percent-encodes them: %7B %7D %5C): in a .bib file
# they would end the field or carry TeX commands.
URL_FORBIDDEN = FORBIDDEN + "{}\\\\"
# Constraints pydantic checks in Rust rather than in Python callbacks (~0.3 s at 100,000 sources).
CLEAN_TEXT = rf"^[^{FORBIDDEN}]*[^\s{FORBIDDEN}][^{FORBIDDEN}]*$"  # not blank, no forbidden character
CLEAN_ITEM = rf"^[^{FORBIDDEN}{LIST_SEPARATOR}]*[^\s{FORBIDDEN}{LIST_SEPARATOR}][^{FORBIDDEN}{LIST_SEPARATOR}]*$"
# Prose ([catalog] preface and afterword) may also hold newlines and tabs, which `import` writes.
PROSE_FORBIDDEN = FORBIDDEN.replace("\x00-\x1f", "\x00-\x08\x0b-\x1f")
CLEAN_PROSE = rf"^[^{PROSE_FORBIDDEN}]*$"
FIRST_YEAR = 1900
LAST_YEAR = dt.date.today().year + 1  # "after next year" is implausible

URL_RULE = "an absolute http(s) URL without spaces, braces or backslashes (percent-encode them: %7B %7D %5C)"
# Fields with a form of their own: (pattern, what a value must be, said in `check`'s words).
PATTERNS: dict[str, tuple[str, str]] = {
    "id": (r"^[a-z0-9]+(?:-[a-z0-9]+)*$", "lowercase kebab-case such as 'llm-d'"),
    "arxiv": (r"^\d{4}\.\d{4,5}(?:v\d+)?$", "an arXiv id such as '2407.00079'"),
    "doi": (rf"^10\.\d{{4,9}}/[^\s{FORBIDDEN}]+$", "a DOI such as '10.1145/3731569.3764815'"),
    "url": (rf"^https?://[^\s/?#{URL_FORBIDDEN}]+(?:[/?#][^\s{URL_FORBIDDEN}]*)?$", URL_RULE),
    "code": (rf"^https?://[^\s/?#{URL_FORBIDDEN}]+(?:[/?#][^\s{URL_FORBIDDEN}]*)?$", URL_RULE),
}

Text = Annotated[str, Field(pattern=CLEAN_TEXT)]
Item = Annotated[str, Field(pattern=CLEAN_ITEM)]
Prose = Annotated[str, Field(pattern=CLEAN_PROSE)]
Year = Annotated[int, Field(ge=FIRST_YEAR, le=LAST_YEAR)]
Items = Annotated[list[Item], Field(min_length=1)]


def _valid_layer(label: str) -> str:
    layer_codes(label)
    return label


# What each kind of field is, to pydantic (`fields.Kind.name` -> annotation).
ANNOTATIONS: dict[str, Any] = {
    "text": Text,
    "label": Annotated[str, Field(pattern=CLEAN_TEXT), AfterValidator(_valid_layer)],
    "year": Year,
    "date": dt.date,
    "list": Items,
}


_PATH_CHAR = rf"[^/\s\\{FORBIDDEN}{LIST_SEPARATOR}]"
_SEGMENT = rf"(?:[^./\s\\{FORBIDDEN}{LIST_SEPARATOR}]{_PATH_CHAR}*|\.[^./\s\\{FORBIDDEN}{LIST_SEPARATOR}]{_PATH_CHAR}*|\.\.{_PATH_CHAR}+)"
# The forms of a table column (`fields.Column.form`): (pattern, what a value must be).
COLUMN_FORMS: dict[str, tuple[str, str]] = {
    "text": (CLEAN_ITEM, "text without control characters or ';'"),
    "url": (
        rf"^https?://[^\s/?#{FORBIDDEN}{LIST_SEPARATOR}]+(?:[/?#][^\s{FORBIDDEN}{LIST_SEPARATOR}]*)?$",
        "an absolute http(s) URL without spaces",
    ),
    "commit": (r"^[0-9a-f]{40}$", "a commit: 40 lowercase hex digits"),
    "version": (
        r"^[A-Za-z0-9][A-Za-z0-9._+@-]*$",
        "a release tag or commit without spaces (v0.30.0, main@99d7eb5d6a51)",
    ),
    # the version that changed it first, then what happened: `v0.13.0: deprecated; not read from v0.15.0`
    "deprecation": (
        rf"^v?[0-9]+(?:\.[0-9]+)+[A-Za-z0-9.+-]*: [^\s{FORBIDDEN}{LIST_SEPARATOR}][^{FORBIDDEN}{LIST_SEPARATOR}]*$",
        "the version that deprecated or removed it, a colon and what changed ('v0.13.0: deprecated')",
    ),
    # relative: no leading /, no backslash, no `.` or `..` part, no empty part but a folder's final /
    "path": (
        rf"^{_SEGMENT}(?:/{_SEGMENT})*/?$",
        "a path relative to the repository's root, without '..' (a folder ends in /)",
    ),
}


def _table_item(f: FieldDecl) -> Any:
    """The TypedDict of one item of a list-of-tables field, built from its columns."""
    from typing_extensions import NotRequired, Required, TypedDict

    columns = {
        c.name: (Required if c.required else NotRequired)[Annotated[str, Field(pattern=COLUMN_FORMS[c.form][0])]]
        for c in f.kind.columns  # type: ignore[attr-defined]
    }
    item = TypedDict(f.name.capitalize(), columns, total=False)  # type: ignore[operator]
    item.__pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[attr-defined]
    return Annotated[list[item], Field(min_length=1)]  # type: ignore[valid-type]


def _annotation(f: FieldDecl) -> Any:
    if f.kind.name == "tables":
        return _table_item(f)
    if f.name in PATTERNS:
        return Annotated[str, Field(pattern=PATTERNS[f.name][0])]
    if f.kind.name == "choice":
        return Literal[f.kind.choices]  # type: ignore[attr-defined]
    return ANNOTATIONS[f.kind.name]


class SourceBase(BaseModel):
    """What every source is beyond its stored fields: derived values and the JSON contract."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    @property
    def layers(self) -> tuple[str, ...]:
        return layer_codes(self.layer)  # type: ignore[attr-defined]

    @property
    def link(self) -> str | None:
        """The catalog's own link, else the arXiv abstract page, else the DOI resolver link."""
        return effective_link(self.url, self.arxiv, self.doi)  # type: ignore[attr-defined]

    @property
    def year_text(self) -> str:
        return "n.d." if self.year is None else str(self.year)  # type: ignore[attr-defined]

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract: every field in `fields.FIELDS` order, each in its kind's JSON form."""
        return {f.name: f.kind.json(contract_value(self, f.name)) for f in FIELDS}


def contract_value(source: Any, name: str) -> Any:
    """A field's value in the JSON contract, before its kind's form: `url` is the effective link and
    `layers` the label's codes (the two values the contract derives)."""
    if name == "url":
        return source.link
    if name == "layers":
        return list(source.layers)
    if name in TABLE_FIELDS:
        return KINDS[name].fill(getattr(source, name), source.__dict__)  # type: ignore[attr-defined]
    return getattr(source, name)


def effective_link(url: str | None, arxiv: str | None, doi: str | None) -> str | None:
    if url:
        return url
    if arxiv:
        return f"https://arxiv.org/abs/{arxiv}"
    if doi:
        return f"https://doi.org/{doi}"
    return None


Source = create_model(  # type: ignore[call-overload]
    "Source",
    __base__=SourceBase,
    **{f.name: (_annotation(f), ...) if f.required else (Optional[_annotation(f)], None) for f in FIELDS if f.stored},
)


class CatalogInfo(BaseModel):
    """The `[catalog]` table: the prose around the seed's table; `extends` makes the file an overlay
    of another catalog (`"shipped"` or a path)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    title: Optional[Text] = None
    preface: Prose = ""
    procedure: list[Text] = []
    afterword: Prose = ""
    extends: Optional[Text] = None


class Gap(BaseModel):
    """A topic engineers bring to a level that no source in the map is about (`quantization`), and
    the words that name it in a symptom (`cues`: each a word or phrase, held when all its words are)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    topic: Text
    cues: Annotated[list[Text], Field(min_length=1)]


class LayerInfo(BaseModel):
    """One level of the map: its title and scope, the decision question it asks, the metrics whose
    boundary defines it, the symptoms an engineer sees when the bottleneck is there, and the topics
    of its scope that no source in the map is about (`not_covered`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    title: Text
    scope: Optional[Text] = None
    question: Optional[Text] = None
    metrics: list[Text] = []
    symptoms: list[Text] = []
    not_covered: list[Gap] = []


class Term(BaseModel):
    """A glossary entry: `TTFT = { expansion = "time to first token", definition = "..." }`; `aliases`
    are other phrases meaning the same. Search uses the term, its expansion and aliases both ways."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    expansion: Optional[Text] = None
    aliases: list[Text] = []
    definition: Text


def _layer_table(value: Any) -> Any:
    """The older form `L1 = "title"` is a level with a title and no scope."""
    return {"title": value} if isinstance(value, str) else value


def _known_layer_keys(layers: dict[str, LayerInfo]) -> dict[str, LayerInfo]:
    for code in layers:
        if code not in LAYER_CODES:
            raise ValueError(f"unknown layer code '{code}' (valid codes: {LAYER_CODES_TEXT})")
    return layers


def _clean_terms(glossary: dict[str, Term]) -> dict[str, Term]:
    import re

    for term in glossary:
        if not re.match(CLEAN_TEXT, term):
            raise ValueError(f"glossary term {term!r} must be text without control characters")
    return glossary


TriageCode = Literal[TRIAGE_CODES]  # type: ignore[valid-type]
Link = Annotated[str, Field(pattern=PATTERNS["url"][0])]


class Report(BaseModel):
    """A real symptom report from an engine's tracker: its title as written, where it is, the engine,
    the level that explains it (`primary`, L1..L6 or RL; `secondary` a second acceptable one), the map
    sources that address it, one line of ours on what resolved or explained it, and when it was read.
    Cross-checks (known source ids, a URL once) are `validation`'s, which sees the whole catalog."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    id: Annotated[str, Field(pattern=PATTERNS["id"][0])]
    title: Text
    url: Link
    engine: Annotated[str, Field(pattern=r"^[a-z0-9]+(?:[-.][a-z0-9]+)*$")]  # `vllm`, `llama.cpp`
    primary: TriageCode
    secondary: Optional[TriageCode] = None
    sources: list[Annotated[str, Field(pattern=PATTERNS["id"][0])]] = []
    resolution: Prose = ""
    accessed: dt.date


class Catalog(BaseModel):
    """A whole catalog file: only `[[sources]]` is required. Duplicate ids are checked by `validation`,
    which reports every problem at once."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    catalog: Optional[CatalogInfo] = None
    layers: Annotated[
        dict[str, Annotated[LayerInfo, BeforeValidator(_layer_table)]], AfterValidator(_known_layer_keys)
    ] = {}
    glossary: Annotated[dict[str, Term], AfterValidator(_clean_terms)] = {}
    reports: list[Report] = []
    sources: Annotated[list[Source], Field(min_length=1)]  # type: ignore[valid-type]
