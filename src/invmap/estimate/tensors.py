"""The weight tensors one GPU allocates, in the order vLLM's decoder classes create them, for the
layouts invmap lists tensor by tensor; and what PyTorch's caching allocator holds for them beyond
their bytes (`allocator.held`).

vLLM creates each parameter once at model construction, with torch's allocator, before it loads a
byte: per decoder layer the fused q/k/v projection (`QKVParallelLinear`, with its bias where the
family has one), the output projection, then the MLP (the fused gate and up projection
`MergedColumnParallelLinear` and the down projection; or the router and `FusedMoE`'s two stacked
expert tensors w13 and w2), then the layer's norms; the embedding (`VocabParallelEmbedding`, rows
padded to 64) before the layers and the output head after them. Under tensor parallelism a GPU holds
its share of the heads (the KV heads replicated when there are fewer than GPUs), of the intermediate
size and of the vocabulary; norms and routers whole.
"""

from __future__ import annotations

from typing import Any

from invmap.estimate.allocator import held
from invmap.estimate.config import Model, head_dim_of, need, optional_int
from invmap.estimate.layout import full_attention_keys
from invmap.estimate.weights import (
    NORMS_PER_LAYER,
    QK_NORMED,
    TWO_LAYER_MLP,
    Weights,
    attention_biased,
    experts_of,
    mlp_biased,
    moe_layers,
    round_up,
)

VOCAB_PADDING = 64  # vLLM's DEFAULT_VOCAB_PADDING_SIZE (vocab_parallel_embedding.py)


def unlisted(model: Model, weights: Weights) -> str:
    """Why invmap does not list this model's tensors ("" when it does)."""
    c, where = model.config, model.where
    if weights.format is not None or weights.expert_format is not None:
        return "quantized weights keep their packed values and scales in tensors invmap does not list"
    if c.get("kv_lora_rank") is not None:
        return "latent attention's projections are not listed tensor by tensor"
    if (
        full_attention_keys(c, where) is not None
        or c.get("hidden_size_per_layer_input")
        or c.get("use_double_wide_mlp")
    ):
        return "layers of two shapes (Gemma 4's) are not listed tensor by tensor"
    return ""


def weight_tensors(
    model: Model, weights: Weights, tp: int, layers: range, first: bool, last: bool, rope: list[int]
) -> list[int]:
    """The bytes of each weight tensor one GPU of a pipeline stage creates, in order; `rope`: the RoPE
    caches' bytes, made with the first layer's attention. Only for a model `unlisted` accepts."""
    c, where, b = model.config, model.where, weights.dtype_bytes
    hidden = need(c, "hidden_size", where)
    rows = round_up(need(c, "vocab_size", where), VOCAB_PADDING) // tp
    tied = bool(c.get("tie_word_embeddings"))
    moe = moe_layers(c, need(c, "num_hidden_layers", where), where)
    out: list[int] = [rows * hidden * b] if first or (tied and last) else []
    for i in layers:
        out += _attention(c, where, tp, b)
        if i == layers.start:
            out += rope
        out += _moe(c, where, tp, b) if i in moe else _dense(c, where, tp, b, need(c, "intermediate_size", where))
        out += [hidden * b] * NORMS_PER_LAYER.get(c.get("model_type"), 2)  # type: ignore[arg-type]
    if last:
        out.append(hidden * b)  # the final norm
        if not tied:
            out.append(rows * hidden * b)
    return out


def rounding(
    model: Model, weights: Weights, tp: int, layers: range, first: bool, last: bool, rope: list[int], segments: bool
) -> int:
    """What the allocator holds for one GPU's weights beyond their bytes: the blocks it hands out
    (`memory_allocated`, what vLLM's "Model loading took" counts) or, with `segments`, the segments it
    reserves (what a free-memory reading such as SGLang's sees)."""
    kept = held(weight_tensors(model, weights, tp, layers, first, last, rope))
    return (kept.reserved if segments else kept.allocated) - kept.requested


def _attention(c: dict[str, Any], where: str, tp: int, b: int) -> list[int]:
    """q/k/v fused, then the output projection, each with its bias where the family has one; the q
    and k norms of QK_NORMED's families."""
    hidden = need(c, "hidden_size", where)
    heads = need(c, "num_attention_heads", where)
    kv = optional_int(c, "num_key_value_heads", where) or heads
    d = head_dim_of(c, heads, where)
    q, kv_gpu = heads // tp, max(1, kv // tp)
    width = (q + 2 * kv_gpu) * d
    out = [width * hidden * b]
    if attention_biased(c):
        out.append(width * b)
    out.append(hidden * q * d * b)
    if c.get("model_type") in TWO_LAYER_MLP:
        out.append(hidden * b)  # the dense projection's bias, whole on each GPU
    if c.get("model_type") in QK_NORMED:
        out += [d * b, d * b]
    return out


def _dense(c: dict[str, Any], where: str, tp: int, b: int, inter: int) -> list[int]:
    """A dense MLP: fc1 and fc2 with biases (phi), or the fused gate and up projection and the down one."""
    hidden, share = need(c, "hidden_size", where), inter // tp
    if c.get("model_type") in TWO_LAYER_MLP:
        return [share * hidden * b, share * b, hidden * share * b, hidden * b]
    bias = mlp_biased(c)
    return [
        2 * share * hidden * b,
        *([2 * share * b] if bias else []),
        hidden * share * b,
        *([hidden * b] if bias else []),
    ]


def _moe(c: dict[str, Any], where: str, tp: int, b: int) -> list[int]:
    """A mixture-of-experts MLP: the router (whole), FusedMoE's w13 (E x 2 x I/TP x H) and w2
    (E x H x I/TP), each with its bias where the family has them (`mlp_biased`: w13's split, w2's
    E x H whole), then the shared experts or the dense MLP beside them where the family has one."""
    hidden = need(c, "hidden_size", where)
    experts = experts_of(c, where) or 1
    inter = optional_int(c, "moe_intermediate_size", where) or need(c, "intermediate_size", where)
    share, bias = inter // tp, mlp_biased(c)
    out = [experts * hidden * b, *([experts * b] if bias else [])]
    out += [experts * 2 * share * hidden * b, *([experts * 2 * share * b] if bias else [])]
    out += [experts * hidden * share * b, *([experts * hidden * b] if bias else [])]
    shared_inter = optional_int(c, "shared_expert_intermediate_size", where)
    shared = c.get("n_shared_experts")
    if shared_inter:
        out += [*_dense(c, where, tp, b, shared_inter), hidden * b]  # with its one-output gate
    elif isinstance(shared, int) and shared > 0:
        out += _dense(c, where, tp, b, shared * inter)
    if c.get("enable_moe_block") and c.get("intermediate_size"):
        out += _dense(c, where, tp, b, need(c, "intermediate_size", where))
    return out


__all__ = ["rounding", "unlisted", "weight_tensors"]
