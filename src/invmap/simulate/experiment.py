"""A simulation as an experiment record (format 1.0, result type `simulated`) addressing a source's
question, in the shape of the field guide's own simulated records (examples/experiments/
batching-*.json, kv-paged.json): the configuration, the main counts as raw measurements, the
derived metrics, the workload and the whole result in `artifacts`."""

from __future__ import annotations

from typing import Any

from invmap.simulate.runs import LABEL

MAX_INLINE = 1_000  # requests or events written into the record's workload; past this, the trace is named

BATCHING_RAW = (("completed_requests", "requests"), ("completed_output_tokens", "tokens"))
BATCHING_DERIVED = (
    ("p95_ttft", "p95_ttft_ticks", "ticks"),
    ("output_throughput", "output_tokens_per_tick", "tokens per tick"),
    ("goodput", "goodput_requests_per_tick", "requests per tick"),
)
ENGINE_DERIVED = (
    ("p95_ttft", "p95_ttft_ms", "ms"),
    ("p50_tpot", "p50_tpot_ms", "ms"),
    ("output_throughput", "output_tokens_per_second", "tokens per second"),
)
KV_RAW = ("reserved_blocks", "used_blocks", "free_blocks")
KV_DERIVED = ("evicted_blocks", "recomputed_blocks", "fragmentation_blocks")
HYPOTHESES = {
    "batching": "Scheduling policy changes the queueing and phase-interference tradeoff under the declared "
    "abstract work model.",
    "kv": "Physical paging can admit a logical allocation when total free blocks are sufficient but no "
    "contiguous span is large enough.",
}


def _value(name: str, value: float | int, unit: str) -> dict[str, Any]:
    return {"name": name, "value": value, "unit": unit, "evidence": LABEL}


def _measurements(sim: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(raw, derived): one run's under the field guide's names; several runs' prefixed by their name."""
    raw: list[dict[str, Any]] = []
    derived: list[dict[str, Any]] = []
    several = len(sim.runs) > 1
    for name, run in sim.runs.items():
        prefix = f"{name}_" if several else ""
        if sim.kind == "batching":
            agg = run.aggregate
            raw += [_value(prefix + key, agg[key], unit) for key, unit in BATCHING_RAW]
            table = BATCHING_DERIVED if sim.engine is None else ENGINE_DERIVED
            derived += [
                _value(prefix + label, float(agg[key]), unit) for label, key, unit in table if agg[key] is not None
            ]
        else:
            state = run.final_state
            raw += [_value(prefix + key, state[key], "blocks") for key in KV_RAW]
            derived += [_value(prefix + key, state[key], "blocks") for key in KV_DERIVED]
    return raw, derived


def _conclusion(sim: Any) -> str:
    if sim.engine is not None:
        parts = [
            f"{name}: p50 TTFT {run.aggregate['p50_ttft_ms']:,.3f} ms, "
            f"{run.aggregate['output_tokens_per_second']:,.1f} output tokens per second"
            for name, run in sim.runs.items()
        ]
        where = f"engine steps of {sim.engine['model']} on {sim.engine['gpu']}"
        return f"The simulation ({where}) gives " + "; ".join(parts) + ". " + sim.limitations[0]
    if sim.kind == "batching":
        parts = [
            f"{name}: p95 TTFT {run.aggregate['p95_ttft_ticks']:,} ticks, "
            f"{run.aggregate['output_tokens_per_tick']:.4g} output tokens per tick"
            for name, run in sim.runs.items()
        ]
    else:
        parts = [
            f"{name}: {run.final_state['reserved_blocks']:,} of {run.final_state['total_blocks']:,} blocks reserved, "
            f"{sum(e['status'] == 'failed' for e in run.event_log):,} events refused, "
            f"{run.final_state['fragmentation_blocks']:,} blocks fragmented"
            for name, run in sim.runs.items()
        ]
    return "The simulation gives " + "; ".join(parts) + ". " + sim.limitations[0]


def record(sim: Any, source: dict[str, Any], record_id: str, invmap_version: str) -> dict[str, Any]:
    """An experiment record (format 1.0, result type `simulated`) addressing `source`'s question."""
    raw, derived = _measurements(sim)
    key = "requests" if sim.kind == "batching" else "events"
    unit = "abstract scheduler tick" if sim.engine is None else "engine step, timed in milliseconds at the roofs"
    workload: dict[str, Any] = {"time_unit": unit, "trace": sim.workload()}
    if len(sim.items) <= MAX_INLINE:
        workload[key] = [item.to_dict() for item in sim.items]
    first = next(iter(sim.runs.values()))
    if sim.kind == "batching":
        configuration: dict[str, Any] = {"strategies": list(sim.runs), **first.config}
        if sim.engine is None:
            configuration["seed"] = 0
        if sim.tick_ms is not None:
            configuration["tick_ms"] = sim.tick_ms
    else:
        configuration = {
            "allocation_modes": list(sim.runs),
            **{k: v for k, v in first.config.items() if k != "allocation_mode"},
        }
    result = sim.to_json()
    if len(sim.items) > MAX_INLINE:  # the per-request rows or event logs stay in the trace's own output
        for run in result.get("results", {}).values():
            run.pop("per_request", None)
            run.pop("event_log", None)
        if "result" in result:
            result["result"].pop("event_log", None)
    return {
        "schema_version": "1.0",
        "record_id": record_id,
        "title": f"{' and '.join(sim.runs)} {sim.kind} simulation, addressing {source['name']}: {source['question']}",
        "hypothesis": HYPOTHESES[sim.kind],
        "result_type": LABEL,
        "workload": workload,
        "environment": {
            "execution": f"deterministic CPU-only simulation (invmap {invmap_version} simulate {sim.kind}, the field "
            "guide's rules)",
            "hardware": "not applicable"
            if sim.engine is None
            else f"none: {sim.engine['gpu']}'s roofs, simulated (no GPU ran)",
        },
        "configuration": configuration,
        "raw_measurements": raw,
        "derived_metrics": derived,
        "conclusion": _conclusion(sim),
        "limitations": [*sim.limitations, *(f"Rule: {rule}." for rule in sim.rules)],
        "artifacts": {"source_id": source["id"], "question": source["question"], "simulation": result},
        "sources": [source["url"]] if source.get("url") else [],
    }
