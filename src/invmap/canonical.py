"""The canonical TOML text of a catalog (what `fmt` writes and `export --format toml` prints), of an
overlay (its own tables only), and of one source's table: fixed key order, absent values left out,
sources last as `[[sources]]` tables. Text only (tomli-w), no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from invmap.fields import STORED_FIELDS, TABLE_FIELDS
from invmap.vocabulary import LAYER_CODES

if TYPE_CHECKING:
    from invmap.model import Catalog


def to_toml_dict(catalog: Catalog) -> dict[str, Any]:
    """The canonical table: fixed key order, absent optional values left out, no derived keys,
    no empty `[catalog]` or `[layers]` table."""
    out: dict[str, Any] = {}
    if (info := catalog.catalog) is not None:
        out["catalog"] = _present(info.model_dump())
    if catalog.layers:
        out["layers"] = {
            code: _present(catalog.layers[code].model_dump()) for code in LAYER_CODES if code in catalog.layers
        }
    if catalog.glossary:
        out["glossary"] = {term: _present(entry.model_dump()) for term, entry in catalog.glossary.items()}
    if catalog.reports:
        out["reports"] = [{k: v for k, v in _present(r.model_dump()).items() if v != ""} for r in catalog.reports]
    out["sources"] = [
        {f: value for f in STORED_FIELDS if (value := getattr(source, f)) is not None} for source in catalog.sources
    ]
    return out


def _present(table: dict[str, Any]) -> dict[str, Any]:
    """A table's keys with a value: None and empty lists are left out (the defaults say the same)."""
    return {k: v for k, v in table.items() if v is not None and v != []}


def dumps_overlay(raw: dict[str, Any]) -> str:
    """The canonical text of an overlay: its own tables only, in the order `dumps` writes a catalog
    (`extends` first), each source's fields in the declared order, then `remove` and `unset`."""
    import tomli_w

    from invmap.model import CatalogInfo, LayerInfo, Report, Term
    from invmap.overlay import PATCH_KEYS

    def ordered(table: Any, keys: Any) -> Any:
        if not isinstance(table, dict):
            return table
        known = [k for k in keys if k in table]
        return {k: table[k] for k in [*known, *(k for k in table if k not in known)]}

    out: dict[str, Any] = {}
    if "catalog" in raw:
        out["catalog"] = ordered(raw["catalog"], ("extends", *CatalogInfo.model_fields))
    if isinstance(raw.get("layers"), dict):
        layers = raw["layers"]
        codes = [c for c in LAYER_CODES if c in layers] + [c for c in layers if c not in LAYER_CODES]
        out["layers"] = {c: ordered(layers[c], LayerInfo.model_fields) for c in codes}
    if isinstance(raw.get("glossary"), dict):
        out["glossary"] = {t: ordered(v, Term.model_fields) for t, v in raw["glossary"].items()}
    for key, value in raw.items():
        if key not in ("catalog", "layers", "glossary", "reports", "sources"):
            out[key] = value
    sources = raw.get("sources")
    entries = [ordered(s, (*STORED_FIELDS, *PATCH_KEYS)) for s in sources] if isinstance(sources, list) else []
    reports = raw.get("reports")
    reported = [ordered(r, Report.model_fields) for r in reports] if isinstance(reports, list) else []
    return _with_sources(tomli_w.dumps(out), entries, reported)


def _with_sources(head: str, entries: list[dict[str, Any]], reports: list[dict[str, Any]] = ()) -> str:
    """`head`, then each report as a `[[reports]]` table and each source as a `[[sources]]` table of
    its own, a blank line between (tomli_w would write a list of short tables inline, as `sources =
    [...]`); the sources last, so that a large catalog can be read a chunk of sources at a time."""
    import tomli_w

    blocks = [head.rstrip("\n")] if head.strip() else []
    blocks += ["[[reports]]\n" + tomli_w.dumps(entry).rstrip("\n") for entry in reports]
    blocks += ["[[sources]]\n" + entry_toml(entry).rstrip("\n") for entry in entries]
    return "\n\n".join(blocks) + "\n"


def entry_toml(entry: dict[str, Any]) -> str:
    """One source's keys as TOML lines, in its order. A list of small tables (`places`) is an array of
    inline tables, one a line: tomli_w would write a long one as `[[places]]`, which under
    `[[sources]]` would be another array of the file, not the source's."""
    import tomli_w

    if not any(k in TABLE_FIELDS and isinstance(v, list) for k, v in entry.items()):
        return tomli_w.dumps(entry)
    parts = []
    for key, value in entry.items():
        if key in TABLE_FIELDS and isinstance(value, list) and all(isinstance(v, dict) for v in value):
            items = [
                "{ " + ", ".join(tomli_w.dumps({k: v}).rstrip("\n") for k, v in item.items()) + " }" for item in value
            ]
            parts.append(f"{key} = [\n" + "".join(f"    {item},\n" for item in items) + "]\n")
        else:
            parts.append(tomli_w.dumps({key: value}))
    return "".join(parts)


def dumps(catalog: Catalog) -> str:
    """The one canonical text of a catalog (what `invmap fmt` writes)."""
    import tomli_w

    table = to_toml_dict(catalog)
    entries = table.pop("sources")
    reports = table.pop("reports", [])
    return _with_sources(tomli_w.dumps(table), entries, reports)
