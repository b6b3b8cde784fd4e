"""A sweep of estimates (a list of `estimate.Outcome`s, one a scenario) as a person reads it and as
flat rows: one row a scenario, the inputs that vary and the key results as columns. What every
scenario shares is said once below the table with where each input came from, a varying input taken
from the field guide's defaults is marked, and the notes, verdicts and refusals follow, so a list keeps
what one estimate says. JSON is the list of the one-result objects (`Outcome.as_json`).

No rich: a sweep is plain text (as one estimate is), a table that fits the width, else one block a
scenario; headers wrap at their spaces, a word is never split."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from invmap.estimate.units import counted, grouped, human
from invmap.render import Context, Result
from invmap.render.estimate import model_line
from invmap.render.lines import greedy, wrapped

# The results a sweep's table shows for each kind of estimate (those a scenario has), then its facts.
KEY_RESULTS = {
    "kv": ("bytes_per_token", "bytes_per_token_per_gpu", "bytes_per_sequence", "total_bytes", "total_bytes_per_gpu"),
    "memory": (
        "weights_bytes",
        "weights_bytes_per_gpu",
        "kv_available_bytes",
        "kv_pool_tokens",
        "max_concurrency",
        "longest_request_tokens",
    ),
    "roofline": (
        "arithmetic_intensity_operations_per_byte",
        "upper_bound_operations_per_second",
        "tokens_per_second_upper_bound",
    ),
}
FACTS = {"kv": (), "memory": ("fits",), "roofline": ("limiting_resource",)}
TITLES = {"kv": "KV cache", "memory": "Memory", "roofline": "Roofline"}
DEFAULT_MARK = "*"
GAP = 2
NUMBER_UNITS = ("bytes", "bytes per second", "operations per second", "operations", "seconds", "tokens per second")


def _value_of(outcome: Any, name: str) -> tuple[bool, Any]:
    """(known, value) of input `name` in one outcome: an estimate's input, a refused scenario's flag."""
    if outcome.estimate is not None:
        found = outcome.estimate.input(name)
        return (found is not None, None if found is None else found.value)
    return (name in outcome.scenario.flags, outcome.scenario.flags.get(name))


def _listed(outcome: Any) -> list[str]:
    """The inputs one outcome names: its estimate's, or its refused scenario's flags."""
    return [i.name for i in outcome.estimate.inputs] if outcome.estimate is not None else list(outcome.scenario.flags)


def _differs(outcomes: Sequence[Any], name: str) -> bool:
    """Whether input `name` has two values among the scenarios that know it, or two provenances."""
    known = {repr(v) for k, v in (_value_of(o, name) for o in outcomes) if k}
    found = [o.estimate.input(name) for o in outcomes if o.estimate is not None]
    return len(known) > 1 or len({i.source for i in found if i is not None}) > 1


def varying(outcomes: Sequence[Any]) -> list[str]:
    """The inputs whose values differ between scenarios (the model and GPU by what was given), in the
    order they first appear."""
    names = list(dict.fromkeys(name for o in outcomes for name in _listed(o)))
    out = [n for n in ("model", "gpu") if len({getattr(o.scenario, n) for o in outcomes}) > 1]
    return out + [name for name in names if _differs(outcomes, name)]


def key_results(outcomes: Sequence[Any]) -> list[str]:
    """The key results and facts some scenario has, in the declared order."""
    kinds = list(dict.fromkeys(o.scenario.estimate for o in outcomes))
    present = {name for o in outcomes if o.estimate is not None for name in o.estimate.results}
    out = [n for kind in kinds for n in KEY_RESULTS.get(kind, ()) if n in present]
    return out + [f for kind in kinds for f in FACTS.get(kind, ()) if any(o.estimate for o in outcomes)]


def rows(outcomes: Sequence[Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The flat rows (csv, tsv): the scenario's number, the varying inputs, the key results as numbers,
    and the refusal's message (empty for an estimate)."""
    inputs, results = varying(outcomes), key_results(outcomes)
    kinds = {o.scenario.estimate for o in outcomes}
    fields = ["scenario", *(["estimate"] if len(kinds) > 1 else []), *inputs, *results, "refused"]
    out = []
    for n, o in enumerate(outcomes, 1):
        row: dict[str, Any] = {"scenario": n, "estimate": o.scenario.estimate}
        for name in inputs:
            row[name] = getattr(o.scenario, name) if name in ("model", "gpu") else _value_of(o, name)[1]
        for name in results:
            row[name] = None if o.estimate is None else _result(o.estimate, name)[0]
        row["refused"] = o.refusal.message if o.refusal is not None else ""
        out.append({f: row.get(f) for f in fields})
    return out, fields


def _result(estimate: Any, name: str) -> tuple[Any, str | None]:
    """(value, unit) of a key result, or of a fact (no unit); a per-GPU figure of an estimate on one
    GPU is its whole figure (an estimate states per-GPU figures only across several)."""
    if name not in estimate.results and name.endswith("_per_gpu") and name[: -len("_per_gpu")] in estimate.results:
        split = estimate.input("tensor_parallel")
        if split is not None and split.value == 1:
            name = name[: -len("_per_gpu")]
    if name in estimate.results:
        return estimate.results[name], estimate.units[name]
    return estimate.extra.get(name), None


def _cell(outcome: Any, name: str, is_input: bool) -> str:
    """A table cell: an input's value (marked when the field guide's default), a result as a person
    reads it (bytes in binary units, rates in decimal ones), a fact in words."""
    if is_input:
        if name in ("model", "gpu"):
            return str(getattr(outcome.scenario, name) or "")
        known, value = _value_of(outcome, name)
        if not known:
            return ""
        found = outcome.estimate.input(name) if outcome.estimate is not None else None
        mark = DEFAULT_MARK if found is not None and found.origin == "default" else ""
        return (value if isinstance(value, str) else grouped(value)) + mark
    if outcome.estimate is None:
        return ""
    value, unit = _result(outcome.estimate, name)
    if unit is not None:
        return human(value, unit) if unit in NUMBER_UNITS else grouped(value)
    return "" if value is None else ("yes" if value is True else "no" if value is False else str(value))


def _table(headers: list[str], cells: list[list[str]], right: list[bool], width: int) -> list[str] | None:
    """A table whose headers wrap at spaces to their column, or None when it is wider than `width`."""
    widths = [max([max(len(w) for w in h.split()), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]
    if sum(widths) + GAP * (len(widths) - 1) > width:
        return None
    wrapped_headers = [greedy(h.split(), w) for h, w in zip(headers, widths)]
    height = max(len(h) for h in wrapped_headers)
    lines = []
    for n in range(height):
        parts = []
        for h, w, r in zip(wrapped_headers, widths, right):
            text = h[n - (height - len(h))] if n >= height - len(h) else ""
            parts.append(text.rjust(w) if r else text.ljust(w))
        lines.append((" " * GAP).join(parts).rstrip())
    lines.append("─" * (sum(widths) + GAP * (len(widths) - 1)))
    for row in cells:
        lines.append((" " * GAP).join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right)).rstrip())
    return lines


def _shared(outcomes: Sequence[Any], shown: set[str]) -> list[str]:
    """The inputs every estimate took alike (value and provenance), each with where it came from."""
    made = [o.estimate for o in outcomes if o.estimate is not None]
    if not made:
        return []
    lines = []
    for i in made[0].inputs:
        if i.name in shown or not all(e.input(i.name) == i for e in made[1:]):
            continue
        value = f"{i.value} {i.unit or ''}".rstrip() if isinstance(i.value, str) else counted(i.value, i.unit or "")
        lines.append(f"{i.name} {value} from {i.source.text}")
    return lines


def _said(outcomes: Sequence[Any], width: int) -> list[str]:
    """Below the table: the scenarios' verdicts that say no, the refusals, and every note once."""
    out: list[str] = []
    for heading, items in (
        (
            "does not fit",
            [
                f"{n}: {o.estimate.verdict}"
                for n, o in enumerate(outcomes, 1)
                if o.estimate is not None and o.estimate.fits is False
            ],
        ),
        ("refused", [f"{n}: {o.refusal.message}" for n, o in enumerate(outcomes, 1) if o.refusal is not None]),
        ("notes", list(dict.fromkeys(note for o in outcomes if o.estimate is not None for note in o.estimate.notes))),
    ):
        if items:
            out.append(f"{heading}:")
            for item in items:
                out += ["  " + line for line in wrapped(item, width - 2, indent="  ")]
    return out


def _subjects(outcomes: Sequence[Any], inputs: list[str]) -> list[str]:
    """The model and GPU every scenario names, as one estimate names them (a varying one is a column)."""
    made = next((o.estimate for o in outcomes if o.estimate is not None), None)
    lines = []
    if "model" not in inputs and made is not None and made.model:
        lines.append(model_line(made.model))
    if "gpu" not in inputs and made is not None and made.gpu:
        lines.append(f"gpu: {made.gpu['display']}")
    return lines


def _constant(outcomes: Sequence[Any], results: list[str]) -> list[str]:
    """The key results every estimate gave alike (said once below the table, not a column), when
    there are two estimates or more."""
    made = [o for o in outcomes if o.estimate is not None]
    if len(made) < 2:
        return []
    return [n for n in results if len({_cell(o, n, False) for o in made}) == 1]


def _title(outcomes: Sequence[Any]) -> str:
    kinds = list(dict.fromkeys(o.scenario.estimate for o in outcomes))
    title = " and ".join(TITLES.get(k, k) for k in kinds) + " estimates" if kinds else "Estimates"
    return f"{title} (estimated): {len(outcomes)} scenario{'s' if len(outcomes) != 1 else ''}"


def _grid(outcomes: Sequence[Any], inputs: list[str], results: list[str]) -> tuple[list[str], list[list[str]]]:
    """The table's headers (names, their underscores as spaces to wrap at) and its cells, a row a
    scenario; a refused scenario says so in its first result's column."""
    headers = ["#", *(n.replace("_", " ") for n in (*inputs, *results))]
    cells = []
    for n, o in enumerate(outcomes, 1):
        row = [str(n), *(_cell(o, name, True) for name in inputs), *(_cell(o, name, False) for name in results)]
        if o.refusal is not None and results:
            row[1 + len(inputs)] = "refused"
        cells.append(row)
    return headers, cells


def _marked(outcomes: Sequence[Any], inputs: list[str]) -> bool:
    """Whether a varying input of some scenario is the field guide's default (its cell is marked)."""
    return any(_cell(o, n, True).endswith(DEFAULT_MARK) for o in outcomes for n in inputs if n not in ("model", "gpu"))


def text(outcomes: Sequence[Any], width: int = 80) -> str:
    """The sweep as a person reads it, `width` columns wide."""
    lines = [_title(outcomes)]
    if not outcomes:
        return lines[0] + "\n"
    inputs, results = varying(outcomes), key_results(outcomes)
    alike = _constant(outcomes, results)
    results = [n for n in results if n not in alike]
    lines += [*(part for line in _subjects(outcomes, inputs) for part in wrapped(line, width, indent="  ")), ""]
    headers, cells = _grid(outcomes, inputs, results)
    right = [True] + [False] * len(inputs) + [True] * len(results)
    lines += _table(headers, cells, right, width) or _blocks(headers, cells)
    if _marked(outcomes, inputs):
        lines.append(f"{DEFAULT_MARK} from default: the field guide's made-up model, device or workload")
    made = next((o for o in outcomes if o.estimate is not None), None)
    shared = _shared(outcomes, set(inputs)) + [f"{n} {_cell(made, n, False)}" for n in alike]
    if shared:
        lines += ["", "the same in every scenario:"]
        lines += ["  " + line for item in shared for line in wrapped(item, width - 2, indent="    ")]
    said = _said(outcomes, width)
    return "\n".join(lines + ([""] + said if said else [])) + "\n"


def _blocks(headers: list[str], cells: list[list[str]]) -> list[str]:
    """One block a scenario (`# N`, then `header  value` lines), for a table wider than the screen."""
    width = max(len(h) for h in headers[1:]) if len(headers) > 1 else 0
    out: list[str] = []
    for row in cells:
        out += ([""] if out else []) + [f"# {row[0]}"]
        out += [f"  {h:<{width}}  {c}".rstrip() for h, c in zip(headers[1:], row[1:])]
    return out


def result(outcomes: Sequence[Any]) -> Result:
    """What a command that sweeps hands to `emit`: the flat rows, the JSON list, the drawing."""
    flat, fields = rows(outcomes)
    return Result(flat, fields, data=[o.as_json() for o in outcomes], draw=lambda width, color: text(outcomes, width))


def plain_text(result: Result, context: Context) -> Iterator[str]:
    """`formats.py` renderer of the sweep view for plain output (the same text as the table)."""
    yield result.draw(context.width, False) if result.draw is not None else ""
