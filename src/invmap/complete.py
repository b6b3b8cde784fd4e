"""Completion candidates as (value, help) pairs, from a small view of the catalog's index.

No typer and no pydantic here: the same functions answer Typer's completion callbacks and the
fast path (`fastcomplete.py`) that replies before typer is imported. Matching ignores case, and a
candidate is offered in its own case (`att` offers `Attention Is All You Need`): the generated zsh
script matches case-insensitively, bash replaces the word when there is one candidate, and fish
matches case-insensitively by itself. In bash a value with a space is offered escaped
(`Official\\ project`) so that it is inserted as one shell word.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from invmap.fields import FIELD_HELP, FIELDS
from invmap.simulate.knobs import ALLOCATIONS, STRATEGIES
from invmap.vocabulary import LAYER_CODES, TRIAGE_CODES

TYPE_CHECKING = False  # `typing` costs a TAB press ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

# Completion names of `options.py` answered from the catalog's index, and those with fixed choices.
INDEX_KINDS = frozenset(
    {
        "source",
        "source_id",
        "source_or_code",
        "code_source",
        "layer",
        "level",
        "type",
        "term",
        "engine",
        "setting_engine",
        "triage_level",
    }
)
CHOICES: dict[str, tuple[str, ...]] = {
    "color": ("auto", "always", "never"),
    "result_type": ("measured", "simulated", "estimated", "reported"),
    "optional_field": tuple(f.name for f in FIELDS if f.stored and not f.required and f.name != "id"),
    "shell": ("bash", "zsh", "fish"),
    "catalog_file": ("shipped",),  # beside the files the shell offers when nothing else matches
    "strategy": STRATEGIES,
    "allocation": ALLOCATIONS,
}


# Completion names whose values live in the estimates' tables (`estimate/`), read only when completed.
LAZY_CHOICES = frozenset({"model", "gpu"})


def choice_values(kind: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """The values (and their help) of a fixed-choice completion name."""
    if kind not in LAZY_CHOICES:
        return CHOICES[kind], {}
    from invmap import estimate  # the shipped tables are read only when a TAB asks for them

    if kind == "model":
        return estimate.model_names(), {m["name"]: m["display"] for m in estimate.model_table()}
    return estimate.gpu_names(), {g["name"]: g["display"] for g in estimate.gpu_table()}


def _fill_choices() -> None:
    from invmap.fields import SORT_KEYS
    from invmap.filters import SEARCHABLE

    CHOICES["sort"] = SORT_KEYS
    for f in FIELDS:
        if f.kind.name == "choice":
            CHOICES[f.name] = f.kind.choices
    CHOICES["search_in"] = SEARCHABLE
    from invmap.quantities import INPUTS, choice_completion

    for q in INPUTS.values():
        if q.kind == "choice":
            CHOICES[choice_completion(q)] = tuple(q.choices)


_fill_choices()


def _report_engines(index: Any) -> list[tuple[str, str]]:
    return sorted({(r["engine"], "") for r in index.reports()})


def _setting_engines(index: Any) -> list[tuple[str, str]]:
    """`settings --engine`: the engines the sources' settings name (not the reports' engines)."""
    from invmap.engines import engines_in

    named = engines_in(index.records("settings IS NOT NULL", (), ("settings",)))
    return sorted(((e, "") for e in named), key=lambda v: v[0].casefold())


def _triage_levels(index: Any) -> list[tuple[str, str]]:
    levels = index.levels()
    return [(code, levels[code][0]) for code in TRIAGE_CODES if code in levels]


_VALUES = {"engine": _report_engines, "setting_engine": _setting_engines, "triage_level": _triage_levels}


def from_index(index: Any, kind: str, incomplete: str = "") -> dict[str, Any]:
    """The part of an open `index.Index` that completing `kind` needs. For sources, only those whose
    id or name can start with what was typed (an index range scan), so a TAB stays quick at any size."""
    if kind in ("layer", "level"):
        levels = index.levels()
        return {"layers": {code: levels.get(code, ("", None))[0] for code in LAYER_CODES}}
    if kind == "type":
        return {"types": index.types()}
    if kind == "term":
        return {"terms": [(t["term"], t["expansion"] or "") for t in index.glossary()]}
    if kind in _VALUES:
        return {"values": _VALUES[kind](index)}
    from invmap.text import normalize

    last = incomplete.rpartition(",")[2] if kind == "layer" else incomplete
    typed = normalize(last.replace("\\ ", " "))
    columns = ("id", "name", "code")
    prefixed = ("id",) if kind == "source_id" else ("id", "name")
    rows = index.at(index.prefixed(typed, prefixed), columns) if typed else index.records(columns=columns)
    if kind == "code_source":
        rows = [r for r in rows if r["code"]]
    return {"sources": [(r["id"], r["name"]) for r in rows]}


def candidates(kind: str, index: dict[str, Any], incomplete: str) -> list[tuple[str, str]]:
    """The candidates of an index kind, from what `from_index` returned."""
    if kind in ("source", "source_or_code", "code_source"):
        return sources(index, incomplete)
    if kind == "source_id":  # `edit`, `rm`: they take ids only
        return [(_shell_word(v), h) for v, h in _matching(list(index["sources"]), incomplete.replace("\\ ", " "))]
    if kind == "layer":
        return layers(index, incomplete)
    if kind == "level":
        return layers(index, incomplete, commas=False)
    if kind == "type":
        return types(index, incomplete)
    if kind == "term":
        return terms(index, incomplete)
    if kind in ("engine", "setting_engine", "triage_level"):
        return _matching([tuple(v) for v in index["values"]], incomplete)
    return []


def _shell_word(value: str) -> str:
    """Bash inserts a candidate as typed: escape what would split it or be read by the shell."""
    if os.environ.get("_INVMAP_COMPLETE") != "complete_bash":
        return value
    return "".join("\\" + c if c in " \t'\"\\$`()&;|<>*?[]{}!#~" else c for c in value)


def _matching(items: list[tuple[str, str]], typed: str) -> list[tuple[str, str]]:
    """Values starting with `typed`, case and all; else ignoring case, in their own case."""
    exact = [(v, h) for v, h in items if v.startswith(typed)]
    if exact or not typed:
        return exact
    folded = typed.casefold()
    return [(v, h) for v, h in items if v.casefold().startswith(folded)]


def sources(index: dict[str, Any], incomplete: str) -> list[tuple[str, str]]:
    """Ids starting with what was typed (the name as help); else names (`Pag` -> PagedAttention)."""
    typed = incomplete.replace("\\ ", " ")
    ids = [(i, n) for i, n in index["sources"]]
    names = [(n, i) for i, n in index["sources"]]
    for items in (
        [(i, n) for i, n in ids if i.startswith(typed)],
        [(n, i) for n, i in names if n.startswith(typed)],
        _matching(ids, typed),
        _matching(names, typed),
    ):
        if items or not typed:
            return [(_shell_word(v), h) for v, h in items]
    return []


def layers(index: dict[str, Any], incomplete: str, commas: bool = True) -> list[tuple[str, str]]:
    """Level codes with their titles; lowercase ones when the typed text is lowercase (`l` -> l1, l2,
    ...); after a comma (`L3,L`), the codes that may follow, the list kept in front."""
    done, comma, last = incomplete.rpartition(",") if commas else ("", "", incomplete)
    prefix = done + comma
    given = {c.strip().upper() for c in done.split(",")} if comma else set()
    items = [(v, h) for v, h in index["layers"].items() if v not in given]
    exact = [(prefix + v, h) for v, h in items if v.startswith(last)]
    if exact:
        return exact
    return [(prefix + v.lower(), h) for v, h in items if v.lower().startswith(last)]


def types(index: dict[str, Any], incomplete: str) -> list[tuple[str, str]]:
    typed = incomplete.replace("\\ ", " ")
    return [(_shell_word(t), h) for t, h in _matching([(t, "") for t in index["types"]], typed)]


def terms(index: dict[str, Any], incomplete: str) -> list[tuple[str, str]]:
    typed = incomplete.replace("\\ ", " ")
    return [(_shell_word(t), h) for t, h in _matching(list(index["terms"]), typed)]


def choices(values: Sequence[str], incomplete: str, helps: dict[str, str] | None = None) -> list[tuple[str, str]]:
    return [(v, (helps or {}).get(v, "")) for v in values if v.startswith(incomplete)]


def fields_of(path: str) -> tuple[str, ...]:
    from invmap.options import fields_for

    return fields_for(path)


def fields(allowed: Sequence[str], incomplete: str, helps: dict[str, str] = FIELD_HELP) -> list[tuple[str, str]]:
    """`--fields id,na` -> `id,name`: complete the last name after the comma, skipping ones given."""
    done, _, last = incomplete.rpartition(",")
    given = set(done.split(",")) if done else set()
    prefix = f"{done}," if done else ""
    return [(prefix + f, helps.get(f, "")) for f in allowed if f.startswith(last) and f not in given]
