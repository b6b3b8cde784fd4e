"""A multimodal config's encoders beside its language model (`config.ENCODER_KEYS`): the parameters of
those whose family's modules invmap has read (ENCODER_COUNTS), and what an estimate says of each,
counted or left out. `weights.count` adds the counted ones to the model's parts."""

from __future__ import annotations

from typing import Any

from invmap.estimate.config import ENCODER_KEYS, Model, head_dim_of, need, optional_int


def _gemma4_vision(v: dict[str, Any], c: dict[str, Any], where: str) -> list[tuple[int, bool]] | None:
    """Gemma 4's vision encoder as transformers builds it (modeling_gemma4.py: Gemma4VisionPatchEmbedder,
    Gemma4VisionEncoderLayer, Gemma4VisionMLP) and its Gemma4MultimodalEmbedder: a patch projection of
    3 x p^2 x H, a position table of 2 x `position_embedding_size` x H, in each layer q/k/v/o without
    biases, a gated MLP of 3 x H x I and four norms of H with q/k norms of the head dimension, and the
    projection H x the text model's hidden size. vLLM builds it with transformers' AutoModel, whole on
    each GPU (vllm/model_executor/models/gemma4_mm.py)."""
    hidden = need(v, "hidden_size", where)
    inter = need(v, "intermediate_size", where)
    layers = need(v, "num_hidden_layers", where)
    heads = need(v, "num_attention_heads", where)
    kv_heads = optional_int(v, "num_key_value_heads", where) or heads
    head_dim = head_dim_of(v, heads, where)
    patch = need(v, "patch_size", where)
    positions = need(v, "position_embedding_size", where)
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + 2 * head_dim
    per_layer = attention + 3 * hidden * inter + 4 * hidden
    text_hidden = need(c, "hidden_size", where)
    return [(3 * patch * patch * hidden + 2 * positions * hidden + layers * per_layer + hidden * text_hidden, False)]


def _gemma3_siglip(v: dict[str, Any], c: dict[str, Any], where: str) -> list[tuple[int, bool]] | None:
    """Gemma 3's SigLIP encoder as vLLM builds it (vllm/model_executor/models/siglip.py, from
    gemma3_mm.py): a patch convolution of C x p^2 x H with its bias, a position table of
    (image_size / p)^2 x H, in each layer q/k/v/o and a fc1/fc2 MLP of H x I, all with biases, and two
    layer norms with biases; a final layer norm, and the attention-pooling head unless the config says
    `vision_use_head` false. Its linear layers and position table are split under TP; the convolution,
    the norms and Gemma3MultiModalProjector (an H x text-hidden weight and an RMS norm of H) are not.
    Another model's SigLIP (its own projector) is not counted: None."""
    if c.get("model_type") != "gemma3_text":
        return None
    hidden = need(v, "hidden_size", where)
    inter = need(v, "intermediate_size", where)
    layers = need(v, "num_hidden_layers", where)
    patch, image = need(v, "patch_size", where), need(v, "image_size", where)
    channels = optional_int(v, "num_channels", where) or 3
    mlp = 2 * hidden * inter + inter + hidden
    split = (image // patch) ** 2 * hidden + layers * (4 * hidden * hidden + 4 * hidden + mlp)
    kept = channels * patch * patch * hidden + hidden + layers * 4 * hidden + 2 * hidden
    if v.get("vision_use_head", True):  # SiglipMultiheadAttentionPoolingHead: probe, attention, norm, MLP
        kept += hidden + 4 * hidden * hidden + 4 * hidden + 2 * hidden + mlp
    kept += hidden * need(c, "hidden_size", where) + hidden  # Gemma3MultiModalProjector
    return [(split, True), (kept, False)]


# A multimodal config's encoders that invmap counts, by the encoder config's model_type; each counter
# gives (parameters, split under TP) pairs, or None for a model whose encoder of that type it has not read.
ENCODER_COUNTS = {"gemma4_vision": _gemma4_vision, "siglip_vision_model": _gemma3_siglip}


def encoder_parameters(model: Model) -> dict[str, list[tuple[int, bool]]]:
    """The parameters of each encoder (by its config key) whose family invmap counts (ENCODER_COUNTS)."""
    c, counted = model.config, {}
    for key in ENCODER_KEYS:
        sub = c.get(key)
        counter = ENCODER_COUNTS.get(sub.get("model_type")) if isinstance(sub, dict) else None
        found = counter(sub, c, f"{model.where} ({key})") if counter is not None else None
        if found is not None:
            counted[key] = found
    return counted


def encoder_sentences(model: Model, counting: bool = True) -> list[str]:
    """What an estimate says of a multimodal config's encoders: each counted one with its count, and
    those left out, whose weights load too (all of them where the weights are not `counting` by
    `count`). Empty for a language-only config."""
    counted = encoder_parameters(model) if counting else {}
    said = [
        f"The config's {key} ({model.config[key]['model_type']}) is counted as vLLM builds it: "
        f"{sum(n for n, _ in parts):,} parameters at the model's dtype, on the first pipeline stage"
        + (", its linear layers split under TP." if any(split for _, split in parts) else ", whole on each GPU.")
        for key, parts in counted.items()
    ]
    left = [k for k in ENCODER_KEYS if isinstance(model.config.get(k), dict) and k not in counted]
    if left:
        what = "describes an encoder" if len(left) == 1 else "describe encoders"
        said.append(
            f"Only the language model's weights are counted: the config's {' and '.join(left)} {what} whose "
            "weights load too, so the device holds less for the KV cache than this says."
            if not counted
            else f"The config's {' and '.join(left)} {what} whose weights load too and are not counted, so the "
            "device holds less for the KV cache than this says."
        )
    return said
