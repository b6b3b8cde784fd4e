"""The bounds of every numeric input and the option it is given with: a value past them is a typo,
not a model (exit 2 naming the option)."""

from __future__ import annotations

import math
from typing import Any

from invmap.errors import UsageError

# Bounds past which a size is a typo, not a model (exit 2 naming the option).
MAX_PARAMETERS = 10**14


MAX_LAYERS = 10**4


MAX_TOKENS = 10**9


MAX_COUNT = 10**9  # sequences, batch, heads, dimensions, GPUs


MAX_BYTES_PER_ELEMENT = 16


MAX_MEMORY = 10**15  # bytes: a petabyte on one device


MAX_RATE = 1e21  # operations or bytes per second


MAX_AMOUNT = 1e30  # operations or bytes in one modelled operation


# The option each input is given with (for messages: the core names what the user typed).
FLAGS = {
    "parameters": "--parameters",
    "weight_bytes": "--weight-bytes",
    "layers": "--layers",
    "hidden_size": "--hidden-size",
    "batch_size": "--batch-size",
    "sequence_length": "--sequence-length",
    "activation_bytes": "--activation-bytes",
    "activation_tensors": "--activation-tensors",
    "attention_heads": "--attention-heads",
    "kv_heads": "--kv-heads",
    "head_dim": "--head-dim",
    "tokens": "--tokens",
    "concurrency": "--concurrency",
    "element_bytes": "--element-bytes",
    "tensor_parallel": "--tensor-parallel",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "memory": "--memory",
    "tokens_per_request": "--tokens-per-request",
    "block_size": "--block-size",
    "operations": "--operations",
    "bytes_moved": "--bytes-moved",
    "peak_operations_per_second": "--peak-operations-per-second",
    "bandwidth_bytes_per_second": "--bandwidth-bytes-per-second",
    "prompt_tokens": "--prompt-tokens",
    "context_tokens": "--context-tokens",
    "kv_cache_dtype": "--kv-cache-dtype",
    "scenario": "--scenario",
    "efficiency": "--efficiency",
}


INT_BOUNDS = {
    "parameters": MAX_PARAMETERS,
    "weight_bytes": MAX_BYTES_PER_ELEMENT,
    "layers": MAX_LAYERS,
    "hidden_size": MAX_COUNT,
    "batch_size": MAX_COUNT,
    "sequence_length": MAX_TOKENS,
    "activation_bytes": MAX_BYTES_PER_ELEMENT,
    "activation_tensors": 10**3,
    "attention_heads": MAX_COUNT,
    "kv_heads": MAX_COUNT,
    "head_dim": MAX_COUNT,
    "tokens": MAX_TOKENS,
    "concurrency": MAX_COUNT,
    "element_bytes": MAX_BYTES_PER_ELEMENT,
    "tensor_parallel": MAX_LAYERS,
    "tokens_per_request": MAX_TOKENS,
    "block_size": MAX_TOKENS,
    "prompt_tokens": MAX_TOKENS,
    "context_tokens": MAX_TOKENS,
}


FLOAT_BOUNDS = {
    "operations": MAX_AMOUNT,
    "bytes_moved": MAX_AMOUNT,
    "peak_operations_per_second": MAX_RATE,
    "bandwidth_bytes_per_second": MAX_RATE,
}


# Fractions in (0, 1]: of the device's memory an engine may use; of the datasheet's roofs a step reaches.
FRACTIONS = ("gpu_memory_utilization", "efficiency")


def check(name: str, value: Any) -> Any:
    """An option's value within its bounds; exit 2 naming the option."""
    flag = FLAGS.get(name, name)
    if name in INT_BOUNDS:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise UsageError(f"{flag} must be a positive integer, not {value}")
        if value > INT_BOUNDS[name]:
            raise UsageError(f"{flag} must be at most {INT_BOUNDS[name]:,}, not {value:,}")
    elif name in FLOAT_BOUNDS:
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
            raise UsageError(f"{flag} must be a positive finite number, not {value}")
        if value > FLOAT_BOUNDS[name]:
            raise UsageError(f"{flag} must be at most {FLOAT_BOUNDS[name]:g}, not {value:g}")
        value = float(value)
    elif name in FRACTIONS:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not 0 < value <= 1
        ):
            raise UsageError(f"{flag} must be a fraction in (0, 1], not {value}")
        value = float(value)
    return value


def check_all(options: dict[str, Any]) -> None:
    """Every numeric option given, checked before anything is computed (used or not)."""
    for name, value in options.items():
        if value is not None and (name in INT_BOUNDS or name in FLOAT_BOUNDS or name in FRACTIONS):
            check(name, value)
