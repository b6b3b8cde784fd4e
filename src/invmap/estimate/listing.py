"""What `invmap models` and `invmap gpus` list: each shipped model's KV layout and parameters, each
GPU's figures, with where they were read."""

from __future__ import annotations

from typing import Any

from invmap.estimate.config import models
from invmap.estimate.layout import layout_of
from invmap.estimate.parameters import parameters_of
from invmap.quantities import INPUTS


def model_rows() -> list[dict[str, Any]]:
    """`invmap models`: each shipped model, its KV layout and where its config was read."""
    rows = []
    for m in models():
        layout = layout_of(m)
        counted = parameters_of(m)
        shape_heads = layout.kv_heads
        element = layout.dtype_bytes or INPUTS["element_bytes"].default.value
        if layout.kind == "latent":
            rank, rope = layout.latent  # type: ignore[misc]
            per_token = layout.layers * (rank + rope) * element
        else:
            per_token = layout.layers * shape_heads * layout.head_dim * 2 * element  # type: ignore[operator]
        rows.append(
            {
                "name": m.name,
                "display": m.display,
                "hub_id": m.hub_id,
                "model_type": m.model_type,
                "attention": "latent"
                if layout.kind == "latent"
                else ("sliding" if layout.sliding == layout.layers else "hybrid" if layout.sliding else "full"),
                "num_hidden_layers": layout.layers,
                "sliding_layers": layout.sliding,
                "window": layout.window,
                "attention_heads": layout.attention_heads,
                "kv_heads": layout.kv_heads,
                "head_dim": layout.head_dim,
                "kv_lora_rank": layout.latent[0] if layout.latent else None,
                "qk_rope_head_dim": layout.latent[1] if layout.latent else None,
                "dtype": layout.dtype_name,
                "kv_bytes_per_token": per_token,
                "parameters": counted[0] if counted else None,
                "active_parameters": counted[1] if counted else None,
                "read_from": list(m.read_from),
                "note": m.note or None,
            }
        )
    return rows
