"""A model's attention layout, read once from its config: each layer's window, the KV heads and head
dimension, or the latent rank of multi-head latent attention."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from invmap.errors import CatalogError
from invmap.estimate.config import Model, head_dim_of, need, optional_int
from invmap.estimate.refusals import RefusedFile

TORCH_DTYPES = {"bfloat16": 2, "float16": 2, "float32": 4, "bf16": 2, "fp16": 2, "float": 4, "half": 2}


def full_attention_keys(c: dict[str, Any], where: str) -> dict[str, int] | None:
    """The head dimension and KV heads of a full-attention layer where the config gives that layer
    type its own (Gemma 4's `global_head_dim`, and `num_global_key_value_heads` with
    `attention_k_eq_v`), as overrides of `head_dim` and `num_key_value_heads`; None where every layer
    has the same. vLLM's Gemma4DecoderLayer reads them so (vllm/model_executor/models/gemma4.py), and
    its QKVParallelLinear holds a V slot beside K even where K doubles as V."""
    global_dim = optional_int(c, "global_head_dim", where)
    if global_dim is None or not isinstance(c.get("layer_types"), list):
        return None
    keys = {"head_dim": global_dim}
    if c.get("attention_k_eq_v"):
        global_kv = optional_int(c, "num_global_key_value_heads", where)
        heads = need(c, "num_attention_heads", where)
        if global_kv is not None and (global_kv > heads or heads % global_kv):
            raise RefusedFile(
                "config",
                where,
                f"num_global_key_value_heads ({global_kv}) must divide num_attention_heads ({heads})",
                "num_global_key_value_heads",
                "num_attention_heads",
            )
        if global_kv is not None:
            keys["num_key_value_heads"] = global_kv
    return keys


# model_type -> how its attention cache is laid out.
STANDARD_TYPES = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "gemma3",
    "gemma3_text",
    "gpt_oss",
    "opt",
)


LATENT_TYPES = ("deepseek_v2", "deepseek_v3", "kimi_k2")  # multi-head latent attention


SUPPORTED_TYPES = (*STANDARD_TYPES, *LATENT_TYPES)


@dataclass
class Layout:
    """What the KV cache of one model holds per token: `per_layer` elements for each layer, which is
    full attention (`None`) or bounded by a window of W tokens."""

    kind: str  # "standard" or "latent"
    windows: list[int | None]
    attention_heads: int
    kv_heads: int | None  # standard
    head_dim: int | None  # standard (keys and values)
    latent: tuple[int, int] | None  # latent: (kv_lora_rank, qk_rope_head_dim)
    dtype_bytes: int | None
    dtype_name: str | None
    hidden_size: int | None
    max_positions: int | None
    query_dim: int  # per head, for attention FLOPs (scores)
    value_dim: int  # per head, for attention FLOPs (values)
    from_model: bool = True
    kv_shared: int = 0  # the last layers that reuse an earlier layer's K and V and keep none (num_kv_shared_layers)

    @property
    def layers(self) -> int:
        return len(self.windows)

    @property
    def sliding(self) -> int:
        return sum(1 for w in self.windows if w is not None)

    @property
    def window(self) -> int | None:
        sizes = {w for w in self.windows if w is not None}
        return max(sizes) if sizes else None


def _dtype(config: dict[str, Any]) -> tuple[int | None, str | None]:
    name = config.get("torch_dtype") or config.get("dtype")
    if not isinstance(name, str):
        return None, None
    name = name.removeprefix("torch.")
    return TORCH_DTYPES.get(name), name


def layout_of(model: Model) -> Layout:
    """The attention layout a config describes; exit 3 for a missing key or an unsupported model_type."""
    c, where = model.config, model.where
    kind = model.model_type
    if kind not in SUPPORTED_TYPES and "num_attention_heads" not in c:  # any decoder with the standard keys is read
        raise CatalogError(where, [f"model_type '{kind}' is not supported (supported: {', '.join(SUPPORTED_TYPES)})"])
    layers = need(c, "num_hidden_layers", where)
    heads = need(c, "num_attention_heads", where)
    hidden = optional_int(c, "hidden_size", where)
    dtype_bytes, dtype_name = _dtype(c)
    max_positions = optional_int(c, "max_position_embeddings", where)
    if kind in LATENT_TYPES or (kind not in SUPPORTED_TYPES and c.get("kv_lora_rank") is not None):
        rank = need(c, "kv_lora_rank", where)
        rope = need(c, "qk_rope_head_dim", where)
        nope = optional_int(c, "qk_nope_head_dim", where) or 0
        value_dim = optional_int(c, "v_head_dim", where) or rank
        return Layout(
            "latent",
            [None] * layers,
            heads,
            None,
            None,
            (rank, rope),
            dtype_bytes,
            dtype_name,
            hidden,
            max_positions,
            nope + rope,
            value_dim,
        )
    if kind == "opt":
        kv_heads = heads
        hidden = need(c, "hidden_size", where)
        head_dim = head_dim_of(c, heads, where, named=False)
    else:
        kv_heads = optional_int(c, "num_key_value_heads", where) or heads
        head_dim = head_dim_of(c, heads, where)
    if kv_heads > heads or heads % kv_heads:
        raise RefusedFile(
            "config",
            where,
            f"num_key_value_heads ({kv_heads}) must divide num_attention_heads ({heads})",
            "num_key_value_heads",
            "num_attention_heads",
        )
    windows = _windows(c, kind, layers, where)
    return Layout(
        "standard",
        windows,
        heads,
        kv_heads,
        head_dim,
        None,
        dtype_bytes,
        dtype_name,
        hidden,
        max_positions,
        head_dim,
        head_dim,
        kv_shared=kv_shared_layers(c, layers, where),
    )


def kv_shared_layers(c: dict[str, Any], layers: int, where: str) -> int:
    """The last `num_kv_shared_layers` layers (Gemma 4's smaller models), which read the K and V of the
    last earlier layer of their type and keep none of their own: vLLM's Gemma4Attention gives them a
    kv_sharing_target_layer_name, so they take no KV cache. 0 when the config has none; fewer than
    every layer."""
    if not c.get("num_kv_shared_layers"):
        return 0
    shared = need(c, "num_kv_shared_layers", where)
    if shared >= layers:
        raise RefusedFile(
            "config",
            where,
            f"'num_kv_shared_layers' ({shared:,}) must be fewer than num_hidden_layers ({layers:,}): a shared "
            "layer reads an earlier layer's K and V",
            "num_kv_shared_layers",
            "num_hidden_layers",
        )
    return shared


def _windows(c: dict[str, Any], kind: str, layers: int, where: str) -> list[int | None]:
    """Each layer's window: None for full attention, W for a sliding-window layer. A config's
    `layer_types` says it for every family; without them, the family's own rule (full attention on
    every layer for the families that have none)."""
    if c.get("layer_types") is not None:
        return _listed_windows(c, layers, where)
    family = FAMILY_WINDOWS.get(kind)
    return family(c, layers, where) if family else [None] * layers


def _listed_windows(c: dict[str, Any], layers: int, where: str) -> list[int | None]:
    types = c["layer_types"]
    if not isinstance(types, list) or len(types) != layers or not all(isinstance(t, str) for t in types):
        raise RefusedFile(
            "config",
            where,
            f"'layer_types' must list one type (a name) for each of the {layers:,} layers",
            "layer_types",
        )
    unknown = sorted({t for t in types if t not in ("full_attention", "sliding_attention")})
    if unknown:
        raise CatalogError(
            where,
            [
                f"layer type {json.dumps(unknown[0])} is not supported (only full_attention and "
                "sliding_attention layers are estimated)"
            ],
        )
    if "sliding_attention" in types:
        window = need(c, "sliding_window", where)
        return [window if t == "sliding_attention" else None for t in types]
    return [None] * layers


def _gemma_windows(c: dict[str, Any], layers: int, where: str) -> list[int | None]:
    """Every `sliding_window_pattern`-th layer full attention, the others sliding."""
    pattern = optional_int(c, "sliding_window_pattern", where) or optional_int(c, "_sliding_window_pattern", where)
    if pattern is None:
        raise CatalogError(where, ["has no 'layer_types' or 'sliding_window_pattern', which the estimate needs"])
    window = need(c, "sliding_window", where)
    return [None if (i + 1) % pattern == 0 else window for i in range(layers)]


def _listed_only(c: dict[str, Any], layers: int, where: str) -> list[int | None]:
    raise CatalogError(where, ["has no 'layer_types', which the estimate needs"])


def _qwen_windows(c: dict[str, Any], layers: int, where: str) -> list[int | None]:
    if c.get("use_sliding_window"):
        raise CatalogError(
            where, ["use_sliding_window = true is not supported (which layers slide depends on max_window_layers)"]
        )
    return [None] * layers


def _mistral_windows(c: dict[str, Any], layers: int, where: str) -> list[int | None]:
    window = optional_int(c, "sliding_window", where)
    return [window] * layers  # one window on every layer, or none


FAMILY_WINDOWS: dict[str, Callable[[dict[str, Any], int, str], list[int | None]]] = {
    "gemma3": _gemma_windows,
    "gemma3_text": _gemma_windows,
    "gpt_oss": _listed_only,
    "qwen2": _qwen_windows,
    "qwen3": _qwen_windows,
    "qwen3_moe": _qwen_windows,
    "mistral": _mistral_windows,
    "mixtral": _mistral_windows,
}
