"""`estimate memory` (the field guide's `ie memory model`): weights and activations, and with a
device's memory what is left for the KV pool at a utilization fraction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from invmap.estimate.checks import check, check_all, check_clashes, check_needs
from invmap.estimate.config import Model
from invmap.estimate.encoders import encoder_sentences
from invmap.estimate.engine import engine_estimate
from invmap.estimate.gpus import Gpu
from invmap.estimate.inputs import MODEL, OPTION, From, Inputs, gpu_part, model_part
from invmap.estimate.kvshape import KvShape, kv_shape, token_formula
from invmap.estimate.layout import Layout, layout_of
from invmap.estimate.parameters import parameters_of, safetensors_total
from invmap.estimate.refusals import Refused
from invmap.estimate.result import Estimate, Said, estimate_result
from invmap.estimate.units import human_bytes, parse_size
from invmap.estimate.weights import count

MEMORY_LIMITATIONS = [
    "It leaves out CUDA graphs, runtime workspaces, allocator slack and fragmentation, non-torch memory (CUDA "
    "context, communication buffers) and activation peaks beyond the modelled working set.",
    "The KV pool is what is left after weights and the activation working set; an engine measures its own "
    "(vLLM profiles a forward pass before it sizes the cache).",
]


def memory_estimate(options: dict[str, Any], model: Model | None, gpu: Gpu | None) -> Estimate:
    """`ie memory model`, and with a device's memory what is left for KV at a utilization fraction;
    with --engine, the engine's start-up (`engine.py`)."""
    check_all(options)
    if options.get("engine") is not None:
        check_clashes("memory", {n for n, v in options.items() if v is not None})
        return engine_estimate(options, model, gpu)
    check_needs("memory", {n for n, v in options.items() if v is not None} | ({"gpu"} if gpu is not None else set()))
    inputs = Inputs(options, "memory")
    layout = layout_of(model) if model is not None else None
    counted = parameters_of(model) if model is not None else None
    stored = safetensors_total(model) if model is not None and options.get("parameters") is None else None
    weights, formulas = _weights(inputs, model, layout, counted, stored)
    batch, length, activations, lines = _activations(inputs, layout)
    total = weights + activations
    formulas += lines
    formulas.append(
        f"total_bytes = weights_bytes + activation_bytes = {weights:,} + {activations:,} = {total:,} B ({human_bytes(total)})"
    )
    results: dict[str, Any] = {"weights_bytes": weights, "activation_bytes": activations, "total_bytes": total}
    units = dict.fromkeys(results, "bytes")
    extra: dict[str, Any] = {"fits": None, "verdict": None}
    notes: list[str] = []
    assumptions: list[str] = []
    device_memory, memory_said = _device_memory(inputs, gpu)
    if device_memory is not None:
        pool = _pool(inputs, model, layout, Footprint(device_memory, weights, activations, length))
        _pool_results(pool, results, units)
        formulas += _pool_formulas(pool)
        fits, verdict = _verdict(pool, *_device_words(pool, gpu, options))
        extra.update(fits=fits, verdict=verdict)
        notes += _pool_notes(pool)
        assumptions += [*_pool_assumptions(pool), *memory_said]
    else:
        check_needs("memory", {name for name, value in options.items() if value is not None})
    if model is not None and stored is None and options.get("parameters") is None:
        assumptions += _counted_assumptions(model, counted)
    said = Said(formulas, assumptions, list(MEMORY_LIMITATIONS), notes)
    workload = {"batch_size": batch, "sequence_length": length}
    return estimate_result("memory", inputs, model, gpu, results, units, said, workload, extra)


def _counted_assumptions(model: Model, counted: tuple[int, int] | None) -> list[str]:
    """What weights counted from the config's keys leave to the reader: the modules counted (the field
    guide's count), and a multimodal config's encoders, which are not."""
    said = []
    if counted is not None:
        said.append(
            f"Parameters counted from the config ({model.model_type}): embeddings, attention, MLP"
            + (" (every expert)" if model.model_type == "mixtral" else "")
            + ", norms and the output head unless tied."
        )
    return said + encoder_sentences(model, counting=counted is None)


# --- the terms: weights, activations, the KV pool -----------------------------------------------


def _weights(
    inputs: Inputs,
    model: Model | None,
    layout: Layout | None,
    counted: tuple[int, int] | None,
    stored: int | None,
) -> tuple[int, list[str]]:
    """The weights' bytes: the safetensors index's total, else parameters x bytes per weight."""
    if stored is not None:
        inputs.add("weights_bytes", stored, "bytes", From("model", "model.safetensors.index.json"))
        return stored, [
            f"weights_bytes = metadata.total_size of model.safetensors.index.json = {stored:,} B ({human_bytes(stored)})"
        ]
    if model is not None and inputs.options.get("parameters") is None and counted is None:
        generic = count(model)  # any decoder config by its standard keys, quantization_config included
        inputs.add("parameters", generic.parameters, "parameters", model_part("counted from its config's keys"))
        weights = generic.total_bytes
        stored = f", {generic.format.words} for the linear modules" if generic.format else ""
        if generic.expert_format is not None:
            stored += f", {generic.expert_format.words} for the routed experts"
        return weights, [
            f"weights_bytes = {generic.parameters:,} parameters counted module by module at {generic.dtype_bytes} B"
            f"{stored} = {weights:,} B ({human_bytes(weights)})"
        ]
    parameters = inputs.pick("parameters", (counted[0] if counted else None, model_part("counted from its config")))
    weight_bytes = inputs.pick("weight_bytes", (layout.dtype_bytes if layout else None, MODEL))
    weights = parameters * weight_bytes
    return weights, [
        f"weights_bytes = P x b_w = {parameters:,} x {weight_bytes} = {weights:,} B ({human_bytes(weights)})"
    ]


def _activations(inputs: Inputs, layout: Layout | None) -> tuple[int, int, int, list[str]]:
    """The activation working set, B x S x H x b_a x a: (batch, sequence length, bytes, formula)."""
    inputs.pick("layers", (layout.layers if layout else None, MODEL))
    hidden = inputs.pick("hidden_size", (layout.hidden_size if layout else None, MODEL))
    batch = inputs.pick("batch_size")
    length = inputs.pick("sequence_length")
    act_bytes = inputs.pick("activation_bytes")
    tensors = inputs.pick("activation_tensors")
    activations = batch * length * hidden * act_bytes * tensors
    return (
        batch,
        length,
        activations,
        [
            f"activation_bytes = B x S x H x b_a x a = {batch:,} x {length:,} x {hidden:,} x {act_bytes} x {tensors} = "
            f"{activations:,} B ({human_bytes(activations)})"
        ],
    )


@dataclass
class Footprint:
    """What the KV pool is carved from: the device's memory, less the weights and activations."""

    device_memory: int
    weights: int
    activations: int
    sequence_length: int


@dataclass
class Pool:
    """The KV pool on one device: the budget at the utilization fraction, less the weights (per GPU)
    and the activations, in bytes and in tokens (`notes`: what reading the KV shape said)."""

    start: Footprint
    shape: KvShape
    tp_lines: list[str]
    notes: list[str]
    utilization: float
    request: int
    block: int | None

    @property
    def budget(self) -> int:
        return int(self.start.device_memory * self.utilization)

    @property
    def weights_gpu(self) -> int:
        tp = self.shape.tensor_parallel
        return self.start.weights // tp if tp > 1 else self.start.weights

    @property
    def left(self) -> int:
        return self.budget - self.weights_gpu - self.start.activations

    @property
    def per_request(self) -> int:
        return self.shape.per_sequence(self.request)

    @property
    def tokens(self) -> int:
        tokens = max(self.left, 0) // self.shape.per_token()
        return tokens if self.block is None else tokens // self.block * self.block

    @property
    def concurrency(self) -> float:
        return max(self.left, 0) / self.per_request


def _pool(inputs: Inputs, model: Model | None, layout: Layout | None, start: Footprint) -> Pool:
    shape, tp_lines, notes = kv_shape(inputs, model, layout)
    util = inputs.pick("gpu_memory_utilization")
    length_origin = inputs.origin("sequence_length") or "option"
    request = inputs.pick(
        "tokens_per_request",
        (layout.max_positions if layout else None, model_part("max_position_embeddings")),
        (start.sequence_length, From(length_origin, "--sequence-length")),
    )
    block = inputs.options.get("block_size")
    if block is not None:
        check("block_size", block)
        inputs.add("block_size", block, "tokens", OPTION)
    return Pool(start, shape, tp_lines, list(notes), util, request, block)


def _pool_results(pool: Pool, results: dict[str, Any], units: dict[str, str]) -> None:
    results.update(
        {
            "memory_bytes": pool.start.device_memory,
            "budget_bytes": pool.budget,
            "kv_available_bytes": max(pool.left, 0),
            "kv_bytes_per_token": pool.shape.per_token(),
            "kv_pool_tokens": pool.tokens,
            "max_concurrency": round(pool.concurrency, 2),
        }
    )
    units.update(dict.fromkeys(("memory_bytes", "budget_bytes", "kv_available_bytes", "kv_bytes_per_token"), "bytes"))
    if pool.shape.tensor_parallel > 1:
        results["weights_bytes_per_gpu"] = pool.weights_gpu
        units["weights_bytes_per_gpu"] = "bytes"
    units.update({"kv_pool_tokens": "tokens", "max_concurrency": f"requests of {pool.request:,} tokens"})


def _pool_formulas(pool: Pool) -> list[str]:
    memory, util, budget, left = pool.start.device_memory, pool.utilization, pool.budget, pool.left
    weights, weights_gpu, tp = pool.start.weights, pool.weights_gpu, pool.shape.tensor_parallel
    lines = [f"budget_bytes = memory x utilization = {memory:,} x {util:g} = {budget:,} B ({human_bytes(budget)})"]
    if tp > 1:
        lines.append(f"weights_bytes_per_gpu = weights_bytes / N = {weights:,} / {tp} = {weights_gpu:,} B")
    lines.append(
        f"kv_available_bytes = budget - weights{'_per_gpu' if tp > 1 else ''} - activation_bytes = {budget:,} - "
        f"{weights_gpu:,} - {pool.start.activations:,} = {left:,} B ({human_bytes(left)})"
    )
    lines += pool.tp_lines
    lines.append(token_formula(pool.shape, per_gpu=True).replace("bytes_per_token", "kv_bytes_per_token", 1))
    rounding = f", rounded down to blocks of {pool.block} tokens" if pool.block else ""
    lines.append(
        f"kv_pool_tokens = floor(kv_available_bytes / kv_bytes_per_token){rounding} = {pool.tokens:,} tokens "
        "(vLLM logs this as 'GPU KV cache size: N tokens')"
    )
    lines.append(
        f"max_concurrency = kv_available_bytes / bytes_per_request = {max(left, 0):,} / {pool.per_request:,} = "
        f"{pool.concurrency:.2f}x (vLLM: 'Maximum concurrency for {pool.request:,} tokens per request: Nx')"
    )
    return lines


def _device_words(pool: Pool, gpu: Gpu | None, options: dict[str, Any]) -> tuple[str, str]:
    """How the verdict names the device and its memory: the GPU's own words (the figure the pool was
    sized on), unless --memory was given."""
    if gpu is not None and options.get("memory") is None:
        if gpu.memory_reported_bytes is not None:
            return gpu.display, f"{gpu.reading('memory_reported').shown()} (the total it reports)"
        return gpu.display, gpu.reading("memory").shown()
    return "the device", human_bytes(pool.start.device_memory)


def _verdict(pool: Pool, label: str, stated: str) -> tuple[bool, str]:
    """Whether the KV pool holds one request, and the sentence saying so."""
    left, util, request = pool.left, pool.utilization, pool.request
    if pool.weights_gpu > pool.start.device_memory:
        return False, f"weights alone need {human_bytes(pool.weights_gpu)}; {label} has {stated}"
    if left <= 0:
        return (
            False,
            f"weights ({human_bytes(pool.weights_gpu)}) and activations ({human_bytes(pool.start.activations)}) "
            f"leave no room for KV in {human_bytes(pool.budget)} ({util:g} of {label}'s {stated})",
        )
    if pool.per_request > left:
        return (
            False,
            f"one request of {request:,} tokens needs {human_bytes(pool.per_request)} of KV; {human_bytes(left)} is left",
        )
    return (
        True,
        f"{pool.tokens:,} tokens of KV fit ({pool.concurrency:.2f} requests of {request:,} tokens) in the "
        f"{human_bytes(left)} left of {label}'s {stated} at {util:g}",
    )


def _pool_notes(pool: Pool) -> list[str]:
    if pool.shape.kind == "standard" and any(w is not None for w in pool.shape.windows):
        return [
            *pool.notes,
            "Sliding-window layers: kv_pool_tokens divides by bytes_per_token (every layer full); max_concurrency "
            "uses the window-bounded bytes of one request. vLLM's hybrid KV cache manager reports token counts "
            "between the two.",
        ]
    return list(pool.notes)


def _pool_assumptions(pool: Pool) -> list[str]:
    said = [
        "vLLM's --gpu-memory-utilization meaning: the fraction of the device's memory the engine may use in all "
        "(weights, activations and KV)."
    ]
    if pool.shape.tensor_parallel > 1:
        said.append("Tensor parallelism splits the weights evenly across the GPUs (embeddings included).")
    return said


def _device_memory(inputs: Inputs, gpu: Gpu | None) -> tuple[int | None, list[str]]:
    """The memory the KV pool is carved from, and what is assumed of it: --memory, else the total the
    GPU reports to CUDA or ROCm (what vLLM multiplies by its utilization), else the datasheet's."""
    given = inputs.options.get("memory")
    if given is not None:
        value = parse_size(str(given))
        inputs.add("memory", value, "bytes", OPTION)
        return value, []
    if gpu is None:
        return None, []
    reported = gpu.reading("memory_reported")
    if gpu.memory_reported_bytes is not None:  # what the engine's utilization fraction multiplies
        inputs.add(
            "memory", gpu.memory_reported_bytes, "bytes", gpu_part(f"{reported.shown()} as the device reports it")
        )
        return gpu.memory_reported_bytes, [
            f"memory is the total {gpu.display} reports to CUDA ({reported.shown()}, as vLLM logs total_gpu_memory), "
            "which vLLM multiplies by --gpu-memory-utilization; it varies a little with the driver."
        ]
    if gpu.memory_bytes is None:
        raise Refused(
            "gpu_figure",
            f"invmap's table has no memory figure for {gpu.display} (no source it accepts gives one): give --memory "
            "(for example 24GB, or the total nvidia-smi shows, 24564MiB)",
            "memory",
            "gpu",
        )
    stated = gpu.reading("memory")
    inputs.add("memory", gpu.memory_bytes, "bytes", gpu_part(f"{stated.shown()} as the datasheet states it"))
    return gpu.memory_bytes, [
        f"memory is the datasheet's {stated.shown()} ({gpu.memory_bytes:,} bytes): invmap's table has no total "
        f"{gpu.display} reports to CUDA, which is what vLLM multiplies (an H100 SXM's 80 GB reports 79.22 GiB); "
        "give --memory with the total your engine logs for a closer pool."
    ]
