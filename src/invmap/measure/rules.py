"""The rules that point from numbers to a level: the declaration, data/rules.toml, read into `Rule`s.

A rule names the signals it reads, the level (or levels) it points to, a sentence saying why, its
weight (1.0 where the engine counts the mechanism itself, such as a preemption or a failed KV
transfer; 0.9 where a latency's shape implies it; 0.8 for a gauge read at one moment), and each
threshold with its rationale: an engine's documentation, a level's own symptom in the catalog
(`[layers]`), or "our judgement" where neither fixes a number. Its `test` (on_scrapes.py for a
scrape's `View`, on_benchmarks.py for a benchmark's run; what a test returns is findings.py, how its
sentences say numbers wording.py) returns what it saw: a `Finding` (the numbers that fired it),
`Missing` (the signal it needs is absent) or None (it looked and nothing is wrong). A rule never fires
on an absent or zero signal, and no test divides by a number it has not checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import invmap.measure.on_benchmarks as on_benchmarks
import invmap.measure.on_scrapes as on_scrapes
from invmap.measure.findings import Finding, Missing, Rule, Threshold

__all__ = ["BY_ID", "RULES", "Finding", "Missing", "Rule", "Threshold"]

TESTS = {"metrics": on_scrapes, "bench": on_benchmarks}  # where each kind of rule's tests are


def _rule(entry: dict[str, Any]) -> Rule:
    return Rule(
        entry["id"],
        tuple(entry["levels"]),
        entry["kind"],
        tuple(entry["signals"]),
        entry["why"],
        tuple(Threshold(t["name"], t["value"], t["rationale"]) for t in entry["thresholds"]),
        getattr(TESTS[entry["kind"]], entry["test"]),
        entry.get("weight", 0.9),
    )


def _declared() -> tuple[Rule, ...]:
    import tomli  # a small file that ships with invmap; tomli words any error

    with open(Path(__file__).parent.parent / "data" / "rules.toml", "rb") as handle:
        return tuple(_rule(entry) for entry in tomli.load(handle)["rule"])


RULES = _declared()
BY_ID = {r.id: r for r in RULES}
