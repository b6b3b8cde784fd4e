"""Numbers as the rules' sentences say them: `62 ms`, `1.84 s`, `1,024`, a percentile between its
bucket bounds (and as JSON in a finding's signals)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any


def secs(value: float) -> str:
    """0.062 -> `62 ms`, 1.84 -> `1.84 s`."""
    if value < 1:
        ms = value * 1000
        return f"{ms:.3g} ms" if ms < 100 else f"{ms:.0f} ms"
    return f"{value:.3g} s"


def ms(value: float) -> str:
    return secs(value / 1000)


def count(value: float) -> str:
    return f"{round(value):,}" if math.isfinite(value) else f"{value}"


def times(ratio: float) -> str:
    """How many times: `35x`, `4.5e+07x` (never a 300-digit number), `many times` past any number."""
    if not math.isfinite(ratio):
        return "many times"
    return f"{ratio:.0f}x" if ratio < 1e6 else f"{ratio:.2g}x"


def quantile_text(label: str, quantile: Any, unit: Callable[[float], str] = secs) -> str:
    if quantile.above:
        return f"{label} above {unit(quantile.value)} (the last finite bucket)"
    return f"{label} {unit(quantile.value)} (between {unit(quantile.lower)} and {unit(quantile.upper)})"


def quantile_json(quantile: Any) -> dict[str, Any]:
    return {
        "value": round(quantile.value, 6),
        "lower": round(quantile.lower, 6),
        "upper": None if quantile.upper is None else round(quantile.upper, 6),
        "above_last_bucket": quantile.above,
    }
