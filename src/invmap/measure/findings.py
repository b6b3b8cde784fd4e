"""What a rule is and what its test returns: a `Finding` (the numbers that fired it, and how far
past its threshold they are), `Missing` (the signal it needs is absent) or None (nothing is wrong)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Threshold(NamedTuple):
    name: str
    value: float
    rationale: str


@dataclass(frozen=True)
class Finding:
    text: str
    signals: dict[str, Any]
    strength: float = 0.5  # 0 at the threshold .. 1 far past it
    momentary: bool = False  # read from gauges: true at the moment of the scrape
    levels: tuple[str, ...] | None = None  # when a rule's test picks among its levels


@dataclass(frozen=True)
class Missing:
    needs: str


@dataclass(frozen=True)
class Rule:
    """One runnable half of a declared rule: `id` (what its evidence carries), `kind` metrics (it
    reads a scrape, of the processes `applies` names) or bench (a benchmark's run), and the concept's
    levels, weight and thresholds, shared by its two halves (`concept` is the declared rule's id)."""

    id: str
    levels: tuple[str, ...]
    kind: str  # metrics | bench
    signals: tuple[str, ...]
    why: str
    thresholds: tuple[Threshold, ...]
    test: Callable[..., Finding | Missing | None] = field(repr=False)
    weight: float = 0.9  # 1.0: the engine reports the mechanism itself (a preemption, a failed transfer)
    applies: str = "engine"  # engine | router | both (a scrape's rule); "" for a benchmark's
    concept: str = ""
    fires: str = ""  # when it fires, in the README's words

    def t(self, name: str) -> float:
        for th in self.thresholds:
            if th.name == name:
                return th.value
        raise KeyError(f"rule {self.concept or self.id} declares no threshold '{name}' (data/rules.toml)")

    def reads(self, kind: str) -> bool:
        """Whether this rule reads a scrape of a process of `kind` (engine | router)."""
        return self.kind == "metrics" and self.applies in (kind, "both")


def past(value: float, threshold: float, full: float) -> float:
    """How far `value` is past `threshold` toward `full` (0..1)."""
    if full == threshold:
        return 1.0
    return max(0.0, min(1.0, (value - threshold) / (full - threshold)))


def stat(run: dict[str, Any], name: str) -> float | None:
    """A benchmark run's finite number `name`, or None."""
    value = run.get(name)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None
