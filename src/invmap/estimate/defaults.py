"""The inputs an estimate falls back on: the field guide's `ie` defaults (a made-up model and device),
invmap's own for a model's phase, and the label every estimate carries."""

from __future__ import annotations

LABEL = "estimated"


KINDS = ("kv", "memory", "roofline")


# The field guide's `ie` defaults (src/inference_engineering/cli.py): a made-up model and device.
IE_MODEL = {
    "parameters": 1_000_000_000,
    "weight_bytes": 2,
    "layers": 24,
    "hidden_size": 4096,
    "batch_size": 4,
    "sequence_length": 512,
    "activation_bytes": 2,
    "activation_tensors": 2,
}


IE_KV = {
    "layers": 24,
    "attention_heads": 32,
    "kv_heads": 8,
    "head_dim": 128,
    "tokens": 2048,
    "concurrency": 8,
    "element_bytes": 2,
}


IE_ROOFLINE = {
    "prefill": {
        "operations": 1_000_000_000.0,
        "bytes_moved": 200_000_000.0,
        "peak_operations_per_second": 2_000_000_000_000.0,
        "bandwidth_bytes_per_second": 1_000_000_000_000.0,
    },
    "decode": {
        "operations": 20_000_000.0,
        "bytes_moved": 50_000_000.0,
        "peak_operations_per_second": 2_000_000_000_000.0,
        "bandwidth_bytes_per_second": 1_000_000_000_000.0,
    },
}


# invmap's own defaults for a model's phase (the field guide has none for these).
PHASE_DEFAULTS = {"prompt_tokens": 2048, "batch_size": 8, "context_tokens": 2048}


DEFAULT_UTILIZATION = 0.9
