"""The one declaration of a source's fields.

Everything that knows about fields derives from `FIELDS`: the pydantic model (`model.py`), the
JSON key order, the SQLite index's columns (`index.py`), table headers and column rules
(`render.py`), `invmap fields`, `--fields` completion and `add`'s options. Adding a field means
adding one line here. No pydantic, no rich: completion and help read this module too.
"""

from __future__ import annotations

from collections import namedtuple


class Field(
    namedtuple(  # collections' namedtuple, not typing's: a TAB press reads this module, and typing costs ~2 ms
        "Field",
        ("name", "header", "help", "kind", "required", "stored", "wrap", "example"),
        defaults=("text", False, True, False, ""),
    )
):
    """One field: `name`, table `header`, `help`; `kind` text | int | date | codes (a derived list of
    layer codes); `required`; `stored` (False: derived, never written to catalog.toml); `wrap` (True:
    a sentence that may wrap at spaces; False: never split across lines); `example` for `add --FIELD`."""

    __slots__ = ()


FIELDS: tuple[Field, ...] = (
    Field(
        "id",
        "ID",
        "unique lowercase kebab-case id, at most 24 characters (pagedattention, llm-d)",
        required=True,
        example="pagedattention",
    ),
    Field(
        "name",
        "Name",
        "short name, at most 32 characters (PagedAttention, vLLM)",
        required=True,
        example="PagedAttention",
    ),
    Field(
        "source",
        "Source",
        "the seed's Source cell, verbatim",
        required=True,
        wrap=True,
        example="PagedAttention, Kwon et al.",
    ),
    Field(
        "title",
        "Title",
        "the primary paper's full title, or null",
        wrap=True,
        example="Efficient Memory Management for Large Language Model Serving with PagedAttention",
    ),
    Field("authors", "Authors", "authors as the Source names them, or null", wrap=True, example="Kwon et al."),
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
        "type",
        "Type",
        "direction/type (Current, Foundational, Official project, ...)",
        required=True,
        example="Current",
    ),
    Field("year", "Year", "publication year, or null for n.d.", kind="int", example="2023"),
    Field(
        "layer",
        "Layer",
        "layer label, verbatim (L3, L2 and L3, Runtime lever)",
        required=True,
        wrap=True,
        example="L2 and L3",
    ),
    Field("layers", "Codes", "layer codes the label covers (L1..L6, P0)", kind="codes", stored=False),
    Field("mechanism", "Central mechanism", "central mechanism", required=True, wrap=True),
    Field("objective", "Reported objective", "reported objective", required=True, wrap=True),
    Field("question", "Unresolved engineering question", "unresolved engineering question", required=True, wrap=True),
    Field("availability", "Implementation availability", "implementation availability", required=True, wrap=True),
    Field("accessed", "Accessed", "access date, YYYY-MM-DD", kind="date", required=True, example="2026-08-07"),
)

BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}

# The JSON contract's key order, and the order of columns everywhere.
SOURCE_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS)
STORED_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.stored)
TEXT_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.stored and f.kind == "text")
# What `search` scores unless told otherwise; the index also keeps these in lower case, ready to score.
SEARCHED_FIELDS: tuple[str, ...] = ("id", "name", "source", "title", "mechanism")

SCORE = Field("score", "Score", "search or related score, 0-100 (search and related only)", kind="float")
SCORED_FIELDS: tuple[str, ...] = (*SOURCE_FIELDS, SCORE.name)

HEADERS: dict[str, str] = {f.name: f.header for f in (*FIELDS, SCORE)}
FIELD_HELP: dict[str, str] = {f.name: f.help for f in (*FIELDS, SCORE)}
WRAPPING: frozenset[str] = frozenset(f.name for f in FIELDS if f.wrap)

# Limits `check` warns about (a user's catalog may exceed them; the shipped one never does).
MAX_ID = 24
MAX_NAME = 32

# The shape of the declaration itself: part of the index's key, so a changed field list is a new index.
SCHEMA = ";".join(f"{f.name}:{f.kind}:{int(f.stored)}" for f in FIELDS)
