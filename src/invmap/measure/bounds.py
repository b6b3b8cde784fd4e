"""The values a number read from outside can take: a `Range` (its bounds, whether it is a whole
number, how far past a bound rounding may carry it), and what is done with a value outside it:
`omit` (the signal or field is left out, with a note naming the value) or `refuse` (the input is
refused, exit 3). Declared on each signal in data/metrics.toml and on each benchmark field in
measure/bench.py; nothing here reads a file."""

from __future__ import annotations

import math
from dataclasses import dataclass

ACTIONS = ("omit", "refuse")
MOST = 1e15  # a count no engine reaches: 30 years of a million a second
ABSURD = 1e30  # what a histogram's sum of observations may reach (counts past MOST times values past 1e15)


@dataclass(frozen=True)
class Range:
    """`low` to `high` inclusive (in `unit`); `integer`: whole numbers only; `tolerance`: a value this
    far past a bound is read as the bound (an engine's own rounding, a fraction of 1.0000001);
    `infinite`: +inf is a value too (a request rate of "inf"); `invalid`: omit | refuse."""

    low: float
    high: float
    unit: str = ""
    integer: bool = False
    tolerance: float = 0.0
    infinite: bool = False
    invalid: str = "omit"

    def read(self, value: float) -> tuple[float, str | None]:
        """The value to use, and why it cannot be used (None: it can)."""
        if math.isnan(value):
            return value, f"is NaN, not a number ({self.text()})"
        if math.isinf(value):
            if value > 0 and self.infinite:
                return value, None
            return value, f"is {'' if value > 0 else '-'}infinite, outside {self.text()}"
        if value < self.low:
            if value >= self.low - self.tolerance:
                return self.low, None
            return value, f"is {shown(value)}, outside {self.text()}"
        if value > self.high:
            if value <= self.high + self.tolerance:
                return self.high, None
            return value, f"is {shown(value)}, outside {self.text()}"
        if self.integer and not float(value).is_integer():
            return value, f"is {shown(value)}, not a whole number of {self.unit or 'units'}"
        return value, None

    def text(self) -> str:
        """`0 to 1`, `0 to 1,000,000,000 requests`, `0 to infinity`."""
        high = "infinity" if self.infinite else shown(self.high)
        unit = f" {self.unit}" if self.unit and self.unit != "fraction" else ""
        return f"{shown(self.low)} to {high}{unit}"


def shown(value: float) -> str:
    """A number as a message names it: `1,000,000,000`, `-5`, `0.5`, `1e15`, `1.7e308`."""
    if math.isfinite(value) and float(value).is_integer() and abs(value) < 1e10:
        return f"{int(value):,}"
    return f"{value:.6g}".replace("e+", "e")


def labelled(name: str, labels: tuple[tuple[str, str], ...]) -> str:
    """`vllm:num_requests_running{engine="0",model_name="m"}`: a series as its scrape writes it."""
    if not labels:
        return name
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}"
