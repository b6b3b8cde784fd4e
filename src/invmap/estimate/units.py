"""Numbers as a person reads them (`96.00 KiB`, `3.35 TB/s`, `1,024`), and sizes as one types them
(`80GB`, `80GiB`)."""

from __future__ import annotations

import math
import re

from invmap.estimate.checks import FLAGS, MAX_MEMORY
from invmap.estimate.refusals import Refused


def human_bytes(value: float) -> str:
    """Bytes in powers of two, as the field guide prints them: `96.00 KiB`."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    amount = float(value)
    for unit in units:
        if abs(amount) < 1024.0 or unit == units[-1]:
            return f"{amount:.2f} {unit}"
        amount /= 1024.0
    raise AssertionError("unreachable")  # pragma: no cover


def human_rate(value: float, unit: str) -> str:
    """A rate in powers of ten: `3.35 TB/s`, `989.00 TFLOP/s`."""
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {prefix}{unit}"
    return f"{value:.2f} {unit}"


def grouped(value: float) -> str:
    """A number with thousands separators; floats to at most four significant decimals."""
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) < 1e16):
        return f"{int(value):,}"
    return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def counted(value: float, unit: str) -> str:
    """A number and its unit, the unit's first word singular for exactly one: `1 GPU`, `1 byte per
    token`, `2 sequences`."""
    if value == 1 and unit:
        first, space, rest = unit.partition(" ")
        if first.endswith("s") and not first.endswith("ss") and len(first) > 1:
            unit = first[:-1] + space + rest
    return f"{grouped(value)} {unit}" if unit else grouped(value)


def human(value: float, unit: str) -> str:
    if unit == "bytes":
        return human_bytes(value)
    if unit == "bytes per second":
        return human_rate(value, "B/s")
    if unit == "operations per second":
        return human_rate(value, "FLOP/s")
    if unit == "operations":
        return human_rate(value, "FLOP")
    if unit == "tokens per second":
        return f"{value:,.1f} tokens/s"
    if unit == "seconds":
        return f"{value * 1e3:,.3f} ms"
    return counted(value, unit)


SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+))?\s*([KMGTP](?:i?B)?|B)?\s*$", re.I)


SIZE_SCALE = {
    "": 1,
    "B": 1,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
}
SIZE_SCALE.update({"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "PIB": 2**50})


def parse_size(text: str, name: str = "memory") -> int:
    """`80G` or `80GB` (x 10^9), `80GiB` (x 2^30), `85899345920` or `8.5e10` -> bytes; exit 2 naming the option.
    An exponent too large for a float (`1e400`) is past the bound, never an overflow."""
    found = SIZE.match(text)
    if not found:
        raise Refused(
            "bound", f"{FLAGS[name]} takes a size such as 80GB, 80GiB or 85899345920 (bytes), not {text!r}", name
        )
    number, exponent, unit = found.groups()
    value = float(f"{number}e{exponent or 0}") * SIZE_SCALE[(unit or "").upper()]  # inf past a float's range
    if math.isfinite(value) and value < 1:
        raise Refused("bound", f"{FLAGS[name]} must be a positive size, not {text!r}", name)
    if not math.isfinite(value) or value > MAX_MEMORY:
        raise Refused("bound", f"{FLAGS[name]} must be at most {MAX_MEMORY:,} bytes (a petabyte), not {text!r}", name)
    return int(value)
