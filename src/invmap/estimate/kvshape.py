"""The KV cache's dimensions for one estimate (option, then model, then the field guide's defaults):
bytes per layer and token, per token, per sequence, and their formulas."""

from __future__ import annotations

from dataclasses import dataclass

from invmap.estimate.checks import FLAGS
from invmap.estimate.config import Model
from invmap.estimate.inputs import MODEL, OPTION, From, Inputs
from invmap.estimate.layout import Layout, full_attention_keys
from invmap.estimate.refusals import Refused
from invmap.estimate.units import human_bytes
from invmap.quantities import KV_DTYPES

__all__ = ["KV_DTYPES", "KvShape", "kv_element", "kv_shape", "sequence_formula", "token_formula"]


def kv_element(inputs: Inputs, layout: Layout | None) -> int:
    """KV bytes per element: --element-bytes, else --kv-cache-dtype (vLLM's values; `auto` is the
    config's torch_dtype or dtype), else the config's dtype, else the field guide's 2."""
    dtype = inputs.options.get("kv_cache_dtype")  # one of KV_DTYPES (checks.check)
    model_bytes = layout.dtype_bytes if layout is not None else None
    model_source = From("model", f"model ({layout.dtype_name})") if layout is not None and layout.dtype_name else MODEL
    by_dtype, dtype_source = None, OPTION
    if dtype == "auto":
        if model_bytes is None:
            raise Refused(
                "kv_cache_dtype",
                "--kv-cache-dtype auto needs a --model whose config names its torch_dtype (or dtype)",
                "kv_cache_dtype",
                "model",
            )
        by_dtype, dtype_source = model_bytes, From("model", f"--kv-cache-dtype auto: {model_source.text}")
    elif dtype is not None:
        by_dtype, dtype_source = KV_DTYPES[dtype], From("option", f"--kv-cache-dtype {dtype}")
    if dtype is not None:
        inputs.add("kv_cache_dtype", dtype, "", OPTION)
    return inputs.pick("element_bytes", (by_dtype, dtype_source), (model_bytes, model_source))


@dataclass
class KvShape:
    """Resolved dimensions of one KV estimate."""

    kind: str
    windows: list[int | None]
    kv_heads: int | None
    head_dim: int | None
    latent: tuple[int, int] | None
    element: int
    heads_per_gpu: int | None
    tensor_parallel: int
    attention_heads: int
    full: tuple[int, int] | None = None  # (KV heads, head dim) of the full-attention layers, where their own

    def per_layer_token(self, per_gpu: bool = True) -> int:
        """Bytes one layer keeps for one token (on one GPU when `per_gpu`); a full-attention layer with
        its own dimensions: `layer_token(None)`."""
        if self.kind == "latent":
            rank, rope = self.latent  # type: ignore[misc]
            return (rank + rope) * self.element
        heads = self.heads_per_gpu if per_gpu else self.kv_heads
        return heads * self.head_dim * 2 * self.element  # type: ignore[operator]

    def layer_token(self, window: int | None, per_gpu: bool = True) -> int:
        """Bytes a layer of `window` (None: full attention) keeps for one token."""
        if window is not None or self.full is None:
            return self.per_layer_token(per_gpu)
        return self.full_kv_heads(per_gpu) * self.full[1] * 2 * self.element

    def full_kv_heads(self, per_gpu: bool = True) -> int:
        """The KV heads of a full-attention layer with its own dimensions (split as the others are)."""
        kv_heads = self.full[0] if self.full is not None else self.kv_heads or 1
        return max(1, kv_heads // self.tensor_parallel) if per_gpu else kv_heads

    def per_token(self, per_gpu: bool = True) -> int:
        """Every layer as full attention: the field guide's `L x H_kv x d_h x 2 x b_e`."""
        return sum(self.layer_token(w, per_gpu) for w in self.windows)

    def per_sequence(self, tokens: int, per_gpu: bool = True) -> int:
        """One sequence of `tokens`: a sliding layer keeps at most its window."""
        return sum((tokens if w is None else min(tokens, w)) * self.layer_token(w, per_gpu) for w in self.windows)


def kv_shape(inputs: Inputs, model: Model | None, layout: Layout | None) -> tuple[KvShape, list[str], list[str]]:
    """The KV dimensions (option, then model, then the field guide's defaults), the formulas' lines for
    them and notes."""
    latent = layout is not None and layout.kind == "latent"
    if latent:
        for name in ("kv_heads", "head_dim"):
            if inputs.options.get(name) is not None:
                raise Refused(
                    "latent",
                    f"{FLAGS[name]} does not apply to {model.display}: its latent attention caches "  # type: ignore[union-attr]
                    "kv_lora_rank + qk_rope_head_dim per layer, not heads x head_dim",
                    name,
                )
    layers = _dimension(inputs, layout, "layers")
    attention_heads = _dimension(inputs, layout, "attention_heads")
    windows, notes = _layer_windows(layout, layers)
    own = layout is not None and windows == layout.windows  # the model's layers, not --layers'
    if own and layout.kv_shared:  # type: ignore[union-attr]
        windows = windows[: len(windows) - layout.kv_shared]  # type: ignore[union-attr]
        notes.append(
            f"The config's last {layout.kv_shared:,} layers (num_kv_shared_layers) read earlier layers' K and V and "
            f"keep none of their own, as vLLM gives them no KV cache: {len(windows):,} of {layout.layers:,} layers "
            "hold KV."
        )
    tp = inputs.pick("tensor_parallel")
    if latent:
        return _latent_shape(inputs, layout, windows, tp, attention_heads), [], notes  # type: ignore[arg-type]
    shape, lines = _standard_shape(inputs, layout, windows, tp, attention_heads)
    keys = full_attention_keys(model.config, model.where) if model is not None and layout is not None else None
    if keys is not None:
        shape.full, note = _full_dimensions(inputs, keys, own, len(windows))
        notes += [note] if note else []
    return shape, lines, notes


def _full_dimensions(
    inputs: Inputs, keys: dict[str, int], own: bool, layers: int
) -> tuple[tuple[int, int] | None, str | None]:
    """The full-attention layers' own (KV heads, head dim) (`layout.full_attention_keys`), as the
    engine sizes each layer by its own; none where --kv-heads, --head-dim or --layers replace the
    model's (`own` false: every layer then takes the options, and a note says so)."""
    given = [FLAGS[n] for n in ("kv_heads", "head_dim") if inputs.options.get(n) is not None]
    if not own or given:
        why = " and ".join(given) if given else f"--layers {layers}"
        return None, (
            f"{why} replace{'s' if len(given) < 2 else ''} the model's dimensions on every layer, its "
            f"full-attention layers' own (global_head_dim {keys['head_dim']:,}) too"
        )
    return (keys.get("num_key_value_heads", inputs.values["kv_heads"]), keys["head_dim"]), None


def _dimension(inputs: Inputs, layout: Layout | None, name: str) -> int:
    """One dimension: the option, else the model's layout, else the field guide's default."""
    return inputs.pick(name, (getattr(layout, name) if layout else None, MODEL))  # type: ignore[no-any-return]


def _layer_windows(layout: Layout | None, layers: int) -> tuple[list[int | None], list[str]]:
    """Each layer's window; with --layers other than the model's, every layer full attention (and a note)."""
    if layout is not None and layers == layout.layers:
        return list(layout.windows), []
    if layout is not None and layout.sliding:
        return [None] * layers, [
            f"--layers {layers} replaces the model's {layout.layers} layers: every layer is counted as full attention"
        ]
    return [None] * layers, []


def _latent_shape(inputs: Inputs, layout: Layout, windows: list[int | None], tp: int, attention_heads: int) -> KvShape:
    rank, rope = layout.latent  # type: ignore[misc]
    inputs.add("kv_lora_rank", rank, "elements", MODEL)
    inputs.add("qk_rope_head_dim", rope, "elements", MODEL)
    element = kv_element(inputs, layout)
    return KvShape("latent", windows, None, None, (rank, rope), element, None, tp, attention_heads)


def _standard_shape(
    inputs: Inputs, layout: Layout | None, windows: list[int | None], tp: int, attention_heads: int
) -> tuple[KvShape, list[str]]:
    """Keys and values per KV head, the heads split across the tensor-parallel GPUs."""
    kv_heads = _dimension(inputs, layout, "kv_heads")
    head_dim = _dimension(inputs, layout, "head_dim")
    _refuse(
        "kv_heads",
        ("kv_heads", "attention_heads"),
        (kv_heads > attention_heads, f"--kv-heads ({kv_heads}) cannot exceed --attention-heads ({attention_heads})"),
        (
            attention_heads % kv_heads != 0,
            f"--attention-heads ({attention_heads}) must be divisible by --kv-heads ({kv_heads})",
        ),
    )
    element = kv_element(inputs, layout)
    _refuse(
        "kv_heads_split",
        ("tensor_parallel", "kv_heads"),
        (kv_heads >= tp and kv_heads % tp != 0, f"{kv_heads} KV heads do not divide among --tensor-parallel {tp} GPUs"),
        (kv_heads < tp and tp % kv_heads != 0, f"--tensor-parallel {tp} is not a multiple of the {kv_heads} KV heads"),
    )
    per_gpu = max(1, kv_heads // tp)
    lines = []
    if tp > 1:
        lines.append(
            f"KV heads per GPU = max(1, H_kv / N) = max(1, {kv_heads} / {tp}) = {per_gpu}"
            + (" (replicated: fewer KV heads than GPUs)" if kv_heads < tp else "")
        )
    return KvShape("standard", windows, kv_heads, head_dim, None, element, per_gpu, tp, attention_heads), lines


def _refuse(reason: str, concerned: tuple[str, ...], *rules: tuple[bool, str]) -> None:
    """Refuse (exit 2, `reason`, the inputs `concerned`) with the message of the first rule that is broken."""
    for broken, message in rules:
        if broken:
            raise Refused(reason, message, *concerned)


def token_formula(shape: KvShape, per_gpu: bool) -> str:
    value = shape.per_token(per_gpu)
    if shape.kind == "latent":
        rank, rope = shape.latent  # type: ignore[misc]
        return (
            f"bytes_per_token = L x (kv_lora_rank + qk_rope_head_dim) x b_e = {len(shape.windows)} x ({rank} + {rope})"
            f" x {shape.element} = {value:,} B ({human_bytes(value)})"
        )
    heads = shape.heads_per_gpu if per_gpu else shape.kv_heads
    symbol = "H_kv/N" if per_gpu and shape.tensor_parallel > 1 else "H_kv"
    if shape.full is not None:
        full = sum(1 for w in shape.windows if w is None)
        kv_full = shape.full_kv_heads(per_gpu)
        return (
            f"bytes_per_token = L_sliding x {symbol} x d_h x 2 x b_e + L_full x {symbol},full x d_h,full x 2 x b_e = "
            f"{len(shape.windows) - full} x {heads} x {shape.head_dim} x 2 x {shape.element} + {full} x {kv_full} x "
            f"{shape.full[1]} x 2 x {shape.element} = {value:,} B ({human_bytes(value)})"
        )
    return (
        f"bytes_per_token = L x {symbol} x d_h x 2 x b_e = {len(shape.windows)} x {heads} x {shape.head_dim} x 2 x "
        f"{shape.element} = {value:,} B ({human_bytes(value)})"
    )


def sequence_formula(shape: KvShape, tokens: int, per_gpu: bool) -> str:
    value = shape.per_sequence(tokens, per_gpu)
    if not any(w is not None for w in shape.windows):
        return f"bytes_per_sequence = bytes_per_token x S = {shape.per_token(per_gpu):,} x {tokens:,} = {value:,} B ({human_bytes(value)})"
    full = sum(1 for w in shape.windows if w is None)
    window = max(w for w in shape.windows if w is not None)
    sliding = len(shape.windows) - full
    if shape.full is not None:
        return (
            "bytes_per_sequence = L_full x S x bytes_per_full_layer_token + L_sliding x min(S, W) x "
            f"bytes_per_layer_token = {full} x {tokens:,} x {shape.layer_token(None, per_gpu):,} + {sliding} x "
            f"{min(tokens, window):,} x {shape.per_layer_token(per_gpu):,} = {value:,} B ({human_bytes(value)})"
        )
    return (
        f"bytes_per_sequence = (L_full x S + L_sliding x min(S, W)) x bytes_per_layer_token = ({full} x {tokens:,} + "
        f"{sliding} x {min(tokens, window):,}) x {shape.per_layer_token(per_gpu):,} = {value:,} B ({human_bytes(value)})"
    )
