"""Operations and bytes of a model's phase: one prefill of P tokens, or one decode step of B sequences
with C tokens of context (what `estimate roofline --model` bounds)."""

from __future__ import annotations

from invmap.errors import UsageError
from invmap.estimate.config import Model
from invmap.estimate.defaults import IE_MODEL, PHASE_DEFAULTS
from invmap.estimate.inputs import Inputs
from invmap.estimate.kvshape import kv_shape
from invmap.estimate.layout import layout_of
from invmap.estimate.parameters import PARAMETER_FAMILIES, parameters_of
from invmap.estimate.units import grouped


def attended(tokens: int, window: int | None) -> int:
    """Positions attended over a causal prefill of `tokens` (token i sees min(i, W) positions)."""
    if window is None or tokens <= window:
        return tokens * (tokens + 1) // 2
    return window * (window + 1) // 2 + (tokens - window) * window


def model_phase(inputs: Inputs, model: Model, scenario: str) -> tuple[float, float, int, list[str], list[str]]:
    """Operations and bytes of one prefill of P tokens, or one decode step at batch B with context C."""
    layout = layout_of(model)
    counted = parameters_of(model)
    given = inputs.options.get("parameters")
    if given is None and counted is None:
        raise UsageError(
            f"invmap does not count the parameters of model_type '{model.model_type}' (it counts "
            f"{', '.join(PARAMETER_FAMILIES)}): give --parameters (active per token), or --operations and --bytes-moved"
        )
    active = inputs.pick(
        "parameters",
        "parameters (active per token)",
        (counted[1] if counted else None, "model (counted from its config)"),
    )
    total_params = counted[0] if counted and given is None else active
    if given is not None:
        assumptions_given = "--parameters is taken as the parameters read per step too (weights = P x b_w)"
    else:
        assumptions_given = ""
    weight_bytes = inputs.pick(
        "weight_bytes", "bytes", (layout.dtype_bytes, "model"), (IE_MODEL["weight_bytes"], "default")
    )
    shape, _, _ = kv_shape(
        Inputs({k: inputs.options.get(k) for k in ("kv_cache_dtype", "element_bytes")}), model, layout
    )
    inputs.add(
        "element_bytes", shape.element, "bytes", "model" if inputs.options.get("element_bytes") is None else "option"
    )
    weights = total_params * weight_bytes
    heads, qd, vd = layout.attention_heads, layout.query_dim, layout.value_dim
    lines: list[str] = []
    said = [
        "Dense matrix products: 2 operations per parameter per token (a multiply and an add).",
        "Every weight is read from memory once per step (for a mixture of experts, all experts: which ones a batch "
        "touches is not modelled).",
    ]
    if assumptions_given:
        said.append(assumptions_given + ".")
    if scenario == "prefill":
        prompt = inputs.pick("prompt_tokens", "tokens", (PHASE_DEFAULTS["prompt_tokens"], "invmap default"))
        pairs = sum(attended(prompt, w) for w in layout.windows)
        attention = 2 * heads * (qd + vd) * pairs
        ops = 2 * active * prompt + attention
        written = shape.per_sequence(prompt)
        moved = weights + written
        lines += [
            f"O = 2 x active_parameters x P + 2 x heads x (d_qk + d_v) x causal pairs over all layers = 2 x {active:,} x {prompt:,} + "
            f"2 x {heads} x ({qd} + {vd}) x {pairs:,} = {grouped(ops)} operations",
            f"D = weights_bytes + KV written = {weights:,} + {written:,} = {grouped(moved)} bytes",
        ]
        said.append("Causal attention: token i attends to min(i, W) earlier positions; activations stay on chip.")
        return float(ops), float(moved), prompt, lines, said
    batch = inputs.pick("batch_size", "sequences", (PHASE_DEFAULTS["batch_size"], "invmap default"))
    context = inputs.pick("context_tokens", "tokens", (PHASE_DEFAULTS["context_tokens"], "invmap default"))
    pairs = sum(context if w is None else min(context, w) for w in layout.windows)
    attention = 2 * heads * (qd + vd) * pairs * batch
    ops = 2 * active * batch + attention
    read = shape.per_sequence(context) * batch
    moved = weights + read
    lines += [
        f"O = B x (2 x active_parameters + 2 x heads x (d_qk + d_v) x positions attended over all layers) = {batch:,} x (2 x {active:,} + "
        f"2 x {heads} x ({qd} + {vd}) x {pairs:,}) = {grouped(ops)} operations",
        f"D = weights_bytes + B x KV of C tokens = {weights:,} + {batch:,} x {shape.per_sequence(context):,} = {grouped(moved)} bytes",
    ]
    said.append("Decode: each of the B sequences adds one token and reads its whole KV cache of C tokens.")
    return float(ops), float(moved), batch, lines, said
