"""A model's parameters: counted from its config for the families invmap knows, or its weights' bytes
from the safetensors index beside config.json."""

from __future__ import annotations

from invmap.errors import CatalogError
from invmap.estimate.checks import check_key
from invmap.estimate.config import Model, head_dim_of, need, optional_int, read_json
from invmap.estimate.refusals import RefusedFile
from invmap.quantities import INPUTS, MAX_PARAMETERS, shown_number

# Families whose parameter count invmap computes from the config (others: --parameters, or the
# model.safetensors.index.json beside config.json).
PARAMETER_FAMILIES = ("llama", "mistral", "mixtral", "qwen2", "qwen3", "opt")


def parameters_of(model: Model) -> tuple[int, int] | None:
    """(total, active per token) parameters for the families invmap counts; None for the others. A
    count past --parameters' bound is the config's mistake (exit 3), not a model."""
    if model.model_type not in PARAMETER_FAMILIES:
        return None
    total, active = _counted(model)
    if total > MAX_PARAMETERS:
        raise RefusedFile(
            "config",
            model.where,
            f"its dimensions count {shown_number(total)} parameters, more than {INPUTS['parameters'].flag} may be "
            f"({MAX_PARAMETERS:,})",
            "num_hidden_layers",
            "hidden_size",
            "vocab_size",
        )
    return total, active


def _counted(model: Model) -> tuple[int, int]:
    c, where, kind = model.config, model.where, model.model_type
    hidden = need(c, "hidden_size", where)
    vocab = need(c, "vocab_size", where)
    layers = need(c, "num_hidden_layers", where)
    heads = need(c, "num_attention_heads", where)
    if kind == "opt":
        ffn = need(c, "ffn_dim", where)
        projection = optional_int(c, "word_embed_proj_dim", where) or hidden
        if projection != hidden:
            raise CatalogError(where, ["word_embed_proj_dim other than hidden_size is not counted"])
        positions = need(c, "max_position_embeddings", where)
        per_layer = 4 * (hidden * hidden + hidden) + (hidden * ffn + ffn) + (ffn * hidden + hidden) + 4 * hidden
        total = vocab * hidden + (positions + 2) * hidden + layers * per_layer + 2 * hidden  # lm_head tied
        return total, total
    kv_heads = optional_int(c, "num_key_value_heads", where) or heads
    head_dim = head_dim_of(c, heads, where)
    inter = need(c, "intermediate_size", where)
    q, kv = heads * head_dim, kv_heads * head_dim
    attention = hidden * q + 2 * hidden * kv + q * hidden
    if kind == "qwen2" or c.get("attention_bias"):
        attention += q + 2 * kv + (hidden if c.get("attention_bias") and kind != "qwen2" else 0)
    if kind == "qwen3":
        attention += 2 * head_dim  # q_norm and k_norm
    expert = 3 * hidden * inter + (2 * inter + hidden if c.get("mlp_bias") else 0)
    norms = 2 * hidden
    if kind == "mixtral":
        experts = need(c, "num_local_experts", where)
        used = need(c, "num_experts_per_tok", where)  # at most `experts`: config.consistent
        router = hidden * experts
        per_layer, active_layer = (
            attention + experts * expert + router + norms,
            attention + used * expert + router + norms,
        )
    else:
        per_layer = active_layer = attention + expert + norms
    embed = vocab * hidden
    head = 0 if c.get("tie_word_embeddings") else vocab * hidden
    rest = embed + head + hidden
    return rest + layers * per_layer, rest + layers * active_layer


def safetensors_total(model: Model) -> int | None:
    """The weights' bytes from model.safetensors.index.json beside config.json (metadata.total_size)."""
    if model.index is not None:  # fetched from the Hub and not cached
        data, index = model.index, model.where.rsplit("/", 1)[0] + "/model.safetensors.index.json"
    elif model.folder is None or not (model.folder / "model.safetensors.index.json").is_file():
        return None
    else:
        index = model.folder / "model.safetensors.index.json"
        data = read_json(index)
    total = data.get("metadata", {}).get("total_size") if isinstance(data.get("metadata"), dict) else None
    if isinstance(total, bool) or not isinstance(total, int) or total <= 0:
        raise CatalogError(str(index), ["has no positive metadata.total_size"])
    return check_key("metadata.total_size", total, str(index))
