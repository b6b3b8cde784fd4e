"""What a rule is and what its test returns: a `Finding` (the numbers that fired it, and how far
past its threshold they are), `Missing` (the signal it needs is absent) or None (nothing is wrong)."""

from __future__ import annotations

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
    id: str
    levels: tuple[str, ...]
    kind: str  # metrics | bench
    signals: tuple[str, ...]
    why: str
    thresholds: tuple[Threshold, ...]
    test: Callable[..., Finding | Missing | None] = field(repr=False)
    weight: float = 0.9  # 1.0: the engine reports the mechanism itself (a preemption, a failed transfer)

    def t(self, name: str) -> float:
        return next(th.value for th in self.thresholds if th.name == name)


def past(value: float, threshold: float, full: float) -> float:
    """How far `value` is past `threshold` toward `full` (0..1)."""
    if full == threshold:
        return 1.0
    return max(0.0, min(1.0, (value - threshold) / (full - threshold)))
