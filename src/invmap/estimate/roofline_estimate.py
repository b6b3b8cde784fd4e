"""`estimate roofline` (the field guide's `ie roofline`): the lower of the compute and
memory-bandwidth roofs, for given operations and bytes or a model's phase on a GPU."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from invmap.estimate.checks import check_all, check_clashes, check_needs, check_phase
from invmap.estimate.config import Model
from invmap.estimate.gpus import Gpu
from invmap.estimate.inputs import GPU, MODEL, Input, Inputs, gpu_part
from invmap.estimate.phase import StepCosts, model_costs, model_phase
from invmap.estimate.refusals import Refused
from invmap.estimate.result import Estimate, Said, estimate_result
from invmap.estimate.units import grouped, human_rate

ROOFLINE_LIMITATIONS = [
    "The bound omits launch overhead, synchronization, contention, cache effects and transfer behaviour (the field "
    "guide's equations page); it is a bound, not a throughput prediction.",
    "Datasheet peaks are rarely reached; measure the phase before choosing an optimization.",
]


def roofline_estimate(options: dict[str, Any], model: Model | None, gpu: Gpu | None) -> Estimate:
    """`ie roofline`: explicit operations and bytes, or a model's prefill or decode step on a GPU."""
    check_all(options)
    inputs = Inputs(options, "roofline")
    scenario = inputs.pick("scenario")
    formulas: list[str] = []
    assumptions: list[str] = []
    notes: list[str] = []
    tokens_per_step = None
    derived_ops = derived_bytes = None
    if model is not None and (options.get("operations") is None or options.get("bytes_moved") is None):
        check_phase("roofline", {name for name, value in options.items() if value is not None}, scenario)
        derived_ops, derived_bytes, tokens_per_step, lines, said = model_phase(inputs, model, scenario)
        formulas += lines
        assumptions += said
    else:
        present = {name for name, value in options.items() if value is not None}
        check_clashes("roofline", present)
        check_needs("roofline", present | ({"model"} if model is not None else set()))
    ops = inputs.pick("operations", (derived_ops, MODEL))
    moved = inputs.pick("bytes_moved", (derived_bytes, MODEL))
    peak, bandwidth = _roofs(inputs, gpu, formulas, assumptions)
    intensity = ops / moved
    bandwidth_ceiling = intensity * bandwidth
    upper = min(peak, bandwidth_ceiling)
    limiting = "compute" if peak <= bandwidth_ceiling else "memory_bandwidth"
    ridge = peak / bandwidth
    formulas += [
        f"arithmetic_intensity = O / D = {grouped(ops)} / {grouped(moved)} = {grouped(intensity)} operations per byte",
        f"ridge_point = P_peak / BW = {grouped(peak)} / {grouped(bandwidth)} = {grouped(ridge)} operations per byte",
        f"bandwidth_ceiling = arithmetic_intensity x BW = {grouped(intensity)} x {grouped(bandwidth)} = {grouped(bandwidth_ceiling)} "
        f"operations per second ({human_rate(bandwidth_ceiling, 'FLOP/s')})",
        f"upper_bound = min(P_peak, bandwidth_ceiling) = min({grouped(peak)}, {grouped(bandwidth_ceiling)}) = {grouped(upper)} "
        f"operations per second ({human_rate(upper, 'FLOP/s')}): the lower roof is "
        f"{'compute' if limiting == 'compute' else 'memory bandwidth'}",
    ]
    results: dict[str, Any] = {
        "arithmetic_intensity_operations_per_byte": intensity,
        "ridge_point_operations_per_byte": ridge,
        "bandwidth_ceiling_operations_per_second": bandwidth_ceiling,
        "compute_ceiling_operations_per_second": peak,
        "upper_bound_operations_per_second": upper,
    }
    units = {
        "arithmetic_intensity_operations_per_byte": "operations per byte",
        "ridge_point_operations_per_byte": "operations per byte",
        "bandwidth_ceiling_operations_per_second": "operations per second",
        "compute_ceiling_operations_per_second": "operations per second",
        "upper_bound_operations_per_second": "operations per second",
    }
    if tokens_per_step is not None and options.get("operations") is None:
        step = step_seconds(ops, moved, peak, bandwidth)
        rate = upper / (ops / tokens_per_step)
        results.update({"step_time_lower_bound_seconds": step, "tokens_per_second_upper_bound": rate})
        units.update({"step_time_lower_bound_seconds": "seconds", "tokens_per_second_upper_bound": "tokens per second"})
        formulas.append(
            f"step_time >= max(O / P_peak, D / BW) = max({grouped(ops / peak)}, {grouped(moved / bandwidth)}) s = {step * 1e3:,.3f} ms"
        )
        formulas.append(
            f"tokens_per_second <= upper_bound / (O / tokens per step) = {grouped(upper)} / ({grouped(ops)} / {tokens_per_step:,}) "
            f"= {rate:,.1f} tokens/s"
        )
    extra = {"limiting_resource": limiting, "scenario": scenario}
    said = Said(formulas, assumptions, list(ROOFLINE_LIMITATIONS), notes)
    workload = {"scenario": scenario, **({"tokens_per_step": tokens_per_step} if tokens_per_step else {})}
    return estimate_result("roofline", inputs, model, gpu, results, units, said, workload, extra)


def step_seconds(operations: float, moved: float, peak: float, bandwidth: float) -> float:
    """A step's time at its roofs: max(O / P_peak, D / BW) (a lower bound: nothing else takes time)."""
    return max(operations / peak, moved / bandwidth)


@dataclass(frozen=True)
class EngineRoofs:
    """What an engine step of `model` on `gpu` costs and how fast it can go: the model's costs by
    piece, the derated roofs, the inputs used (each with where it came from) and what they assume.
    A step's time is `seconds(O, D)`, the roofline's own bound."""

    costs: StepCosts
    peak: float
    bandwidth: float
    inputs: list[Input]
    assumptions: list[str]
    formulas: list[str]

    def seconds(self, operations: float, moved: float) -> float:
        return step_seconds(operations, moved, self.peak, self.bandwidth)


def engine_roofs(options: dict[str, Any], model: Model, gpu: Gpu) -> EngineRoofs:
    """The roofs and costs `estimate roofline --model --gpu` uses, for a simulation summing steps of
    its own (`options`: the roofline's inputs by name, e.g. efficiency)."""
    check_all(options)
    inputs = Inputs(options, "roofline")
    costs, assumptions = model_costs(inputs, model)
    formulas: list[str] = []
    peak, bandwidth = _roofs(inputs, gpu, formulas, assumptions)
    return EngineRoofs(costs, peak, bandwidth, list(inputs.items), assumptions, formulas)


def _roofs(inputs: Inputs, gpu: Gpu | None, formulas: list[str], assumptions: list[str]) -> tuple[float, float]:
    """P_peak and BW: an option, else the GPU's dense BF16 peak and memory bandwidth, else the field
    guide's defaults; then both multiplied by --efficiency (1 when not given)."""
    options = inputs.options
    peak_gpu = bandwidth_gpu = None
    if options.get("peak_operations_per_second") is None:
        peak_gpu = _gpu_figure(gpu, "bf16_dense", "dense BF16 peak", "--peak-operations-per-second")
    if options.get("bandwidth_bytes_per_second") is None:
        bandwidth_gpu = _gpu_figure(gpu, "bandwidth", "memory bandwidth", "--bandwidth-bytes-per-second")
    peak = inputs.pick(
        "peak_operations_per_second",
        (peak_gpu, gpu_part(f"dense BF16, {gpu.reading('bf16_dense').shown()}") if gpu else GPU),
    )
    bandwidth = inputs.pick(
        "bandwidth_bytes_per_second", (bandwidth_gpu, gpu_part(gpu.reading("bandwidth").shown()) if gpu else GPU)
    )
    if peak_gpu is not None or bandwidth_gpu is not None:
        assumptions.append(
            f"The roofs are {gpu.display}'s datasheet figures (dense BF16 peak, memory bandwidth; "  # type: ignore[union-attr]
            "invmap gpus shows where each was read): a step rarely reaches them."
        )
    efficiency = inputs.pick("efficiency")
    if efficiency != 1:
        formulas.append(
            f"P_peak = {grouped(peak)} x {efficiency:g} = {grouped(peak * efficiency)} operations per second; "
            f"BW = {grouped(bandwidth)} x {efficiency:g} = {grouped(bandwidth * efficiency)} bytes per second"
        )
        assumptions.append(
            f"Both roofs derated by --efficiency {efficiency:g}: the step reaches that fraction of the peak and of "
            "the bandwidth."
        )
    return peak * efficiency, bandwidth * efficiency


def _gpu_figure(gpu: Gpu | None, key: str, what: str, flag: str) -> float | None:
    if gpu is None:
        return None
    value = gpu.base(key)
    if value is None:
        raise Refused(
            "gpu_figure",
            f"invmap's table has no {what} for {gpu.display} (no source it accepts gives one): give {flag}",
            flag.removeprefix("--").replace("-", "_"),
            "gpu",
        )
    return value  # type: ignore[no-any-return]
