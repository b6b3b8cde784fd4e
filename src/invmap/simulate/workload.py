"""What a simulation runs on: requests (the batching simulator's) and KV events (the allocator's), the
rules each must meet, and the field guide's two built-in traces (its `workloads.batching_trace` and
`kv_simulation.kv_trace`). Records only: no I/O.

A check returns the problems of one record as (field, message) pairs, so a trace reader can say where
in its file each one is. The bounds are invmap's: past them a number is a typo or a corrupt file.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

MAX_REQUESTS = 1_000_000  # requests (or KV events) in one trace
MAX_TOKENS = 10_000_000  # prompt or output tokens of one request
MAX_TICK = 10**9  # an arrival or event tick (the --max-ticks bound too)
MAX_PRIORITY = 10**9  # |priority|
MAX_KV_TOKENS = 10**12  # tokens of one KV allocation

REQUEST_KEYS = ("request_id", "arrival_tick", "input_tokens", "output_tokens", "priority")
REQUEST_OPTIONAL = {"priority": 0, "shared_prefix_tokens": 0, "model": "example-transformer"}
EVENT_KEYS = ("tick", "action", "request_id", "tokens", "reserve_tokens")
EVENT_OPTIONAL = {"tokens": 0, "reserve_tokens": None}
ACTIONS = ("admit", "release", "evict", "touch")


class Request(namedtuple("Request", ("request_id", "arrival_tick", "input_tokens", "output_tokens", "priority"))):
    """One request of the tick model: it arrives at `arrival_tick`, needs `input_tokens` prefill units
    and `output_tokens` decode units; a lower `priority` is served first."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """In the field guide's form (`workload.requests` of its records), the fields the simulation reads."""
        return {
            "arrival_tick": self.arrival_tick,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "priority": self.priority,
            "request_id": self.request_id,
        }


class KVEvent(namedtuple("KVEvent", EVENT_KEYS)):
    """One allocator event at `tick`: admit `request_id` with `tokens` used of `reserve_tokens`
    reserved (None: as many as used), release it, evict it, or touch it (mark it recently used)."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """As the field guide's experiment records hold it (`workload.events`)."""
        return {
            "action": self.action,
            "request_id": self.request_id,
            "reserve_tokens": self.reserve_tokens,
            "tick": self.tick,
            "tokens": self.tokens,
        }


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _bounded(value: Any, low: int, high: int, what: str) -> str | None:
    """None when `value` is a whole number in low..high, else what is wrong."""
    if not _whole(value):
        return f"must be a whole number ({what}), not {_shown(value)}"
    if not low <= value <= high:
        return f"must be from {low:,} to {high:,} ({what}), not {value:,}"
    return None


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    if isinstance(value, (list, dict)):
        return "an array" if isinstance(value, list) else "an object"
    return repr(value)


def _fields(item: dict[str, Any], keys: tuple[str, ...], optional: dict[str, Any], what: str) -> list[tuple[str, str]]:
    """Keys that are not fields of the record, the required ones missing, and a request_id that is not
    a non-empty string."""
    out = [
        (key, f"is not {what} field ({what} has {', '.join(keys)})")
        for key in item
        if key not in keys and key not in optional
    ]
    out += [(key, "is missing") for key in keys if key not in item and key not in optional]
    rid = item.get("request_id")
    if "request_id" in item and (not isinstance(rid, str) or not rid):
        out.append(("request_id", f"must be a non-empty string, not {_shown(rid)}"))
    return out


def request_problems(item: dict[str, Any]) -> list[tuple[str, str]]:
    """The problems of one request object of the field guide's form, as (field, message)."""
    out = _fields(item, REQUEST_KEYS, REQUEST_OPTIONAL, "a request")
    checks = (
        ("arrival_tick", 0, MAX_TICK, "a tick"),
        ("input_tokens", 1, MAX_TOKENS, "prompt tokens"),
        ("output_tokens", 1, MAX_TOKENS, "output tokens"),
        ("priority", -MAX_PRIORITY, MAX_PRIORITY, "lower is served first"),
        ("shared_prefix_tokens", 0, MAX_TOKENS, "tokens shared with other prompts"),
    )
    for key, low, high, what in checks:
        if key in item and (problem := _bounded(item[key], low, high, what)):
            out.append((key, problem))
    shared, prompt = item.get("shared_prefix_tokens", 0), item.get("input_tokens")
    if _whole(shared) and _whole(prompt) and shared > prompt >= 1:
        out.append(("shared_prefix_tokens", f"cannot exceed input_tokens ({prompt:,}), not {shared:,}"))
    if "model" in item and (not isinstance(item["model"], str) or not item["model"]):
        out.append(("model", f"must be a non-empty string, not {_shown(item['model'])}"))
    return out


def request_of(item: dict[str, Any]) -> Request:
    """A checked request object (`request_problems` found nothing) as a Request."""
    return Request(
        item["request_id"],
        item["arrival_tick"],
        item["input_tokens"],
        item["output_tokens"],
        item.get("priority", 0),
    )


def event_problems(item: dict[str, Any]) -> list[tuple[str, str]]:
    """The problems of one KV event object of the field guide's form, as (field, message): the rules
    of its `KVEvent.validate`, with invmap's bounds."""
    out = _fields(item, EVENT_KEYS, EVENT_OPTIONAL, "an event")
    if "tick" in item and (problem := _bounded(item["tick"], 0, MAX_TICK, "a tick")):
        out.append(("tick", problem))
    action = item.get("action")
    if "action" in item and action not in ACTIONS:
        out.append(("action", f"must be {', '.join(ACTIONS[:-1])} or {ACTIONS[-1]}, not {_shown(action)}"))
    tokens, reserve = item.get("tokens", 0), item.get("reserve_tokens")
    low = 1 if action == "admit" else 0
    if problem := _bounded(tokens, low, MAX_KV_TOKENS, "tokens used"):
        out.append(("tokens", problem))
    if reserve is not None and (problem := _bounded(reserve, low, MAX_KV_TOKENS, "tokens reserved")):
        out.append(("reserve_tokens", problem))
    elif action == "admit" and _whole(tokens) and _whole(reserve) and reserve < tokens:
        out.append(("reserve_tokens", f"cannot be smaller than tokens ({tokens:,}), not {reserve:,}"))
    return out


def event_of(item: dict[str, Any]) -> KVEvent:
    """A checked event object (`event_problems` found nothing) as a KVEvent."""
    return KVEvent(item["tick"], item["action"], item["request_id"], item.get("tokens", 0), item.get("reserve_tokens"))


# The field guide's built-in traces (workloads.py `batching_trace`, kv_simulation.py `kv_trace`).
BUILT_IN_REQUESTS: tuple[Request, ...] = (
    Request("r1", 0, 8, 8, 0),
    Request("r2", 0, 12, 4, 0),
    Request("r3", 1, 4, 12, 1),
    Request("r4", 2, 16, 4, 0),
    Request("r5", 3, 6, 10, 1),
    Request("r6", 5, 10, 6, 0),
    Request("r7", 6, 3, 14, 1),
    Request("r8", 8, 14, 5, 0),
)
BUILT_IN_EVENTS: tuple[KVEvent, ...] = (
    KVEvent(0, "admit", "alpha", 4, 8),
    KVEvent(1, "admit", "beta", 8, 8),
    KVEvent(2, "admit", "gamma", 8, 8),
    KVEvent(3, "admit", "delta", 8, 8),
    KVEvent(4, "release", "beta", 0, None),
    KVEvent(5, "release", "delta", 0, None),
    KVEvent(6, "admit", "epsilon", 18, 20),
    KVEvent(7, "admit", "zeta", 8, 12),
    KVEvent(8, "touch", "alpha", 0, None),
)
