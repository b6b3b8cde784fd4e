"""A model's weights from its config alone, whatever its `model_type`: the parameters counted from the
standard keys, module by module (embeddings, attention by its projections, dense and expert MLPs,
routers, norms), and their bytes with the config's `quantization_config` (quantized modules at the
format's bytes per weight with its scales, the rest at the model's dtype). Per GPU under tensor and
pipeline parallelism, as an engine splits them."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from invmap.estimate.config import Model, head_dim_of, need, optional_int
from invmap.estimate.encoders import encoder_parameters
from invmap.estimate.layout import TORCH_DTYPES, full_attention_keys
from invmap.estimate.refusals import Refused, RefusedFile
from invmap.quantities import MAX_ROPE_FACTOR

# The modules a count is made of; a quantized checkpoint quantizes the linear ones (not embeddings,
# norms or routers), less those its config excludes.
LINEAR = ("attention", "mlp", "experts")
EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")
# Families whose MLP is two biased linears, fc1 H x I and fc2 I x H (transformers' PhiMLP; vLLM's phi.py
# builds them as Column/RowParallelLinear with biases), and whose q, k, v and output projections
# all carry biases (PhiAttention), not the gated three.
TWO_LAYER_MLP = ("phi",)
# The norms in each decoder layer beyond the usual two (Gemma 2, 3 and 4: input, post-attention,
# pre- and post-feedforward), and the families with a q and a k norm of the head dimension.
NORMS_PER_LAYER = {"gemma2": 4, "gemma3_text": 4, "gemma4_text": 4}
QK_NORMED = ("qwen3", "qwen3_moe", "gemma3_text", "gemma4_text")


@dataclass(frozen=True)
class Part:
    """Parameters of one kind of module in one layer (layer None: outside the layers)."""

    module: str  # embedding, head, attention, mlp, experts, router, norm, encoder
    parameters: int
    layer: int | None = None
    split: bool = True  # split across tensor-parallel GPUs (norms and routers are replicated)


@dataclass(frozen=True)
class Format:
    """How quantized weights are stored: bytes per weight (scales included) for the modules it covers."""

    name: str
    bytes_per_weight: float
    covers: tuple[str, ...]
    words: str


@dataclass
class Weights:
    """A model's parameters module by module and the format its linear modules are stored in
    (`expert_format`: the routed experts' own format where the config gives them one apart)."""

    parts: list[Part]
    dtype_bytes: int
    format: Format | None
    layers: int
    expert_format: Format | None = None

    @property
    def parameters(self) -> int:
        return sum(p.parameters for p in self.parts)

    @property
    def experts_stored_as(self) -> Format | None:
        """The format the routed experts are stored in (None: the model's dtype)."""
        if self.expert_format is not None:
            return self.expert_format
        return self.format if self.format is not None and "experts" in self.format.covers else None

    def part_bytes(self, part: Part) -> float:
        if part.module == "experts" and self.expert_format is not None:
            return part.parameters * self.expert_format.bytes_per_weight
        if self.format is not None and part.module in self.format.covers:
            return part.parameters * self.format.bytes_per_weight
        return float(part.parameters * self.dtype_bytes)

    @property
    def total_bytes(self) -> int:
        return int(sum(self.part_bytes(p) for p in self.parts))

    def per_gpu_bytes(
        self, tp: int, stage_layers: range, first: bool, last: bool, tied: bool, experts: int | None = None
    ) -> int:
        """The bytes one GPU holds: the layers of its pipeline stage (the embedding, encoders and other
        parts outside the layers on the first, the output head and final norm on the last; tied
        embeddings on both), split parts divided by the TP size;
        `experts`: one MoE layer's experts on one GPU as the engine allocates them, when it pads them."""
        total = 0.0
        for part in self.parts:
            if part.module == "experts" and experts is not None:
                total += experts if part.layer in stage_layers else 0
                continue
            if part.layer is None:
                keep = (part.module == "embedding" and (first or tied)) or (part.module == "head" and last)
                keep = keep or (part.module == "norm" and last)
                keep = keep or (part.module not in ("embedding", "head", "norm") and first)  # encoders, projections
            else:
                keep = part.layer in stage_layers
            if keep:
                total += self.part_bytes(part) / (tp if part.split else 1)
        return int(total)


def round_up(value: int, multiple: int) -> int:
    """`value` rounded up to a multiple of `multiple`."""
    return -(-value // multiple) * multiple


def vllm_mxfp4_experts(model: Model, tp: int, backend: str) -> int:
    """One MoE layer's experts on one GPU as vLLM allocates them for MXFP4
    (Mxfp4MoEMethod.create_weights, vllm/model_executor/layers/quantization/mxfp4.py): per expert,
    w13 (2 x I' rows of H'/2 bytes of 4-bit values and H'/32 one-byte scales) and w2 (H' rows of I'/2
    and I'/32), with bf16 biases of 2 x I' and H'; I' is the per-GPU intermediate size padded to 64
    (Triton) or 128 (Marlin), H' the hidden size (Marlin: padded to 256). Marlin's repacking keeps
    these sizes."""
    c, where = model.config, model.where
    hidden = need(c, "hidden_size", where)
    inter = (optional_int(c, "moe_intermediate_size", where) or need(c, "intermediate_size", where)) // tp
    if backend == "marlin":
        inter, hidden = round_up(inter, 128), round_up(hidden, 256)
    else:
        inter = round_up(inter, 64)
    w13 = 2 * inter * (hidden // 2 + hidden // 32 + 2)
    w2 = hidden * (inter // 2 + inter // 32 + 2)
    return (experts_of(c, where) or 1) * (w13 + w2)


def experts_of(c: dict[str, Any], where: str) -> int | None:
    """The routed experts of each MoE layer, by whichever key the family names them with."""
    return (
        optional_int(c, "num_local_experts", where)
        or optional_int(c, "num_experts", where)
        or optional_int(c, "n_routed_experts", where)
    )


def moe_keys(model: Model) -> tuple[int | None, int | None]:
    """(experts a token is routed to, an expert's intermediate size) where the config gives them as
    integers, else None: a dense model has neither."""
    c, where = model.config, model.where
    return tuple(  # type: ignore[return-value]
        optional_int(c, key, where) if isinstance(c.get(key), int) else None
        for key in ("num_experts_per_tok", "moe_intermediate_size")
    )


def moe_layers(c: dict[str, Any], layers: int, where: str) -> set[int]:
    """The layers whose MLP is a mixture of experts (none when the config names no experts): all but
    DeepSeek's `first_k_dense_replace` first layers and Qwen's `mlp_only_layers`, every
    `decoder_sparse_step`-th."""
    if not experts_of(c, where):
        return set()
    dense_first = c.get("first_k_dense_replace") if isinstance(c.get("first_k_dense_replace"), int) else 0
    only = c.get("mlp_only_layers")
    only_dense = {i for i in only if isinstance(i, int)} if isinstance(only, list) else set()
    step = c.get("decoder_sparse_step")
    step = step if isinstance(step, int) and step > 0 else 1
    return {i for i in range(layers) if i >= dense_first and i not in only_dense and (i + 1) % step == 0}


def attention_biased(c: dict[str, Any]) -> bool:
    """Whether q, k and v (and, for TWO_LAYER_MLP's families, the output projection) carry biases."""
    return bool(c.get("attention_bias")) or c.get("model_type") in ("qwen2", *TWO_LAYER_MLP)


def mlp_biased(c: dict[str, Any]) -> bool:
    """Whether a gated MLP's (or an expert's) projections and a router carry biases (gpt-oss's do)."""
    return bool(c.get("mlp_bias")) or c.get("model_type") == "gpt_oss"


def attention_parameters(c: dict[str, Any], where: str) -> int:
    """One layer's attention projections: q, k, v and o (biases too), or latent attention's down and
    up projections (multi-head latent attention: `kv_lora_rank`)."""
    hidden = need(c, "hidden_size", where)
    heads = need(c, "num_attention_heads", where)
    if c.get("kv_lora_rank") is not None:
        rank, rope = need(c, "kv_lora_rank", where), need(c, "qk_rope_head_dim", where)
        nope = need(c, "qk_nope_head_dim", where)
        value = need(c, "v_head_dim", where)
        q_rank = optional_int(c, "q_lora_rank", where)
        q_head = heads * (nope + rope)
        query = hidden * q_head if not q_rank else hidden * q_rank + q_rank + q_rank * q_head
        return query + hidden * (rank + rope) + rank + rank * heads * (nope + value) + heads * value * hidden
    kv_heads = optional_int(c, "num_key_value_heads", where) or heads
    head_dim = head_dim_of(c, heads, where)
    q, kv = heads * head_dim, kv_heads * head_dim
    total = hidden * q + 2 * hidden * kv + q * hidden
    if attention_biased(c):
        total += q + 2 * kv + (hidden if c.get("model_type") in TWO_LAYER_MLP else 0)
    return total


def _layer_norms(c: dict[str, Any], where: str) -> int:
    """One decoder layer's norm weights: two of the hidden size (four for NORMS_PER_LAYER's families),
    and a q and a k norm of the head dimension for QK_NORMED's."""
    hidden = need(c, "hidden_size", where)
    norms = NORMS_PER_LAYER.get(c.get("model_type"), 2) * hidden  # type: ignore[arg-type]
    if c.get("model_type") in QK_NORMED:
        norms += 2 * head_dim_of(c, need(c, "num_attention_heads", where), where)
    return norms


def _attention_by_layer(c: dict[str, Any], where: str, layers: int) -> list[int]:
    """Each layer's attention projections: a full-attention layer with its own dimensions
    (`full_attention_keys`) counted with them."""
    same = attention_parameters(c, where)
    full = full_attention_keys(c, where)
    if full is None:
        return [same] * layers
    wide, types = attention_parameters({**c, **full}, where), c["layer_types"]
    return [wide if i < len(types) and types[i] == "full_attention" else same for i in range(layers)]


def _double_wide(c: dict[str, Any], layers: int, where: str) -> tuple[range, dict[str, Any]]:
    """The layers whose MLP `use_double_wide_mlp` doubles and the config their MLP is read from
    (vLLM's Gemma4DecoderLayer: intermediate_size x 2 on the last num_kv_shared_layers layers); no
    layers where none is widened."""
    if not c.get("use_double_wide_mlp") or not c.get("num_kv_shared_layers"):
        return range(0), c
    shared = need(c, "num_kv_shared_layers", where)
    return range(max(layers - shared, 0), layers), {**c, "intermediate_size": 2 * need(c, "intermediate_size", where)}


def _per_layer_embeddings(c: dict[str, Any], where: str, layers: int) -> tuple[list[Part], int]:
    """Gemma 4's per-layer embeddings (`hidden_size_per_layer_input` P > 0), as vLLM's Gemma4Model
    builds them: a table of `vocab_size_per_layer_input` rows of L x P and a projection H x (L x P),
    both split under TP, and a norm of P; in each layer a gate H x P and a projection P x H, both
    replicated, and a norm of H. Returns (the parts outside the layers, each layer's count)."""
    if not c.get("hidden_size_per_layer_input"):  # 0 or absent: none
        return [], 0
    ple = need(c, "hidden_size_per_layer_input", where)
    hidden = need(c, "hidden_size", where)
    rows = optional_int(c, "vocab_size_per_layer_input", where) or need(c, "vocab_size", where)
    outside = [
        Part("embedding", rows * layers * ple),
        Part("mlp", hidden * layers * ple),
        Part("norm", ple, None, False),
    ]
    return outside, 2 * hidden * ple + hidden


def rope_caches(c: dict[str, Any], where: str) -> list[tuple[int, int]]:
    """The RoPE caches the engine builds with the model, (rows, columns) each: vLLM's `get_rope` makes
    one RotaryEmbedding per distinct set of arguments (shared by the layers that give the same) and
    each registers a `cos_sin_cache` buffer of rows x rotary_dim at the model's dtype
    (vllm/model_executor/layers/rotary_embedding). Rows are max_position_embeddings, x the factor for
    a `linear` rope and original_max_position_embeddings x the factor for `yarn` and `deepseek_yarn`;
    columns are the head dimension x partial_rotary_factor, the whole head for Gemma 4's
    `proportional` rope (gemma4_rope.py). A config whose layer types have ropes of their own
    (`rope_parameters` by layer type; Gemma 3's `rope_local_base_freq` for its sliding layers) has
    one cache for each. Empty without max_position_embeddings."""
    positions = optional_int(c, "max_position_embeddings", where)
    if positions is None:
        return []
    heads = need(c, "num_attention_heads", where)
    latent = c.get("kv_lora_rank") is not None
    head = need(c, "qk_rope_head_dim", where) if latent else head_dim_of(c, heads, where)
    given = c.get("rope_parameters") if isinstance(c.get("rope_parameters"), dict) else c.get("rope_scaling")
    given = given if isinstance(given, dict) else {}
    types = [t for t in c.get("layer_types") or [] if isinstance(t, str)]
    full = full_attention_keys(c, where)
    if set(given) & {"full_attention", "sliding_attention"}:
        ropes = [
            (
                given.get(t) if isinstance(given.get(t), dict) else {},
                full["head_dim"] if full and t == "full_attention" else head,
            )
            for t in sorted(set(types) or {"full_attention"})
        ]
    else:
        ropes = [(given, head)]
        sliding = "sliding_attention" in types or c.get("sliding_window_pattern") is not None
        if c.get("rope_local_base_freq") is not None and sliding:
            ropes.append(({"rope_type": "default"}, head))
    return [(_rope_rows(p, positions, where), _rope_columns(p, h, c)) for p, h in ropes]


def _rope_rows(rope: dict[str, Any], positions: int, where: str) -> int:
    kind = rope.get("rope_type") or rope.get("type") or "default"
    factor = rope.get("factor", 1)
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= MAX_ROPE_FACTOR:
        raise RefusedFile(
            "config",
            where,
            f"the rope's 'factor' must be a number above 0 and at most {MAX_ROPE_FACTOR:,}, not {json.dumps(factor)}",
            "rope_scaling",
        )
    original = rope.get("original_max_position_embeddings")
    if kind == "linear":
        return int(positions * factor)
    if kind in ("yarn", "deepseek_yarn") and isinstance(original, int) and original > 0:
        return int(original * factor)
    return positions


def _rope_columns(rope: dict[str, Any], head: int, c: dict[str, Any]) -> int:
    if rope.get("rope_type") == "proportional":
        return head
    partial = rope.get("partial_rotary_factor", c.get("partial_rotary_factor"))
    return int(head * partial) if isinstance(partial, (int, float)) and 0 < partial <= 1 else head


def _mlp(c: dict[str, Any], where: str, moe: bool) -> list[tuple[str, int, bool]]:
    """One layer's MLP as (module, parameters, split): gated (3 x H x I), experts with their router
    and shared experts, biases where the config has them."""
    hidden = need(c, "hidden_size", where)
    bias = mlp_biased(c)
    if not moe:
        inter = need(c, "intermediate_size", where)
        if c.get("model_type") in TWO_LAYER_MLP:
            return [("mlp", 2 * hidden * inter + inter + hidden, True)]
        return [("mlp", 3 * hidden * inter + ((2 * inter + hidden) if bias else 0), True)]
    experts = experts_of(c, where) or 1
    inter = optional_int(c, "moe_intermediate_size", where) or need(c, "intermediate_size", where)
    one = 3 * hidden * inter + ((2 * inter + hidden) if bias else 0)
    out = [("experts", experts * one, True), ("router", hidden * experts + (experts if bias else 0), False)]
    shared = c.get("n_shared_experts") or 0
    shared_inter = optional_int(c, "shared_expert_intermediate_size", where)
    if shared_inter:
        out.append(("mlp", 3 * hidden * shared_inter + hidden, True))  # with its one-output gate
    elif isinstance(shared, int) and shared > 0:
        out.append(("mlp", shared * 3 * hidden * inter, True))
    if c.get("enable_moe_block") and c.get("intermediate_size"):
        out.append(("mlp", 3 * hidden * need(c, "intermediate_size", where), True))  # dense MLP beside the experts
    return out


def count(model: Model, online: str | None = None) -> Weights:
    """Every parameter the config describes, module by module (exit 3 naming a missing key);
    `online`: the engine's --quantization of an unquantized checkpoint (`online_format`)."""
    c, where = model.config, model.where
    layers = need(c, "num_hidden_layers", where)
    hidden = need(c, "hidden_size", where)
    vocab = need(c, "vocab_size", where)
    moe = moe_layers(c, layers, where)
    attention = _attention_by_layer(c, where, layers)
    norms = _layer_norms(c, where)
    per_layer_outside, per_layer_input = _per_layer_embeddings(c, where, layers)
    parts = [Part("embedding", vocab * hidden), *per_layer_outside]
    if not c.get("tie_word_embeddings"):  # a family's default filled in (config.FAMILY_DEFAULTS)
        parts.append(Part("head", vocab * hidden))
    parts.append(Part("norm", hidden, None, False))
    parts += [Part("encoder", n, None, s) for found in encoder_parameters(model).values() for n, s in found]
    widened, wide = _double_wide(c, layers, where)
    for i in range(layers):
        parts.append(Part("attention", attention[i], i))
        parts += [Part(m, n, i, s) for m, n, s in _mlp(wide if i in widened else c, where, i in moe)]
        parts.append(Part("norm", norms, i, False))
        if per_layer_input:
            parts.append(Part("mlp", per_layer_input, i, False))  # the per-layer input's gate and projection
    fmt = quantization_format(c, where) if online is None else online_format(c, where, online)
    return Weights(parts, _dtype_bytes(c), fmt, layers, expert_format(c, fmt) if moe else None)


def online_format(c: dict[str, Any], where: str, method: str) -> Format:
    """The format the engine's --quantization gives an unquantized checkpoint's linear layers: fp8 at
    one byte a weight with one float32 scale per tensor (vLLM's Fp8Config for a checkpoint not
    serialized in FP8, its Fp8LinearMethod and Fp8MoEMethod). A checkpoint already quantized keeps its
    own format where it is the same method, and is refused where it is another, as vLLM refuses it."""
    stored = quantization_format(c, where)
    if stored is None:
        return Format(method, 1.0, LINEAR, "FP8 quantized by the engine as it loads, one scale per tensor")
    if stored.name == method:
        return stored
    raise Refused(
        "clash",
        f"Quantization method specified in the model config ({stored.name}) does not match the quantization "
        f"method specified in the `quantization` argument ({method}). (vLLM's refusal: leave out --quantization "
        f"for a checkpoint stored as {stored.name})",
        "quantization",
        "model",
    )


def _dtype_bytes(c: dict[str, Any]) -> int:
    name = c.get("torch_dtype") or c.get("dtype")
    return TORCH_DTYPES.get(str(name).removeprefix("torch."), 2)


def _excluded(names: list[Any]) -> tuple[str, ...]:
    """The modules a quantization config leaves at the model's dtype, by its exclusion list."""
    text = " ".join(str(n) for n in names)
    return ("attention",) if "self_attn" in text else ()


def quantization_format(c: dict[str, Any], where: str) -> Format | None:
    """The format of a config's `quantization_config` (None: unquantized); an unknown method is refused."""
    q = c.get("quantization_config")
    if not isinstance(q, dict):
        return None
    method = str(q.get("quant_method", "")).lower()
    excluded = _excluded(list(q.get("modules_to_not_convert") or []) + list(q.get("ignore") or []))
    covers = tuple(m for m in LINEAR if m not in excluded)
    if method == "fp8":
        block = q.get("weight_block_size")
        if isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block):
            return Format(
                "fp8",
                1 + 4 / (block[0] * block[1]),
                covers,
                f"FP8 with a float32 scale per {block[0]}x{block[1]} block",
            )
        return Format("fp8", 1.0, covers, "FP8 with one scale per tensor")
    if method == "mxfp4":
        return replace(MXFP4, covers=covers)
    if method in ("gptq", "awq"):
        bits, group = _bits_group(q, where)
        return Format(
            method, bits / 8 + (2 + bits / 8) / group, covers, f"{bits}-bit with an fp16 scale and a zero per {group}"
        )
    if method == "compressed-tensors":
        bits, group = _compressed(q, where)
        return Format(method, bits / 8 + 2 / group, covers, f"{bits}-bit with an fp16 scale per {group}")
    if method == "bitsandbytes":
        if q.get("load_in_8bit"):
            return Format(method, 1.0, covers, "8-bit (LLM.int8)")
        return Format(method, 0.5 + 4 / 64, covers, "4-bit with a float32 absmax per 64")
    raise RefusedFile(
        "config",
        where,
        f"quantization_config quant_method {method!r} is not counted: give --weight-bytes",
        "quantization_config",
    )


# DeepSeek-V4's configs keep an FP8 block `quantization_config` for the checkpoint and say
# `"expert_dtype": "fp4"` beside it: "DeepSeek-V4 native checkpoints use MXFP4 routed-expert weights with
# MXFP8 activations, while non-expert weights remain FP8 block quantized" (NVIDIA's aiconfigurator,
# ai-dynamo/aiconfigurator@095f58a51c4c:aic-core/src/aiconfigurator_core/sdk/models/helpers.py:635-642,
# which cites vLLM 0.24.0 serving those experts with Mxfp4MoEMethod, models/deepseek_v4/quant_config.py).
MXFP4 = Format("mxfp4", 17 / 32, ("experts",), "MXFP4: 4-bit values with a one-byte scale per 32")


def expert_format(c: dict[str, Any], fmt: Format | None) -> Format | None:
    """The routed experts' own format when the config gives one apart from `quantization_config`."""
    if str(c.get("expert_dtype", "")).lower() == "fp4" and fmt is not None and fmt.name == "fp8":
        return replace(MXFP4, words=MXFP4.words + " (expert_dtype fp4)")
    return None


def _bits_group(q: dict[str, Any], where: str) -> tuple[int, int]:
    bits = q.get("bits", q.get("w_bit"))
    group = q.get("group_size", q.get("q_group_size", 128))
    if not isinstance(bits, int) or bits not in (2, 3, 4, 8):
        raise RefusedFile("config", where, "quantization_config names no bits (2, 3, 4 or 8)", "quantization_config")
    return bits, group if isinstance(group, int) and group > 0 else 128


def _compressed(q: dict[str, Any], where: str) -> tuple[int, int]:
    for group in (q.get("config_groups") or {}).values():
        w = group.get("weights") if isinstance(group, dict) else None
        if isinstance(w, dict) and isinstance(w.get("num_bits"), int):
            size = w.get("group_size")
            return w["num_bits"], size if isinstance(size, int) and size > 0 else 10**9
    raise RefusedFile(
        "config", where, "quantization_config has no config_groups weights num_bits", "quantization_config"
    )
