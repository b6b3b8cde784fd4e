"""The bound checks of every numeric input, from its declaration (`invmap.quantities`): an option's
value past its bounds is a typo, not a model (exit 2 naming the option); a config key read as an
input is bounded as its option is (exit 3 naming the file and the key). What an estimate needs
besides an input (a device, a model) is checked here too."""

from __future__ import annotations

import json
from typing import Any

from invmap.estimate.refusals import REASONS, Refused, RefusedFile
from invmap.quantities import (
    CLASHES,
    CONFIG_KEYS,
    ESTIMATES,
    INPUTS,
    MAX_AMOUNT,
    MAX_BYTES_PER_ELEMENT,
    MAX_COUNT,
    MAX_LAYERS,
    MAX_MEMORY,
    MAX_PARAMETERS,
    MAX_RATE,
    MAX_TOKENS,
    NEEDS,
    NUMERIC_KINDS,
    read_count,
    read_version,
)

__all__ = [
    "FLAGS",
    "MAX_AMOUNT",
    "MAX_BYTES_PER_ELEMENT",
    "MAX_COUNT",
    "MAX_LAYERS",
    "MAX_MEMORY",
    "MAX_PARAMETERS",
    "MAX_RATE",
    "MAX_TOKENS",
    "check",
    "check_all",
    "check_key",
    "check_clashes",
    "check_needs",
    "check_phase",
]

# The option each input is given with (for messages: the core names what the user typed).
FLAGS: dict[str, str] = {name: q.flag for name, q in INPUTS.items()}


def check(name: str, value: Any) -> Any:
    """An option's value within its bounds (a float input as a float), or one of its choices; exit 2
    naming the option. A choice refused is its own reason where REASONS names the input (`engine`,
    `kv_cache_dtype`, `scenario`), else `choice`."""
    q = INPUTS.get(name)
    if q is None:
        return value
    if q.kind == "choice" and value not in q.choices:
        reason = name if name in REASONS else "choice"
        raise Refused(reason, f"{q.flag} takes one of {', '.join(q.choices)}, not {value!r}", name)
    if q.kind == "version" and (not isinstance(value, str) or read_version(value) is None):
        raise Refused("bound", f"{q.flag} takes a release such as 0.15.1 or v0.10.1.1, not {value!r}", name)
    if q.kind not in NUMERIC_KINDS:
        return value
    if q.kind == "tokens" and isinstance(value, str):
        counted = read_count(value)
        if counted is None:
            raise Refused(
                "bound", f"{q.flag} takes a count such as 8192, 128k (x 1,000) or 32K (x 1,024), not {value!r}", name
            )
        value = counted
    problem = q.bounds.problem(value)
    if problem is not None:
        raise Refused("bound", f"{q.flag} {problem}", name)
    return value if q.bounds.integer else float(value)


def check_all(options: dict[str, Any]) -> None:
    """Every numeric or choice option given, checked before anything is computed (used or not)."""
    for name, value in options.items():
        if value is not None and name in INPUTS:
            check(name, value)


def check_key(key: str, value: Any, where: str) -> int:
    """A number read from a file (`where`) under `key`: a positive integer within the bounds of the
    input it is read as (`num_hidden_layers` as --layers), else exit 3 naming the file and the key."""
    q = CONFIG_KEYS[key]  # every key the estimates read is declared (a KeyError here is a bug)
    bound_of = f" (the bound of {q.flag})" if q.flags else ""
    problem = q.bounds.problem(value, quote=json.dumps, bound_of=bound_of)
    if problem is not None:
        raise RefusedFile("config", where, f"'{key}' {problem}", key)
    return value  # type: ignore[no-any-return]


def check_needs(kind: str, present: set[str]) -> None:
    """What estimate `kind` needs besides an input (`quantities.NEEDS`): exit 2 with the first broken
    need's message. `present`: the inputs given, by name (`model` and `gpu` too)."""
    for need in NEEDS[kind]:
        message = need.broken(present)
        if message is not None:
            given = tuple(n for n in need.given if n in present)[:1]
            raise Refused("needs", message, *given, *need.one_of)


def check_clashes(kind: str, present: set[str]) -> None:
    """Inputs estimate `kind` cannot apply beside others given (`quantities.CLASHES`): exit 2 with the
    first clash's message, never an input silently ignored."""
    for clash in CLASHES[kind]:
        message = clash.broken(present)
        if message is not None:
            given = next(n for n in clash.given if n in present)
            raise Refused("clash", message, given, *clash.with_all)


def check_phase(kind: str, present: set[str], phase: str) -> None:
    """An input that describes another scenario than `phase` (`--batch-size` is decode's), exit 2."""
    for x in ESTIMATES[kind]:
        if x.name in present and x.phases and phase not in x.phases:
            wanted = x.phases[0]
            raise Refused(
                "phase",
                f"{x.flag} describes the {wanted} scenario, not {phase}: give --scenario {wanted}",
                x.name,
                "scenario",
            )
