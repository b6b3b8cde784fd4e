"""Overlays: a catalog that `extends` another and holds only its own additions and changes.

    [catalog]
    extends = "shipped"          # or a path, relative to this file

    [[sources]]                  # a new source: every required field
    id = "my-paper"
    ...

    [[sources]]                  # a change to a base source: its id and the fields that change
    id = "vllm"
    seam = "..."
    unset = ["venue"]            # optional fields to clear

    [[sources]]                  # a base source hidden
    id = "kiely-guide"
    remove = true

The base's `[catalog]`, `[layers]` and `[glossary]` are merged key by key, the overlay's keys winning.
Pure dictionary work on parsed TOML, no I/O: `catalog` reads the files and validates the result
exactly as it validates any catalog.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

SHIPPED = "shipped"  # `extends = "shipped"`: the catalog shipped with invmap, whichever version is installed
PATCH_KEYS = ("remove", "unset")  # keys an overlay's change may hold beside fields


def extends_of(raw: dict[str, Any]) -> str | None:
    """What a parsed catalog extends (`[catalog] extends`), or None."""
    info = raw.get("catalog")
    value = info.get("extends") if isinstance(info, dict) else None
    return value if isinstance(value, str) and value.strip() else None


def base_path(extends: str, overlay_path: str, shipped: str) -> str:
    """The file `extends` names: the shipped catalog, or a path relative to the overlay's folder
    (the working folder for an overlay read from stdin)."""
    if extends.strip() == SHIPPED:
        return shipped
    path = Path(os.path.expanduser(extends.strip()))
    if not path.is_absolute():
        folder = Path.cwd() if overlay_path == "-" else Path(os.path.realpath(overlay_path)).parent
        path = folder / path
    return str(path)


def is_change(entry: Any, required: tuple[str, ...]) -> bool:
    """An overlay entry that changes or hides a source rather than adding one."""
    return isinstance(entry, dict) and (any(k in entry for k in PATCH_KEYS) or not all(k in entry for k in required))


def merge(base: dict[str, Any], overlay: dict[str, Any], required: tuple[str, ...]) -> tuple[dict[str, Any], list[str]]:
    """The overlay applied to its (already merged) base: the merged raw catalog, and the problems of
    overlay entries that cannot apply (a change to an id the base does not have, a change given twice,
    an `unset` of a required field)."""
    problems: list[str] = []
    merged: dict[str, Any] = {}
    info = {**_table(base.get("catalog")), **_table(overlay.get("catalog"))}
    info.pop("extends", None)
    if info or "catalog" in base:
        merged["catalog"] = info
    layers = _tables_merged(
        base.get("layers"), overlay.get("layers"), lambda v: {"title": v} if isinstance(v, str) else v
    )
    if layers is not None:
        merged["layers"] = layers
    glossary = _tables_merged(base.get("glossary"), overlay.get("glossary"), lambda v: v)
    if glossary is not None:
        merged["glossary"] = glossary

    merged["sources"] = _sources_merged(_list(base.get("sources")), _list(overlay.get("sources")), required, problems)
    reports = _reports_merged(_list(base.get("reports")), _list(overlay.get("reports")), _ids(merged["sources"]))
    if reports:
        merged["reports"] = reports
    for key, value in overlay.items():  # anything else the overlay holds is validated as usual
        if key not in ("catalog", "layers", "glossary", "reports", "sources"):
            merged[key] = value
    return merged, problems


def _ids(sources: list[Any]) -> set[str]:
    return {s["id"] for s in sources if isinstance(s, dict) and isinstance(s.get("id"), str)}


def _reports_merged(base: list[Any], overlay: list[Any], kept_ids: set[str]) -> list[Any]:
    """The base's reports (naming none of the sources the overlay removed), an overlay's report of
    the same id in its place, the overlay's others after."""
    mine = {r["id"]: r for r in overlay if isinstance(r, dict) and isinstance(r.get("id"), str)}
    out = []
    for r in base:
        if isinstance(r, dict) and isinstance(r.get("id"), str):
            if r["id"] in mine:
                out.append(mine.pop(r["id"]))
                continue
            if isinstance(r.get("sources"), list):
                r = {**r, "sources": [s for s in r["sources"] if s in kept_ids or not isinstance(s, str)]}
        out.append(r)
    return out + [r for r in overlay if not (isinstance(r, dict) and isinstance(r.get("id"), str)) or r["id"] in mine]


def _sources_merged(base: list[Any], overlay: list[Any], required: tuple[str, ...], problems: list[str]) -> list[Any]:
    """The base's sources with the overlay's changes applied in place, its removals left out and its
    additions after them; `problems` gains what cannot apply."""
    sources = [dict(s) if isinstance(s, dict) else s for s in base]
    at = {s["id"]: n for n, s in enumerate(sources) if isinstance(s, dict) and isinstance(s.get("id"), str)}
    removed: set[int] = set()
    changed: set[str] = set()
    for number, entry in enumerate(overlay, start=1):
        ident = entry.get("id") if isinstance(entry, dict) else None
        where = f"overlay source {number} ({ident})"
        if not isinstance(ident, str) or ident not in at:
            if is_change(entry, required) and isinstance(ident, str):
                problems.append(
                    f"{where}: changes a source the base catalog does not have "
                    "(its id may have been renamed or removed there)"
                )
            else:
                sources.append(entry)  # an addition (validated with the rest)
            continue
        if ident in changed:
            problems.append(f"{where}: this source is changed twice in the overlay")
            continue
        changed.add(ident)
        if entry.get("remove") is True:
            removed.add(at[ident])
        elif "remove" in entry and entry["remove"] is not False:
            problems.append(f"{where}: remove must be true or false")
        else:
            sources[at[ident]] = _patched(sources[at[ident]], entry, required, where, problems)
    return [s for n, s in enumerate(sources) if n not in removed]


def _patched(
    source: dict[str, Any], entry: dict[str, Any], required: tuple[str, ...], where: str, problems: list[str]
) -> dict[str, Any]:
    """A base source with an overlay's change: its fields given, those in `unset` cleared."""
    patched = {**source, **{k: v for k, v in entry.items() if k not in PATCH_KEYS}}
    unset = entry.get("unset", [])
    if not isinstance(unset, list) or not all(isinstance(u, str) for u in unset):
        problems.append(f"{where}: unset must be a list of field names")
        return source
    for name in unset:
        if name in required:
            problems.append(f"{where}: cannot unset the required field '{name}'")
        patched.pop(name, None)
    return patched


def _table(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _tables_merged(base: Any, overlay: Any, normal: Any) -> dict[str, Any] | None:
    """`[layers]` or `[glossary]`: each entry merged key by key, the overlay's winning."""
    if base is None and overlay is None:
        return None
    if not isinstance(overlay, dict):
        return base if overlay is None else overlay  # a wrong type: validation names it
    if not isinstance(base, dict):
        return overlay
    out = {k: normal(v) for k, v in base.items()}
    for key, value in overlay.items():
        value = normal(value)
        out[key] = {**out[key], **value} if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return out
