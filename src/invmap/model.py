"""Typed records of the map: a source, the layers, and the catalog around the sources.

No I/O here: `catalog.py` reads and writes files, this module only says what a valid record is.
`Source` is built from the one field declaration in `fields.py`.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Optional

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, create_model

from invmap.fields import FIELDS
from invmap.vocabulary import LAYER_CODES, LAYER_CODES_TEXT, layer_codes

# Characters no catalog text may hold: C0 and C1 controls, line/paragraph separators, bidi
# overrides and isolates. They could drive a terminal or hide text; `check` names the field.
FORBIDDEN = "\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
# Constraints pydantic checks in Rust rather than in Python callbacks (~0.3 s at 100,000 sources).
CLEAN_TEXT = rf"^[^{FORBIDDEN}]*[^\s{FORBIDDEN}][^{FORBIDDEN}]*$"  # not blank, no forbidden character
# Prose ([catalog] preface and afterword) may also hold newlines and tabs, which `import` writes.
PROSE_FORBIDDEN = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
CLEAN_PROSE = rf"^[^{PROSE_FORBIDDEN}]*$"
FIRST_YEAR = 1900
LAST_YEAR = dt.date.today().year + 1  # "after next year" is implausible

PATTERNS: dict[str, str] = {
    "id": r"^[a-z0-9]+(?:-[a-z0-9]+)*$",
    "arxiv": r"^\d{4}\.\d{4,5}(?:v\d+)?$",
    "doi": rf"^10\.\d{{4,9}}/[^\s{FORBIDDEN}]+$",
    "url": rf"^https?://[^\s/?#{FORBIDDEN}]+(?:[/?#][^\s{FORBIDDEN}]*)?$",
    "code": rf"^https?://[^\s/?#{FORBIDDEN}]+(?:[/?#][^\s{FORBIDDEN}]*)?$",
}

Text = Annotated[str, Field(pattern=CLEAN_TEXT)]
Prose = Annotated[str, Field(pattern=CLEAN_PROSE)]
Year = Annotated[int, Field(ge=FIRST_YEAR, le=LAST_YEAR)]


def _valid_layer(label: str) -> str:
    layer_codes(label)
    return label


def _annotation(name: str, kind: str) -> Any:
    if kind == "int":
        return Year
    if kind == "date":
        return dt.date
    if name in PATTERNS:
        return Annotated[str, Field(pattern=PATTERNS[name])]
    if name == "layer":
        return Annotated[str, Field(pattern=CLEAN_TEXT), AfterValidator(_valid_layer)]
    return Text


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
        """The JSON contract: every field in `fields.FIELDS` order, `url` the effective link, dates as text."""
        out: dict[str, Any] = {}
        for f in FIELDS:
            if f.name == "layers":
                out["layers"] = list(self.layers)
            elif f.name == "url":
                out["url"] = self.link
            elif f.kind == "date":
                out[f.name] = getattr(self, f.name).isoformat()
            else:
                out[f.name] = getattr(self, f.name)
        return out


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
    **{
        f.name: (_annotation(f.name, f.kind), ...) if f.required else (Optional[_annotation(f.name, f.kind)], None)
        for f in FIELDS
        if f.stored
    },
)


class CatalogInfo(BaseModel):
    """The `[catalog]` table: the prose around the seed's table."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    title: Text
    preface: Prose = ""
    procedure: list[Text] = []
    afterword: Prose = ""


class LayerInfo(BaseModel):
    """One level of the map: `L3 = { title = "Cache management", scope = "paging, ..." }`."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    title: Text
    scope: Optional[Text] = None


def _layer_table(value: Any) -> Any:
    """The older form `L1 = "title"` is a level with a title and no scope."""
    return {"title": value} if isinstance(value, str) else value


def _known_layer_keys(layers: dict[str, LayerInfo]) -> dict[str, LayerInfo]:
    for code in layers:
        if code not in LAYER_CODES:
            raise ValueError(f"unknown layer code '{code}' (valid codes: {LAYER_CODES_TEXT})")
    return layers


class Catalog(BaseModel):
    """A whole catalog file: only `[[sources]]` is required. Duplicate ids are checked by `catalog.py`,
    which reports every problem at once."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    catalog: Optional[CatalogInfo] = None
    layers: Annotated[
        dict[str, Annotated[LayerInfo, BeforeValidator(_layer_table)]], AfterValidator(_known_layer_keys)
    ] = {}
    sources: Annotated[list[Source], Field(min_length=1)]  # type: ignore[valid-type]
