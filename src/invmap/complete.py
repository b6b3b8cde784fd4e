"""Completion candidates as (value, help) pairs, from a small view of the catalog's index.

No typer and no pydantic here: the same functions answer Typer's completion callbacks and the
fast path (`fastcomplete.py`) that replies before typer is imported. Matching ignores case
(`att` offers `Attention Is All You Need`); in bash a value with a space is offered escaped
(`Official\\ project`) so that it is inserted as one shell word.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from invmap.vocabulary import LAYER_CODES

TYPE_CHECKING = False  # `typing` costs a TAB press ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

# What completion needs from a catalog, a dict with only the part one request asks for:
#   "sources": [(id, name), ...] in catalog order; "types": [type, ...];
#   "layers": {code: title} ("" where the catalog gives none).
Index = dict


def from_index(index: Any, kind: str, incomplete: str = "") -> Index:
    """The part of an open `index.Index` that completing `kind` needs. For sources, only those whose
    id or name can start with what was typed (an index range scan), so a TAB stays quick at any size."""
    if kind == "layer":
        levels = index.levels()
        return {"layers": {code: levels.get(code, ("", None))[0] for code in LAYER_CODES}}
    if kind == "type":
        return {"types": index.types()}
    from invmap.index import normalize

    typed = normalize(incomplete.replace("\\ ", " "))
    rows = (
        index.at(index.prefixed(typed, ("id", "name")), ("id", "name"))
        if typed
        else index.records(columns=("id", "name"))
    )
    return {"sources": [(r["id"], r["name"]) for r in rows]}


def _shell_word(value: str) -> str:
    """Bash inserts a candidate as typed: escape what would split it or be read by the shell."""
    if os.environ.get("_INVMAP_COMPLETE") != "complete_bash":
        return value
    return "".join("\\" + c if c in " \t'\"\\$`()&;|<>*?[]{}!#~" else c for c in value)


def _matching(items: list[tuple[str, str]], typed: str) -> list[tuple[str, str]]:
    """Values starting with `typed`, case and all; else ignoring case, offered with the typed text's own
    case (`att` -> `attention Is All You Need`) because shells and Typer keep only values that start
    with what was typed. `show` and the filters ignore case, so either spelling finds the source."""
    exact = [(v, h) for v, h in items if v.startswith(typed)]
    if exact or not typed:
        return exact
    folded = typed.casefold()
    return [(typed + v[len(typed) :], h) for v, h in items if v.casefold().startswith(folded)]


def sources(index: Index, incomplete: str) -> list[tuple[str, str]]:
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


def layers(index: Index, incomplete: str) -> list[tuple[str, str]]:
    """Level codes with their titles; lowercase ones when the typed text is lowercase (`l` -> l1, l2, ...)."""
    exact = [(v, h) for v, h in index["layers"].items() if v.startswith(incomplete)]
    if exact:
        return exact
    return [(v.lower(), h) for v, h in index["layers"].items() if v.lower().startswith(incomplete)]


def types(index: Index, incomplete: str) -> list[tuple[str, str]]:
    typed = incomplete.replace("\\ ", " ")
    return [(_shell_word(t), h) for t, h in _matching([(t, "") for t in index["types"]], typed)]


def choices(values: Sequence[str], incomplete: str, helps: dict[str, str] | None = None) -> list[tuple[str, str]]:
    return [(v, (helps or {}).get(v, "")) for v in values if v.startswith(incomplete)]


def fields(allowed: Sequence[str], incomplete: str, helps: dict[str, str]) -> list[tuple[str, str]]:
    """`--fields id,na` -> `id,name`: complete the last name after the comma, skipping ones given."""
    done, _, last = incomplete.rpartition(",")
    given = set(done.split(",")) if done else set()
    prefix = f"{done}," if done else ""
    return [(prefix + f, helps.get(f, "")) for f in allowed if f.startswith(last) and f not in given]
