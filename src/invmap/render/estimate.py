"""An estimate as a person reads it (plain text: label, inputs with where each came from, results,
formulas, what it assumes and leaves out), and its renderer for `formats.py`."""

from __future__ import annotations

from typing import Any

from invmap.estimate.units import counted


def model_line(m: dict[str, Any]) -> str:
    """The model and its source in one line: the file read, or for a shipped model where its table
    says so (`invmap models` lists each URL; a URL on every screen is too long to read)."""
    read = list(m["read_from"])
    named = f"model: {m['display']} ({m['model_type']})"
    source = m.get("source")
    if source == "shipped" or (source is None and read and all(r.startswith("https://") for r in read)):
        of = f" of {m['hub_id']}" if m.get("hub_id") else ""
        return f"{named}, shipped config{of} (source: invmap models)"
    if source == "hub-cache":
        return f"{named}, from the Hugging Face cache: {', '.join(read)}"
    if source == "hub":
        return f"{named}, fetched from {', '.join(read)}"
    return f"{named}, read from {', '.join(read)}"


def text(result: dict[str, Any]) -> str:
    """The estimate as a person reads it: label, inputs with where each came from, results, formulas,
    what it assumes and leaves out."""
    title = {"kv": "KV cache", "memory": "Memory", "roofline": "Roofline"}[result["estimate"]]
    lines = [f"{title} estimate ({result['evidence']})"]
    if result["model"]:
        lines.append(model_line(result["model"]))
    if result["gpu"]:
        lines.append(f"gpu: {result['gpu']['display']}")
    lines.append("")
    lines.append("inputs:")
    width = max((len(i["name"]) for i in result["inputs"]), default=0)
    for i in result["inputs"]:
        value = f"{i['value']} {i['unit'] or ''}".rstrip() if isinstance(i["value"], str) else None
        lines.append(f"  {i['name']:<{width}}  {value or counted(i['value'], i['unit'])}  from {i['from']}")
    lines.append("results:")
    width = max((len(n) for n in result["results"]), default=0)
    for name, value in result["results"].items():
        unit = result["units"][name]
        shown = result["human"][name]
        plain = counted(value, unit)
        lines.append(f"  {name:<{width}}  {plain}" + (f"  ({shown})" if shown != plain else ""))
    if result.get("limiting_resource"):
        lines.append(f"  {'limiting_resource':<{width}}  {result['limiting_resource']}")
    if result.get("verdict"):
        lines.append(f"  {'fits':<{width}}  {'yes' if result['fits'] else 'no'}: {result['verdict']}")
    for heading, key in (
        ("formulas", "formulas"),
        ("assumptions", "assumptions"),
        ("leaves out", "limitations"),
        ("notes", "notes"),
    ):
        if result[key]:
            lines.append(f"{heading}:")
            lines += [f"  {item}" if key == "formulas" else f"  - {item}" for item in result[key]]
    return "\n".join(lines) + "\n"


def wrapped_text(text: str, width: int) -> str:
    """`text` with each line longer than `width` wrapped at spaces (never inside a word or at a
    hyphen), its continuation lines indented under its words: a `- item` under the item's text, an
    input, result or formula two columns past its own indent. A word wider than the width (a URL)
    gets a line of its own, unindented: the terminal may fold it, never invmap."""
    from invmap.render.lines import wrapped

    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        body = line.lstrip(" ")
        lead = " " * (len(line) - len(body))
        indent = lead + ("  " if body.startswith("- ") else "    ")
        pieces = wrapped(line, max(width, len(indent) + 20), indent) or [line]
        # a word wider than the room left (a config's URL) starts its own line at column 0
        out += [p.strip() if len(p) > width and " " not in p.strip() else p for p in pieces]
    return "\n".join(out)


def plain_text(result: Any, context: Any) -> Any:
    """`formats.py` renderer of the estimate view for plain output (the same text as the table)."""
    yield text(result.data)
