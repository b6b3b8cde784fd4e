"""`estimate memory` (the field guide's `ie memory model`): weights and activations, and with a
device's memory what is left for the KV pool at a utilization fraction."""

from __future__ import annotations

from typing import Any

from invmap.errors import UsageError
from invmap.estimate.checks import FLAGS, check, check_all
from invmap.estimate.config import Model
from invmap.estimate.defaults import DEFAULT_UTILIZATION, IE_MODEL
from invmap.estimate.gpus import Gpu
from invmap.estimate.inputs import Inputs
from invmap.estimate.kvshape import KV_SHAPE_OPTIONS, kv_shape, token_formula
from invmap.estimate.layout import layout_of
from invmap.estimate.parameters import PARAMETER_FAMILIES, parameters_of, safetensors_total
from invmap.estimate.result import estimate_result
from invmap.estimate.units import human_bytes, parse_size

MEMORY_LIMITATIONS = [
    "It leaves out CUDA graphs, runtime workspaces, allocator slack and fragmentation, non-torch memory (CUDA "
    "context, communication buffers) and activation peaks beyond the modelled working set.",
    "The KV pool is what is left after weights and the activation working set; an engine measures its own "
    "(vLLM profiles a forward pass before it sizes the cache).",
]


def memory(options: dict[str, Any], model: Model | None, gpu: Gpu | None) -> dict[str, Any]:
    """`ie memory model`, and with a device's memory what is left for KV at a utilization fraction."""
    check_all(options)
    inputs = Inputs(options)
    layout = layout_of(model) if model is not None else None
    notes: list[str] = []
    formulas: list[str] = []
    counted = parameters_of(model) if model is not None else None
    stored = safetensors_total(model) if model is not None and options.get("parameters") is None else None
    if stored is not None:
        weights = stored
        inputs.add("weights_bytes", stored, "bytes", "model.safetensors.index.json")
        formulas.append(
            f"weights_bytes = metadata.total_size of model.safetensors.index.json = {stored:,} B ({human_bytes(stored)})"
        )
    else:
        if model is not None and options.get("parameters") is None and counted is None:
            raise UsageError(
                f"invmap does not count the parameters of model_type '{model.model_type}' (it counts "
                f"{', '.join(PARAMETER_FAMILIES)}): give --parameters, or put model.safetensors.index.json "
                "beside config.json"
            )
        parameters = inputs.pick(
            "parameters",
            "parameters",
            (counted[0] if counted else None, "model (counted from its config)"),
            (IE_MODEL["parameters"], "default"),
        )
        weight_bytes = inputs.pick(
            "weight_bytes",
            "bytes",
            (layout.dtype_bytes if layout else None, "model"),
            (IE_MODEL["weight_bytes"], "default"),
        )
        weights = parameters * weight_bytes
        formulas.append(
            f"weights_bytes = P x b_w = {parameters:,} x {weight_bytes} = {weights:,} B ({human_bytes(weights)})"
        )
    inputs.pick("layers", "layers", (layout.layers if layout else None, "model"), (IE_MODEL["layers"], "default"))
    hidden = inputs.pick(
        "hidden_size",
        "elements",
        (layout.hidden_size if layout else None, "model"),
        (IE_MODEL["hidden_size"], "default"),
    )
    batch = inputs.pick("batch_size", "sequences", (IE_MODEL["batch_size"], "default"))
    length = inputs.pick("sequence_length", "tokens", (IE_MODEL["sequence_length"], "default"))
    act_bytes = inputs.pick("activation_bytes", "bytes", (IE_MODEL["activation_bytes"], "default"))
    tensors = inputs.pick("activation_tensors", "tensors", (IE_MODEL["activation_tensors"], "default"))
    activations = batch * length * hidden * act_bytes * tensors
    total = weights + activations
    formulas.append(
        f"activation_bytes = B x S x H x b_a x a = {batch:,} x {length:,} x {hidden:,} x {act_bytes} x {tensors} = "
        f"{activations:,} B ({human_bytes(activations)})"
    )
    formulas.append(
        f"total_bytes = weights_bytes + activation_bytes = {weights:,} + {activations:,} = {total:,} B ({human_bytes(total)})"
    )
    results: dict[str, Any] = {"weights_bytes": weights, "activation_bytes": activations, "total_bytes": total}
    units = dict.fromkeys(results, "bytes")
    extra: dict[str, Any] = {"fits": None, "verdict": None}
    device_memory = _device_memory(inputs, gpu)
    assumptions: list[str] = []
    if device_memory is not None:
        shape, tp_lines, kv_notes = kv_shape(inputs, model, layout)
        notes += kv_notes
        tp = shape.tensor_parallel
        util = inputs.pick("gpu_memory_utilization", "fraction", (DEFAULT_UTILIZATION, "invmap default"))
        request = inputs.pick(
            "tokens_per_request",
            "tokens",
            (layout.max_positions if layout else None, "model (max_position_embeddings)"),
            (length, "--sequence-length"),
        )
        budget = int(device_memory * util)
        weights_gpu = weights // tp if tp > 1 else weights
        left = budget - weights_gpu - activations
        per_token = shape.per_token()
        per_request = shape.per_sequence(request)
        block = options.get("block_size")
        pool_tokens = max(left, 0) // per_token
        if block is not None:
            check("block_size", block)
            inputs.add("block_size", block, "tokens", "option")
            pool_tokens = pool_tokens // block * block
        concurrency = max(left, 0) / per_request
        results.update(
            {
                "memory_bytes": device_memory,
                "budget_bytes": budget,
                "kv_available_bytes": max(left, 0),
                "kv_bytes_per_token": per_token,
                "kv_pool_tokens": pool_tokens,
                "max_concurrency": round(concurrency, 2),
            }
        )
        units.update(
            dict.fromkeys(("memory_bytes", "budget_bytes", "kv_available_bytes", "kv_bytes_per_token"), "bytes")
        )
        if tp > 1:
            results["weights_bytes_per_gpu"] = weights_gpu
            units["weights_bytes_per_gpu"] = "bytes"
        units.update({"kv_pool_tokens": "tokens", "max_concurrency": f"requests of {request:,} tokens"})
        formulas.append(
            f"budget_bytes = memory x utilization = {device_memory:,} x {util:g} = {budget:,} B ({human_bytes(budget)})"
        )
        if tp > 1:
            formulas.append(f"weights_bytes_per_gpu = weights_bytes / N = {weights:,} / {tp} = {weights_gpu:,} B")
        formulas.append(
            f"kv_available_bytes = budget - weights{'_per_gpu' if tp > 1 else ''} - activation_bytes = {budget:,} - "
            f"{weights_gpu:,} - {activations:,} = {left:,} B ({human_bytes(left)})"
        )
        formulas += tp_lines
        formulas.append(token_formula(shape, per_gpu=True).replace("bytes_per_token", "kv_bytes_per_token", 1))
        rounding = f", rounded down to blocks of {block} tokens" if block else ""
        formulas.append(
            f"kv_pool_tokens = floor(kv_available_bytes / kv_bytes_per_token){rounding} = {pool_tokens:,} tokens "
            "(vLLM logs this as 'GPU KV cache size: N tokens')"
        )
        formulas.append(
            f"max_concurrency = kv_available_bytes / bytes_per_request = {max(left, 0):,} / {per_request:,} = "
            f"{concurrency:.2f}x (vLLM: 'Maximum concurrency for {request:,} tokens per request: Nx')"
        )
        label = gpu.display if gpu is not None and options.get("memory") is None else "the device"
        stated = (
            f"{gpu.memory_gb:g} GB" if gpu is not None and options.get("memory") is None else human_bytes(device_memory)
        )
        if weights_gpu > device_memory:
            extra.update(fits=False, verdict=f"weights alone need {human_bytes(weights_gpu)}; {label} has {stated}")
        elif left <= 0:
            extra.update(
                fits=False,
                verdict=f"weights ({human_bytes(weights_gpu)}) and activations ({human_bytes(activations)}) leave no room "
                f"for KV in {human_bytes(budget)} ({util:g} of {label}'s {stated})",
            )
        elif per_request > left:
            extra.update(
                fits=False,
                verdict=f"one request of {request:,} tokens needs {human_bytes(per_request)} of KV; "
                f"{human_bytes(left)} is left",
            )
        else:
            extra.update(
                fits=True,
                verdict=f"{pool_tokens:,} tokens of KV fit ({concurrency:.2f} requests of {request:,} tokens) in the "
                f"{human_bytes(left)} left of {label}'s {stated} at {util:g}",
            )
        if shape.kind == "standard" and any(w is not None for w in shape.windows):
            notes.append(
                "Sliding-window layers: kv_pool_tokens divides by bytes_per_token (every layer full); max_concurrency "
                "uses the window-bounded bytes of one request. vLLM's hybrid KV cache manager reports token counts "
                "between the two."
            )
        assumptions.append(
            "vLLM's --gpu-memory-utilization meaning: the fraction of the device's memory the engine may use in all "
            "(weights, activations and KV)."
        )
        if tp > 1:
            assumptions.append("Tensor parallelism splits the weights evenly across the GPUs (embeddings included).")
    else:
        for name in ("gpu_memory_utilization", "tokens_per_request", "block_size", *KV_SHAPE_OPTIONS):
            if options.get(name) is not None:
                raise UsageError(f"{FLAGS[name]} needs a device: give --gpu or --memory (the KV pool is sized on it)")
    if counted is not None and stored is None and options.get("parameters") is None:
        assumptions.append(
            f"Parameters counted from the config ({model.model_type}): embeddings, attention, MLP"  # type: ignore[union-attr]
            + (" (every expert)" if model.model_type == "mixtral" else "")  # type: ignore[union-attr]
            + ", norms and the output head unless tied."
        )
    return estimate_result(
        "memory",
        inputs,
        model,
        gpu,
        results,
        units,
        formulas,
        assumptions,
        list(MEMORY_LIMITATIONS),
        notes,
        workload={"batch_size": batch, "sequence_length": length},
        extra=extra,
    )


def _device_memory(inputs: Inputs, gpu: Gpu | None) -> int | None:
    given = inputs.options.get("memory")
    if given is not None:
        value = parse_size(str(given))
        inputs.add("memory", value, "bytes", "option")
        return value
    if gpu is None:
        return None
    if gpu.memory_bytes is None:
        raise UsageError(
            f"invmap's table has no confirmed memory figure for {gpu.display}: give --memory (for example 48GB)"
        )
    inputs.add("memory", gpu.memory_bytes, "bytes", f"gpu ({gpu.memory_gb:g} GB, x 10^9)")
    return gpu.memory_bytes
