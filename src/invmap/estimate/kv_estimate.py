"""`estimate kv` (the field guide's `ie memory kv`): KV bytes per token, per sequence and in total."""

from __future__ import annotations

from typing import Any

from invmap.estimate.checks import check_all
from invmap.estimate.config import Model
from invmap.estimate.inputs import Inputs
from invmap.estimate.kvshape import kv_shape, sequence_formula, token_formula
from invmap.estimate.layout import layout_of
from invmap.estimate.result import Estimate, Said, estimate_result
from invmap.estimate.units import human_bytes

KV_LIMITATIONS = [
    "It excludes block (page) rounding, reservation slack, prefix-sharing references, tier copies, and eviction "
    "and recomputation work (the field guide's equations page).",
    "It assumes dense K and V storage with the declared element size; quantization scales and metadata are not counted.",
]


def kv_estimate(options: dict[str, Any], model: Model | None) -> Estimate:
    """`ie memory kv` from a model's config: bytes per token, per sequence and in total."""
    check_all(options)
    inputs = Inputs(options, "kv")
    layout = layout_of(model) if model is not None else None
    shape, tp_lines, notes = kv_shape(inputs, model, layout)
    tokens = inputs.pick("tokens")
    concurrency = inputs.pick("concurrency")
    per_gpu = shape.tensor_parallel > 1
    per_token = shape.per_token(per_gpu=False)
    per_sequence = shape.per_sequence(tokens, per_gpu=False)
    total = per_sequence * concurrency
    results: dict[str, Any] = {"bytes_per_token": per_token, "bytes_per_sequence": per_sequence, "total_bytes": total}
    units = {"bytes_per_token": "bytes", "bytes_per_sequence": "bytes", "total_bytes": "bytes"}
    if shape.kind == "standard":
        results["kv_group_size"] = shape.attention_heads // shape.kv_heads  # type: ignore[operator]
        units["kv_group_size"] = "query heads per KV head"
    formulas = [
        token_formula(shape, per_gpu=False),
        sequence_formula(shape, tokens, per_gpu=False),
        f"total_bytes = bytes_per_sequence x B = {per_sequence:,} x {concurrency:,} = {total:,} B ({human_bytes(total)})",
    ]
    if per_gpu:
        per_gpu_seq = shape.per_sequence(tokens)
        results.update(
            {
                "bytes_per_token_per_gpu": shape.per_token(),
                "bytes_per_sequence_per_gpu": per_gpu_seq,
                "total_bytes_per_gpu": per_gpu_seq * concurrency,
            }
        )
        units.update(
            dict.fromkeys(("bytes_per_token_per_gpu", "bytes_per_sequence_per_gpu", "total_bytes_per_gpu"), "bytes")
        )
        formulas += tp_lines
        if shape.kind == "latent":
            formulas.append("per GPU: the latent cache is not split across GPUs; each GPU holds all of it")
        formulas.append(token_formula(shape, per_gpu=True).replace("bytes_per_token", "bytes_per_token_per_gpu", 1))
    assumptions, limitations = [], list(KV_LIMITATIONS)
    if shape.kind == "latent":
        assumptions.append(
            "Multi-head latent attention caches one compressed latent (kv_lora_rank) plus the shared rotary key "
            "(qk_rope_head_dim) per token per layer, not keys and values per head."
        )
        if model is not None and model.config.get("num_nextn_predict_layers"):
            limitations.append("The multi-token-prediction layers (num_nextn_predict_layers) are not counted.")
    sliding = sum(1 for w in shape.windows if w is not None)
    if sliding:
        window = max(w for w in shape.windows if w is not None)
        assumptions.append(
            f"{sliding} of {len(shape.windows)} layers use a sliding window of {window:,} tokens: past it they keep "
            "only the window, so bytes_per_sequence grows more slowly than bytes_per_token x S."
        )
        notes.append(
            "bytes_per_token counts every layer as full attention, as the field guide's formula does. An engine that "
            "drops the KV outside the window (vLLM's hybrid KV cache manager) reports a larger 'GPU KV cache size' "
            "in tokens than memory / bytes_per_token; with that manager disabled vLLM sizes every layer for the full "
            "length and says so in a start-up warning."
        )
    said = Said(formulas, assumptions, limitations, notes)
    workload = {"tokens_per_sequence": tokens, "concurrent_sequences": concurrency}
    return estimate_result("kv", inputs, model, None, results, units, said, workload)
