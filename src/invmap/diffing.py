"""`invmap diff A B`: what changed between two catalogs, each loaded from a catalog file (an overlay
merged), a Markdown map, `shipped` or stdin.

Sources are matched by id, then (for those left) by arXiv id, DOI or link, so a source renamed in
one file is a change of its id, not a removal and an addition. `[catalog]`, `[layers]` and
`[glossary]` are compared key by key.
"""

from __future__ import annotations

from typing import Any

from invmap import catalog as catalogs
from invmap import reading
from invmap.fields import BY_NAME, STORED_FIELDS

FIELDS = ["change", "id", "field", "old", "new"]


def load(name: str) -> Any:
    """One side of `diff`: a catalog file (an overlay merged), a Markdown map (`.md`), `shipped` or
    `-` (stdin: a Markdown map when it looks like one, else TOML)."""
    from invmap import exchange
    from invmap.location import shipped_path

    if name == "shipped":
        return catalogs.load(str(shipped_path()))
    if name != "-" and name.lower().endswith((".md", ".markdown")):
        return exchange.read_map(name)
    if name == "-":
        data = catalogs.read_bytes(name)
        head = data.removeprefix(reading.BOM.encode("utf-8")).lstrip()  # a BOM, as a file by path may have
        if head.startswith((b"#", b"|")) and b"|---" in data:  # a Markdown map on stdin
            return exchange.markdown_catalog(data, name)
        return catalogs.validate_bytes(data, name)
    return catalogs.load(name)


def run(old: str, new: str) -> dict[str, Any]:
    """`diff A B` (see `compare`): both sides loaded; only one of them may be stdin."""
    from invmap.errors import UsageError

    if old == new == "-":
        raise UsageError("only one of A and B can be '-' (stdin)")
    return compare(load(old), load(new))


def _value(source: Any, name: str) -> Any:
    return BY_NAME[name].kind.json(getattr(source, name))


def _identifiers(source: Any) -> list[tuple[str, str]]:
    keys = [("arxiv", source.arxiv), ("doi", (source.doi or "").casefold() or None), ("link", source.link)]
    return [(kind, value) for kind, value in keys if value]


def compare(old: Any, new: Any) -> dict[str, Any]:
    """`{added, removed, changed: [{id, fields: {name: [old, new]}}], tables: {catalog, layers, glossary}}`:
    ids added and removed, each changed source with its changed fields, and the table keys that differ."""
    pairs, removed, added = _matched(old.sources, new.sources)
    changed = []
    for a, b in pairs:
        fields = {f: [_value(a, f), _value(b, f)] for f in STORED_FIELDS if getattr(a, f) != getattr(b, f)}
        if fields:
            changed.append({"id": b.id, "fields": fields})
    order = {s.id: n for n, s in enumerate(new.sources)}
    changed.sort(key=lambda c: order.get(c["id"], len(order)))

    def dumped(tables: dict[str, Any]) -> dict[str, Any]:
        return {k: v.model_dump() for k, v in tables.items()}

    return {
        "added": [s.id for s in added],
        "removed": [s.id for s in removed],
        "changed": changed,
        "tables": {
            "catalog": _keys_differing(_dump(old.catalog), _dump(new.catalog)),
            "layers": _keys_differing(dumped(old.layers), dumped(new.layers)),
            "glossary": _keys_differing(dumped(old.glossary), dumped(new.glossary)),
        },
    }


def _matched(old: list[Any], new: list[Any]) -> tuple[list[tuple[Any, Any]], list[Any], list[Any]]:
    """(pairs of the same source, sources only in `old`, sources only in `new`): matched by id, then
    the rest by arXiv id, DOI or link."""
    old_by_id = {s.id: s for s in old}
    new_by_id = {s.id: s for s in new}
    pairs = [(old_by_id[i], new_by_id[i]) for i in old_by_id if i in new_by_id]
    right = [s for s in new if s.id not in old_by_id]
    by_identifier: dict[tuple[str, str], Any] = {}
    for s in right:
        for key in _identifiers(s):
            by_identifier.setdefault(key, s)
    removed = []
    for s in (s for s in old if s.id not in new_by_id):
        match = next((by_identifier[k] for k in _identifiers(s) if k in by_identifier), None)
        if match is not None and match in right:
            right.remove(match)
            pairs.append((s, match))
        else:
            removed.append(s)
    return pairs, removed, right


def _dump(info: Any) -> dict[str, Any]:
    return info.model_dump() if info is not None else {}


def _keys_differing(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]


def is_empty(difference: dict[str, Any]) -> bool:
    return not (
        difference["added"] or difference["removed"] or difference["changed"] or any(difference["tables"].values())
    )


def rows(difference: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per change (`change`, `id`, `field`, `old`, `new`) for tables, csv, tsv and plain."""
    out: list[dict[str, Any]] = []
    out += [{"change": "added", "id": i, "field": None, "old": None, "new": None} for i in difference["added"]]
    out += [{"change": "removed", "id": i, "field": None, "old": None, "new": None} for i in difference["removed"]]
    for item in difference["changed"]:
        for name, (a, b) in item["fields"].items():
            out.append({"change": "changed", "id": item["id"], "field": name, "old": cell(a), "new": cell(b)})
    for table, keys in difference["tables"].items():
        out += [{"change": table, "id": key, "field": None, "old": None, "new": None} for key in keys]
    return out


def cell(value: Any) -> str | None:
    """A value as a table cell: a list joined with `; `, nothing for none."""
    if value is None or value == []:
        return None
    if isinstance(value, list):
        return "; ".join(map(str, value))
    return str(value)
