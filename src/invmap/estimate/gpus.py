"""GPUs: the shipped table (`data/gpus.toml`) as records, each figure with the page it was read on, and
the figures in base units for the estimates.

`FIGURES` is the one declaration of what a GPU's entry may say: each figure's key, its meaning, the
units it may be written in (with their scale to the base unit) or the words it may take. `problems`
applies the source rule to an entry; `find_gpu` resolves what a user types (a name, the display name
or an alias, such as the name CUDA gives the device), refusing a name that fits several GPUs.
"""

from __future__ import annotations

import math
import re
from collections import namedtuple
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from invmap.errors import CatalogError, NotFoundError
from invmap.estimate.refusals import Refused
from invmap.estimate.tables import DATA, gpu_table


class Figure(namedtuple("Figure", ("key", "title", "units", "base_unit", "words"), defaults=({}, None, None))):
    """One figure a GPU's entry may give: `units` maps each unit it may be written in to its scale
    to `base_unit`; a figure of words (memory type, link) has `words` instead: the values it takes."""

    __slots__ = ()

    @property
    def amount(self) -> bool:
        return self.words is None


FIGURES: tuple[Figure, ...] = (
    Figure("memory", "memory as the datasheet states it", {"GB": 10**9, "GiB": 2**30}, "bytes"),
    Figure(
        "memory_reported",
        "memory as the device reports it to CUDA or ROCm (what vLLM's utilization multiplies)",
        {"GiB": 2**30, "MiB": 2**20},
        "bytes",
    ),
    Figure("memory_smi", "memory as nvidia-smi reports it", {"MiB": 2**20}, "bytes"),
    Figure("memory_type", "memory type", words=("HBM2", "HBM2e", "HBM3", "HBM3e", "GDDR6", "GDDR6X")),
    Figure("bandwidth", "memory bandwidth", {"TB/s": 1e12, "GB/s": 1e9}, "bytes per second"),
    Figure("bf16_dense", "dense BF16 (and FP16) peak", {"TFLOP/s": 1e12, "PFLOP/s": 1e15}, "operations per second"),
    Figure("fp8_dense", "dense FP8 peak", {"TFLOP/s": 1e12, "PFLOP/s": 1e15}, "operations per second"),
    Figure("int8_dense", "dense INT8 peak", {"TOPS": 1e12, "POPS": 1e15}, "operations per second"),
    Figure(
        "interconnect",
        "GPU-to-GPU link",
        words=("NVLink 3", "NVLink 4", "NVLink 5", "NVLink-C2C", "Infinity Fabric", "PCIe"),
    ),
    Figure(
        "interconnect_bandwidth", "link bandwidth, both directions", {"GB/s": 1e9, "TB/s": 1e12}, "bytes per second"
    ),
    Figure("pcie", "PCIe generation", words=("Gen3", "Gen4", "Gen5", "Gen6")),
    Figure(
        "compute_capability",
        "CUDA compute capability (what vLLM's capability-gated paths test)",
        words=("7.0", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.3", "12.0"),
    ),
    Figure(
        "multiprocessors",
        "streaming multiprocessors as the device reports them (CUDA's multiProcessorCount; ROCm's compute units)",
        {"SMs": 1, "CUs": 1},
        "multiprocessors",
    ),
)
BY_KEY: dict[str, Figure] = {f.key: f for f in FIGURES}
COUNTED = ("multiprocessors",)  # base units counted in whole numbers: a value must be an integer
ENTRY_KEYS = ("name", "display", "vendor", "aliases", "note", *BY_KEY)
READING_KEYS = ("value", "unit", "source", "note")
VENDORS = ("NVIDIA", "AMD")
SOURCE = re.compile(r"https://[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+(/[^\s]*)?")
NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


@dataclass(frozen=True)
class Reading:
    """One figure as its source gives it: `value` in `unit`, where it was read and what to know."""

    value: float | str | None = None
    unit: str | None = None
    source: str | None = None
    note: str | None = None

    def base(self, figure: Figure) -> float | None:
        """The value in the figure's base unit (bytes, bytes or operations per second); None for words."""
        if self.value is None or not figure.amount or self.unit is None:
            return None
        scaled = Decimal(str(self.value)) * Decimal(figure.units[self.unit])  # 2.039 TB/s is 2,039 GB/s exactly
        whole = figure.base_unit == "bytes" or figure.base_unit in COUNTED
        return int(scaled.to_integral_value()) if whole else float(scaled)

    def shown(self) -> str:
        """`3.35 TB/s`, `1,555 GB/s`, `HBM3`; empty when the figure is not known."""
        if self.value is None:
            return ""
        if isinstance(self.value, str):
            return self.value
        return f"{self.value:,g} {self.unit}"

    def shown_in_first_unit(self, figure: Figure) -> str:
        """`1.555 TB/s` for 1,555 GB/s: the value in the figure's first unit, so that a column of the
        `gpus` table reads in one unit (exactly: decimal arithmetic, never a float's digits)."""
        if not isinstance(self.value, (int, float)) or self.unit is None or not figure.amount:
            return self.shown()
        first = next(iter(figure.units))
        scaled = Decimal(str(self.value)) * Decimal(str(figure.units[self.unit])) / Decimal(str(figure.units[first]))
        text = format(scaled.normalize(), "f")
        whole, dot, fraction = text.partition(".")
        return f"{int(whole):,}{dot}{fraction} {first}"

    def record(self, figure: Figure) -> dict[str, Any]:
        return {
            "value": self.value,
            "unit": self.unit,
            "source": self.source,
            "note": self.note,
            "base": self.base(figure),
        }


@dataclass(frozen=True)
class Gpu:
    name: str
    display: str
    vendor: str
    aliases: tuple[str, ...]
    note: str | None
    figures: dict[str, Reading]

    def reading(self, key: str) -> Reading:
        return self.figures.get(key, Reading())

    def base(self, key: str) -> float | None:
        return self.reading(key).base(BY_KEY[key])

    @property
    def memory_bytes(self) -> int | None:
        return self.base("memory")  # type: ignore[return-value]

    @property
    def memory_reported_bytes(self) -> int | None:
        return self.base("memory_reported")  # type: ignore[return-value]

    @property
    def bandwidth(self) -> float | None:  # bytes per second
        return self.base("bandwidth")

    @property
    def bf16_peak(self) -> float | None:  # dense operations per second
        return self.base("bf16_dense")

    @property
    def fp8_peak(self) -> float | None:
        return self.base("fp8_dense")

    @property
    def int8_peak(self) -> float | None:
        return self.base("int8_dense")

    @property
    def multiprocessors(self) -> int | None:  # SMs (CUs on AMD) as the device reports them
        return self.base("multiprocessors")  # type: ignore[return-value]

    @property
    def capability(self) -> int | None:
        """The compute capability times ten (90 for 9.0), as vLLM compares it; None where no source gives it."""
        value = self.reading("compute_capability").value
        if not isinstance(value, str):
            return None
        major, _, minor = value.partition(".")
        return int(major) * 10 + int(minor)

    def summary(self) -> dict[str, Any]:
        """`gpus --json`'s object: the entry's words, then each declared figure as {value, unit,
        source, note, base} (all null but `note` where no source gives it)."""
        return {
            "name": self.name,
            "display": self.display,
            "vendor": self.vendor,
            "aliases": list(self.aliases),
            "note": self.note,
            **{f.key: self.reading(f.key).record(f) for f in FIGURES},
        }

    def flat(self) -> dict[str, Any]:
        """One csv or tsv row: each figure's value, unit, source and note in columns of their own."""
        row: dict[str, Any] = {"name": self.name, "display": self.display, "vendor": self.vendor}
        for f in FIGURES:
            r = self.reading(f.key)
            row.update({f.key: r.value, f"{f.key}_unit": r.unit, f"{f.key}_source": r.source, f"{f.key}_note": r.note})
        return row


# --- the source rule ---------------------------------------------------------------------------


def problems(entry: Any) -> list[str]:
    """Every way `entry` breaks the table's rules, each naming the entry and the figure."""
    if not isinstance(entry, dict):
        return ["an entry that is not a table"]
    where = str(entry.get("name", "?"))
    found = [f"{where}: unknown key '{k}'" for k in entry if k not in ENTRY_KEYS]
    for key in ("name", "display", "vendor"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            found.append(f"{where}: '{key}' must be a non-empty string")
    if isinstance(entry.get("name"), str) and not NAME.fullmatch(entry["name"]):
        found.append(f"{where}: a name is lower-case words joined by '-', not '{entry['name']}'")
    if entry.get("vendor") not in VENDORS:
        found.append(f"{where}: vendor must be one of {', '.join(VENDORS)}")
    aliases = entry.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
        found.append(f"{where}: 'aliases' must be a list of names")
    if "note" in entry and not isinstance(entry["note"], str):
        found.append(f"{where}: 'note' must be a string")
    for figure in FIGURES:
        if figure.key in entry:
            found += [f"{where}.{figure.key}: {p}" for p in reading_problems(figure, entry[figure.key])]
    return found


def reading_problems(figure: Figure, reading: Any) -> list[str]:
    """The source rule for one figure: a value comes with a unit the figure knows and a source that
    is an https URL; a figure without a value may only carry a note saying why."""
    if not isinstance(reading, dict):
        return ["must be a table of value, unit, source and note"]
    found = [f"unknown key '{k}'" for k in reading if k not in READING_KEYS]
    value, unit, source, note = (reading.get(k) for k in READING_KEYS)
    if note is not None and not (isinstance(note, str) and note.strip()):
        found.append("a note must be a non-empty string")
    if value is None:
        if unit is not None or source is not None:
            found.append("has a unit or source but no value")
        elif note is None:
            found.append("is empty: leave it out, or give a note saying why no source gives it")
        return found
    if not isinstance(source, str) or not SOURCE.fullmatch(source):
        found.append(f"source must be an https URL, not {source!r}")
    return found + (_amount_problems if figure.amount else _word_problems)(figure, value, unit)


def _amount_problems(figure: Figure, value: Any, unit: Any) -> list[str]:
    found = [] if unit in figure.units else [f"unit {unit!r} is not one of {', '.join(figure.units)}"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        found.append(f"value must be a positive finite number, not {value!r}")
    elif figure.base_unit in COUNTED and not isinstance(value, int):
        found.append(f"value must be a whole number of {figure.base_unit}, not {value!r}")
    return found


def _word_problems(figure: Figure, value: Any, unit: Any) -> list[str]:
    found = [] if unit is None else [f"a figure of words has no unit, not {unit!r}"]
    if value not in figure.words:
        found.append(f"value {value!r} is not one of {', '.join(figure.words)}")
    return found


def _gpu_of(entry: dict[str, Any]) -> Gpu:
    readings = {f.key: Reading(**entry[f.key]) for f in FIGURES if f.key in entry}
    return Gpu(
        entry["name"], entry["display"], entry["vendor"], tuple(entry.get("aliases", [])), entry.get("note"), readings
    )


_GPUS: list[Gpu] = []


def gpus() -> list[Gpu]:
    """The shipped GPUs, checked against the source rule once (a broken table is exit 3)."""
    if not _GPUS:
        entries = gpu_table()
        found = [p for e in entries for p in problems(e)] + _name_problems(entries)
        if found:
            raise CatalogError(str(DATA / "gpus.toml"), found)
        _GPUS.extend(_gpu_of(e) for e in entries)
    return _GPUS


def _name_problems(entries: list[dict[str, Any]]) -> list[str]:
    """Two entries with one name, or an alias that is another entry's name, make a name mean two GPUs."""
    names = [e.get("name") for e in entries]
    found = [f"{n}: the name is given twice" for n in sorted({n for n in names if names.count(n) > 1})]
    by_key = {folded(e["name"]): e["name"] for e in entries if isinstance(e.get("name"), str)}
    for e in entries:
        for alias in e.get("aliases", []) if isinstance(e.get("aliases"), list) else []:
            owner = by_key.get(folded(str(alias)))
            if owner is not None and owner != e.get("name"):
                found.append(f"{e.get('name')}: alias '{alias}' is the name of {owner}")
    return found


# --- names as users type them ------------------------------------------------------------------


def folded(text: str) -> str:
    """A name without case, spaces or punctuation, and without a leading vendor: 'NVIDIA H100 PCIe' and
    'h100-pcie' fold alike."""
    key = re.sub(r"[^a-z0-9]+", "", text.casefold())
    for vendor in ("nvidia", "amd"):
        if key.startswith(vendor) and len(key) > len(vendor):
            return key[len(vendor) :]
    return key


def _names_of(gpu: Gpu) -> list[str]:
    return [gpu.name, gpu.display, *gpu.aliases]


def find_gpu(name: str, positional: bool = False) -> Gpu:
    """The GPU `name` names (its name, display name or an alias, case and punctuation aside). A name
    several GPUs answer to, exactly or as the start of their names, is refused with the candidates:
    a bad option value (exit 2), or for a `positional` name not found (exit 1)."""
    table = gpus()
    wanted = folded(name)
    exact = [g for g in table if wanted and wanted in map(folded, _names_of(g))]
    if len(exact) == 1:
        return exact[0]
    starts = exact or [g for g in table if wanted and any(folded(n).startswith(wanted) for n in _names_of(g))]
    if len(starts) > 1:
        listed = [f"{g.name} ({g.display})" for g in starts]
        choices = ", ".join(listed[:-1]) + f" or {listed[-1]}"
        message = f"GPU '{name}' is ambiguous: it could be {choices}; give one of those names"
        raise NotFoundError(message) if positional else Refused("ambiguous_gpu", message, "gpu")
    names = tuple(g.name for g in table)
    if len(starts) == 1:
        suggestion = f"; did you mean '{starts[0].name}'?"
    else:
        import difflib

        close = difflib.get_close_matches(name.strip().casefold(), names, n=1, cutoff=0.6)
        suggestion = f"; did you mean '{close[0]}'?" if close else ""
    if positional:  # `invmap gpus NAME`: a name not found, as `show` answers one
        raise NotFoundError(f"unknown GPU '{name}'{suggestion} (shipped GPUs: {', '.join(names)})")
    raise Refused(
        "unknown_gpu",
        f"unknown GPU '{name}'{suggestion} (shipped GPUs, invmap gpus: {', '.join(names)}; or give --memory, "
        "--bandwidth, --peak)",
        "gpu",
    )


def gpu_rows() -> list[dict[str, Any]]:
    """`invmap gpus --json`: each shipped GPU, every figure with where it was read (null where none)."""
    return [g.summary() for g in gpus()]


def gpu_flat_rows() -> list[dict[str, Any]]:
    """`invmap gpus --format csv`: the same figures, a column each for value, unit, source and note."""
    return [g.flat() for g in gpus()]
