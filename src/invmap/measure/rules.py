"""The rules that point from numbers to a level: the declaration, data/rules.toml, read into `Rule`s
(checked as it is read: `load`).

A rule is one concept: the signals it reads, the level (or levels) it points to, a sentence saying
why, its weight (1.0 where the engine counts the mechanism itself, such as a preemption or a failed KV
transfer; 0.9 where a latency's shape implies it; 0.8 for a gauge read at one moment), and each
threshold with its rationale: an engine's documentation, a level's own symptom in the catalog
(`[layers]`), or "our judgement" where neither fixes a number. It is tested on a scrape, on a
benchmark's run, or both (`[rule.metrics]`, `[rule.bench]`), with the same thresholds; each half is a
runnable `Rule` in `RULES`, whose `kind` says which. Its `test` (a function of a module of
measure/levels/, by level; what a test returns is findings.py, how its sentences say numbers
wording.py) returns what it saw: a `Finding` (the numbers that fired it), `Missing` (the signal it
needs is absent) or None (it looked and nothing is wrong). A rule never fires on an absent or zero
signal, and no test divides by a number it has not checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import invmap.measure.declaring as declaring
import invmap.measure.levels.cache as cache
import invmap.measure.levels.cluster as cluster
import invmap.measure.levels.comparing as comparing
import invmap.measure.levels.control as control
import invmap.measure.levels.kernels as kernels
import invmap.measure.levels.levers as levers
import invmap.measure.levels.pooling as pooling
import invmap.measure.levels.scheduling as scheduling
import invmap.measure.names as names
from invmap.measure.findings import Finding, Missing, Rule, Threshold
from invmap.vocabulary import LAYER_CODES

__all__ = ["BY_ID", "RULES", "Finding", "Missing", "Rule", "Threshold", "load"]

SHIPPED = Path(__file__).parent.parent / "data" / "rules.toml"
LEVEL_MODULES = (kernels, scheduling, cache, pooling, cluster, control, levers, comparing)  # where the tests are
KINDS = ("metrics", "bench", "compare")  # the halves a rule may have: a scrape's test, a benchmark's, two runs compared
APPLIES = ("engine", "router", "both")

RULE_KEYS: declaring.Spec = {
    "id": declaring.text(True),
    "levels": declaring.strings(True),
    "why": declaring.text(True),
    "weight": declaring.number(),
    "thresholds": declaring.tables(True),
    "metrics": declaring.table(),
    "bench": declaring.table(),
    "compare": declaring.table(),
}
THRESHOLD_KEYS: declaring.Spec = {
    "name": declaring.text(True),
    "value": declaring.number(True),
    "rationale": declaring.text(True),
}
PART_KEYS: dict[str, declaring.Spec] = {
    "metrics": {
        "test": declaring.text(True),
        "signals": declaring.strings(True),
        "applies": declaring.choice(APPLIES, True),
        "fires": declaring.text(True),
        "id": declaring.text(),
    },
    "bench": {
        "test": declaring.text(True),
        "signals": declaring.strings(True),
        "fires": declaring.text(True),
        "id": declaring.text(),
    },
    "compare": {
        "test": declaring.text(True),
        "signals": declaring.strings(True),
        "fires": declaring.text(True),
        "id": declaring.text(),
    },
}


def _tests() -> dict[str, Any]:
    """Every test function by name (a name defined twice would be ambiguous: the house forbids it)."""
    found: dict[str, Any] = {}
    for module in LEVEL_MODULES:
        for name, value in vars(module).items():
            if callable(value) and not name.startswith("_") and getattr(value, "__module__", "") == module.__name__:
                found[name] = value
    return found


def load(path: str | Path = SHIPPED, declared: names.Declared | None = None) -> tuple[Rule, ...]:
    """The rules at `path`, each half a `Rule`, checked against `declared` (the metrics declaration:
    every signal a scrape's half reads must be one) and bench.py's fields: an unknown or misshapen
    key, a level that is not one, a signal nobody declares, a test that does not exist, two rules or
    halves with one id, is a DeclarationError naming each file and line (exit 3)."""
    from invmap.measure.benchfields import field_range

    source = declaring.Declaration(path)
    if not source.check(source.data, {"rule": declaring.tables(True)}, 1, "the rules"):
        source.done()
    signals = {s.key for s in (declared or names.DECLARED).signals}
    known = {"metrics": lambda s: s in signals, "bench": lambda s: field_range(s) is not None,
             "compare": lambda s: field_range(s) is not None}  # fmt: skip
    tests = _tests()
    out: list[Rule] = []
    for n, entry in enumerate(source.data["rule"]):
        line = source.entry_line("rule", n)
        what = f"rule '{entry.get('id', n + 1)}'"
        if not source.check(entry, RULE_KEYS, line, what):
            continue
        thresholds = _thresholds(source, entry, line, what)
        bad = [code for code in entry["levels"] if code not in LAYER_CODES]
        if bad or not entry["levels"]:
            source.fail(source.key_line(line, "levels"), f"{what}: levels must be among {', '.join(LAYER_CODES)}")
        halves = [k for k in KINDS if k in entry]
        if not halves:
            source.fail(
                line,
                f"{what} has none of [rule.metrics] (a scrape's test), [rule.bench] (a benchmark's), [rule.compare] (two runs')",
            )
        for kind in halves:
            rule = _half(source, entry, kind, thresholds, tests, known[kind], source.key_line(line, kind))
            if rule is not None:
                out.append(rule)
    seen: dict[str, int] = {}
    for n, rule in enumerate(out):
        if rule.id in seen:
            source.fail(1, f"two rules carry the id '{rule.id}'")
        seen[rule.id] = n
    source.done()
    return tuple(out)


def _thresholds(source: declaring.Declaration, entry: dict[str, Any], line: int, what: str) -> tuple[Threshold, ...]:
    out = []
    start = source.key_line(line, "thresholds")
    for t in entry["thresholds"]:
        if source.check(t, THRESHOLD_KEYS, start, f"a threshold of {what}"):
            out.append(Threshold(t["name"], float(t["value"]), t["rationale"]))
    if not out:
        source.fail(start, f"{what} declares no threshold")
    return tuple(out)


def _half(
    source: declaring.Declaration,
    entry: dict[str, Any],
    kind: str,
    thresholds: tuple[Threshold, ...],
    tests: dict[str, Any],
    known: Any,
    line: int,
) -> Rule | None:
    what = f"[rule.{kind}] of rule '{entry['id']}'"
    part = entry[kind]
    if not source.check(part, PART_KEYS[kind], line, what):
        return None
    test = tests.get(part["test"])
    if test is None:
        source.fail(source.key_line(line, "test"), f"{what}: no test '{part['test']}' in measure/levels/")
    unknown = [s for s in part["signals"] if not known(s)]
    if unknown:
        where = "data/metrics.toml's signals" if kind == "metrics" else "measure/bench.py's fields"
        source.fail(source.key_line(line, "signals"), f"{what} reads {', '.join(unknown)}: not among {where}")
    if test is None or unknown:
        return None
    return Rule(
        part.get("id", entry["id"]),
        tuple(entry["levels"]),
        kind,
        tuple(part["signals"]),
        entry["why"],
        thresholds,
        test,
        float(entry.get("weight", 0.9)),
        part.get("applies", ""),
        entry["id"],
        part["fires"],
    )


RULES = load()
BY_ID = {r.id: r for r in RULES}
