"""`simulate batching` and `simulate kv` without the CLI: options in, a `Simulation` out.

A simulation runs the chosen strategies (or allocations) on one workload, the field guide's built-in
trace or the user's (`traces.read`), and carries what every output needs: the runs, the workload's
description, the rules and assumptions. `Simulation.to_json()` is `ie`'s shape (`evidence`, then
`results` keyed by strategy or allocation, or `result` for one allocation), with a `trace` key added
when the workload is a file.
"""

from __future__ import annotations

import math
from typing import Any

import invmap.simulate.batching as batching
import invmap.simulate.kv as kv
import invmap.simulate.traces as traces
from invmap.errors import UsageError
from invmap.simulate.knobs import ALLOCATIONS, STRATEGIES, TICK_MS
from invmap.simulate.workload import BUILT_IN_EVENTS, BUILT_IN_REQUESTS

LABEL = "simulated"

BATCHING_RULES = (
    "a tick's budget is capacity_units_per_tick + batch_bonus_units x (active requests - 1); one unit is one "
    "prefill or one decode token",
    "units go one at a time, round-robin over a phase's active requests by (priority, admitted tick, id)",
    "static: a batch starts only when none runs, with max_active_requests ready or the oldest waiting "
    "static_max_wait_ticks; prefill while any request is in prefill, then decode",
    "continuous: free places filled every tick by (priority, arrival, id); prefill first, then decode",
    "chunked: decode_reserve_units for decode first, then at most prefill_chunk_tokens of prefill a request, "
    "then decode",
    "a first token lands the tick after the request's first decode unit; percentiles are nearest-rank; "
    "makespan = last completion - first arrival",
    "goodput counts requests with TTFT <= ttft_objective_ticks and completion <= completion_objective_ticks",
)
KV_RULES = (
    "a request reserves ceil(reserve_tokens / block_size_tokens) blocks (reserve_tokens: tokens when not given)",
    "paged takes the lowest-numbered free blocks; contiguous the first free run long enough",
    "with auto_evict, victims by least recent touch (then id) are planned before anything changes",
    "a touch of an evicted request allocates it again and counts its blocks as recomputed",
    "fragmentation = free blocks - the largest free run; free + reserved = total after every event",
)
ABSTRACT = (
    "Ticks and units are the field guide's abstract scheduler model, not time or a GPU: compare rules on one "
    "trace, do not read them as latencies."
)
LIMITATIONS = {
    "batching": (
        ABSTRACT,
        "A unit is a token, not a step: one request may decode several tokens in one tick, as no engine does.",
    ),
    "kv": (
        ABSTRACT,
        "Eviction is least recently touched first, one rule among many, not a recommendation.",
        "Every block holds the same number of tokens; no prefix is shared between requests.",
    ),
}


class Simulation:
    """One command's result: `kind` (batching or kv), `runs` by strategy or allocation in the order
    asked, the workload (`trace`: None for the built-in one), the rules and limitations."""

    def __init__(self, kind: str, runs: dict[str, Any], trace: traces.Trace | None, tick_ms: float | None) -> None:
        self.kind, self.runs, self.trace, self.tick_ms = kind, runs, trace, tick_ms
        self.evidence = LABEL
        self.rules = BATCHING_RULES if kind == "batching" else KV_RULES
        self.limitations = LIMITATIONS[kind]

    @property
    def items(self) -> tuple[Any, ...]:
        if self.trace is not None:
            return self.trace.items
        return BUILT_IN_REQUESTS if self.kind == "batching" else BUILT_IN_EVENTS

    def workload(self) -> dict[str, Any]:
        """Where the requests or events came from."""
        if self.trace is None:
            name = "requests r1..r8" if self.kind == "batching" else "KV events alpha..zeta"
            return {
                "source": f"the field guide's built-in trace ({name})",
                "form": "built-in",
                "count": len(self.items),
            }
        out: dict[str, Any] = {"path": self.trace.path, "form": self.trace.form, "count": len(self.items)}
        if self.trace.tick_ns is not None:
            out["tick_ms"] = self.trace.tick_ns / 1e6
        out["sha256"] = self.trace.sha256
        return out

    def to_json(self) -> dict[str, Any]:
        """`ie`'s JSON (per-request rows and event logs included), and `trace` for a file's workload."""
        out: dict[str, Any] = {"evidence": LABEL}
        if self.kind == "kv" and len(self.runs) == 1:
            out["result"] = next(iter(self.runs.values())).to_dict()
        else:
            out["results"] = {name: self.runs[name].to_dict() for name in sorted(self.runs)}
        if self.trace is not None:
            out["trace"] = self.workload()
        return out


def _chosen(given: list[str] | None, known: tuple[str, ...], flag: str) -> list[str]:
    """The values of a repeatable, comma-separated option, each one of `known`, in the order given."""
    if not given:
        return list(known)
    out: list[str] = []
    for part in (p.strip().casefold() for value in given for p in value.split(",")):
        if part not in known:
            raise UsageError(f"{flag} takes {', '.join(known[:-1])} or {known[-1]}, not '{part}'")
        if part not in out:
            out.append(part)
    return out


def _tick_ms(tick_ms: float | None, trace_path: str | None) -> float:
    if tick_ms is None:
        return TICK_MS.default
    if trace_path is None:
        raise UsageError("--tick-ms goes with --trace: it says how long a tick of a trace in seconds or nanoseconds is")
    if not (math.isfinite(tick_ms) and TICK_MS.low <= tick_ms <= TICK_MS.high):
        raise UsageError(f"--tick-ms must be from {TICK_MS.low:g} to {TICK_MS.high:,}, not {tick_ms:g}")
    return tick_ms


def _workload(trace_path: str | None, kind: str, tick_ms: float | None) -> tuple[traces.Trace | None, float | None]:
    ms = _tick_ms(tick_ms, trace_path)
    if trace_path is None:
        return None, None
    trace = traces.read(trace_path, kind, ms)
    if tick_ms is not None and trace.tick_ns is None:
        raise UsageError(
            f"{trace_path} counts its arrivals in ticks already; --tick-ms is for a trace in seconds or nanoseconds"
        )
    return trace, (ms if trace.tick_ns is not None else None)


def run_batching(
    values: dict[str, Any], strategies: list[str] | None, trace_path: str | None, tick_ms: float | None
) -> Simulation:
    """The batching simulator: `values` by knob name (None: the field guide's default)."""
    config = batching.check_config(values)
    chosen = _chosen(strategies, STRATEGIES, "--strategy")
    trace, ms = _workload(trace_path, "requests", tick_ms)
    requests = trace.items if trace is not None else BUILT_IN_REQUESTS
    last = max(r.arrival_tick for r in requests)
    if last >= config["max_ticks"]:
        raise UsageError(
            f"the last request arrives at tick {last:,}, past --max-ticks {config['max_ticks']:,}: raise --max-ticks"
            + (" or --tick-ms" if ms is not None else "")
        )
    runs = {name: batching.simulate(config, requests, name) for name in chosen}
    return Simulation("batching", runs, trace, ms)


def run_kv(
    values: dict[str, Any], allocations: list[str] | None, auto_evict: bool, trace_path: str | None
) -> Simulation:
    """The KV allocator: `values` by knob name (None: the field guide's default)."""
    chosen = _chosen(allocations, ALLOCATIONS, "--allocation")
    configs = {name: kv.check_config(values, name, auto_evict) for name in chosen}
    trace, _ = _workload(trace_path, "events", None)
    events = trace.items if trace is not None else BUILT_IN_EVENTS
    runs = {name: kv.simulate(configs[name], events) for name in chosen}
    return Simulation("kv", runs, trace, None)
