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
import invmap.simulate.engine as engine_steps
import invmap.simulate.kv as kv
import invmap.simulate.traces as traces
from invmap.errors import UsageError
from invmap.quantities import ENGINE_ROOFS
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


ENGINE_RULES = (
    "a tick is an engine step: at most max_num_seqs requests run, and a step computes at most "
    "max_num_batched_tokens tokens, prefill and decode together",
    "a step lasts max(operations / peak, bytes / bandwidth) of its work: each prefill chunk's and each decode's "
    "operations; the weights read once, plus the KV cache each request in the step reads or writes",
    "a request decodes one token a step; the step that finishes its prompt emits its first token",
    "static, continuous and chunked keep the tick model's rules; chunked puts every running request's decode "
    "first (decode_reserve_units: max_num_seqs) and gives prefill at most prefill_chunk_tokens a request "
    "(default: the whole budget)",
    "TPOT is (completion - first token) / (output tokens - 1), as vllm bench serve counts it; percentiles are "
    "nearest-rank; makespan = last completion - first arrival",
    "goodput counts requests with TTFT <= ttft_objective_ticks x tick_ms and completion <= "
    "completion_objective_ticks x tick_ms",
)
ENGINE_LIMITATIONS = (
    "An idealised lower bound, not a prediction: every step runs at its roofs (a measured engine sits above it).",
    "No kernel launch gaps, no CPU time (scheduling, sampling, detokenizing, HTTP), no communication between GPUs.",
    "Datasheet peaks, derated only by --efficiency (1: not at all); one GPU, the model's weights and KV at its dtype.",
    "The KV pool is not sized: every admitted request fits, nothing is preempted or swapped, no prefix is cached.",
)


class Simulation:
    """One command's result: `kind` (batching or kv), `runs` by strategy or allocation in the order
    asked, the workload (`trace`: None for the built-in one), the rules and limitations; `engine`
    (batching in milliseconds) the model, GPU and roofs the steps were timed on."""

    def __init__(
        self,
        kind: str,
        runs: dict[str, Any],
        trace: traces.Trace | None,
        tick_ms: float | None,
        engine: dict[str, Any] | None = None,
    ) -> None:
        self.kind, self.runs, self.trace, self.tick_ms, self.engine = kind, runs, trace, tick_ms, engine
        self.evidence = LABEL
        self.rules = BATCHING_RULES if kind == "batching" else KV_RULES
        self.limitations = LIMITATIONS[kind]
        if engine is not None:
            self.rules = ENGINE_RULES
            self.limitations = (*ENGINE_LIMITATIONS, *engine["assumptions"])

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
        if self.trace.tick_ns is not None and self.engine is None:
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
        if self.engine is not None:
            out["engine"] = self.engine
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
    values: dict[str, Any],
    strategies: list[str] | None,
    trace_path: str | None,
    tick_ms: float | None,
    engine: dict[str, Any] | None = None,
) -> Simulation:
    """The batching simulator: `values` by knob name (None: the field guide's default). With `engine`
    (model, gpu, max_num_batched_tokens, max_num_seqs, efficiency; None where not given) holding a
    model or a GPU or a number, ticks become engine steps in milliseconds."""
    if engine is not None and any(v is not None for v in engine.values()):
        return _run_engine(values, strategies, trace_path, tick_ms, engine)
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


# A trace in seconds or nanoseconds is read to 10 us in engine steps: arrivals up to 10^9 of them, 2.8 hours.
TIME_MS = 0.01
ENGINE_ONLY = ("max_num_batched_tokens", "max_num_seqs", *ENGINE_ROOFS)  # the options the engine mode adds


def _engine_inputs(given: dict[str, Any]) -> tuple[Any, Any, int, int]:
    """The model, the GPU and the step's budget (each option, else vLLM's `vllm serve` default for the GPU)."""
    from invmap.estimate.config import load_model
    from invmap.estimate.gpus import find_gpu
    from invmap.quantities import ENGINE_BUDGET, vllm_serve_batch

    if given.get("model") is None or given.get("gpu") is None:
        first = next(name for name in ("model", "gpu", *ENGINE_ONLY) if given.get(name) is not None)
        flag = "--" + first.replace("_", "-")
        raise UsageError(
            f"{flag} needs both --model and --gpu: they make a tick an engine step in milliseconds"
            if first in ENGINE_ONLY
            else f"{flag} needs {'--gpu' if first == 'model' else '--model'} too: the steps are timed on both"
        )
    for q in ENGINE_BUDGET:
        value = given.get(q.name)
        if value is not None and (problem := q.bounds.problem(value)):
            raise UsageError(f"{q.flag} {problem}")
    model = load_model(given["model"])
    gpu = find_gpu(given["gpu"])
    tokens, seqs = vllm_serve_batch(gpu.memory_reported_bytes or gpu.memory_bytes, gpu.name)
    budget = given.get("max_num_batched_tokens") or tokens
    return model, gpu, budget, min(given.get("max_num_seqs") or seqs, budget)


def _budget_inputs(given: dict[str, Any], gpu: Any, config: dict[str, Any]) -> list[dict[str, Any]]:
    """The step's budget as the estimates list an input: its value, unit and where it came from."""
    from invmap.quantities import ENGINE_BUDGET

    default = f"vLLM V1's vllm serve default for {gpu.display}"
    return [
        {
            "name": q.name,
            "value": config[q.name],
            "unit": q.unit,
            "from": "option" if given.get(q.name) is not None else default,
        }
        for q in ENGINE_BUDGET
    ]


def _arrivals(trace: traces.Trace | None, requests: Any, tick_ms: float) -> list[float]:
    """Each request's arrival in seconds: a trace's own times, or its ticks at `tick_ms` a tick."""
    if trace is not None and trace.tick_ns is not None:
        return [r.arrival_tick * trace.tick_ns / 1e9 for r in requests]
    return [r.arrival_tick * tick_ms / 1e3 for r in requests]


def _arrivals_said(trace: traces.Trace | None, tick_ms: float | None, ms: float) -> str:
    if trace is None or trace.tick_ns is None:
        return f"ticks of {ms:g} ms (--tick-ms)"
    return f"the trace's times, to {TIME_MS * 1e3:g} us" if tick_ms is None else f"the trace's times, to {ms:g} ms"


def _run_engine(
    values: dict[str, Any],
    strategies: list[str] | None,
    trace_path: str | None,
    tick_ms: float | None,
    given: dict[str, Any],
) -> Simulation:
    from invmap.estimate.roofline_estimate import engine_roofs

    chosen = _chosen(strategies, STRATEGIES, "--strategy")
    model, gpu, budget, seqs = _engine_inputs(given)
    if tick_ms is not None and not (math.isfinite(tick_ms) and TICK_MS.low <= tick_ms <= TICK_MS.high):
        raise UsageError(f"--tick-ms must be from {TICK_MS.low:g} to {TICK_MS.high:,}, not {tick_ms:g}")
    ms = TICK_MS.default if tick_ms is None else tick_ms
    config = engine_steps.check_config(values, budget, seqs, ms)
    roofs = engine_roofs({name: given.get(name) for name in ENGINE_ROOFS}, model, gpu)
    trace = None
    if trace_path is not None:  # times are kept to TIME_MS unless --tick-ms says otherwise
        trace = traces.read(trace_path, "requests", TIME_MS if tick_ms is None else tick_ms)
    requests = trace.items if trace is not None else BUILT_IN_REQUESTS
    arrivals = _arrivals(trace, requests, ms)
    runs = {name: engine_steps.simulate(config, requests, arrivals, name, roofs) for name in chosen}
    described = {
        "model": model.display,
        "gpu": gpu.display,
        "inputs": [*_budget_inputs(given, gpu, config), *(i.as_json() for i in roofs.inputs)],
        "peak_operations_per_second": roofs.peak,
        "bandwidth_bytes_per_second": roofs.bandwidth,
        "arrivals": _arrivals_said(trace, tick_ms, ms),
        "assumptions": roofs.assumptions,
        "limitations": list(ENGINE_LIMITATIONS),
    }
    return Simulation("batching", runs, trace, None, described)
