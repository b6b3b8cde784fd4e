"""Estimates: KV-cache bytes, memory left for the KV pool, and roofline bounds, from a model's
config.json and a GPU's datasheet figures (step 4 of the map's procedure: recreate before
generalizing). Pure computation: no I/O beyond reading a model's config files and the shipped tables
(`data/models.toml`, `data/gpus.toml`); no typer.

The formulas are the field guide's (`docs/reference/equations.md` of santho090/inference-engineering),
with its `ie memory model`, `ie memory kv` and `ie roofline` defaults, which describe a made-up model
and device: an estimate that uses them says so. Precedence everywhere: an explicit option, then the
model's config (`--model`) or the GPU's figures (`--gpu`), then those defaults.

Every result is labelled `estimated` and carries its formulas with the numbers put in, what it
assumes and what it leaves out; `record()` turns one into an experiment record (format 1.0).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from invmap.errors import CatalogError, FileAccessError, UsageError

DATA = Path(__file__).with_name("data")
LABEL = "estimated"
KINDS = ("kv", "memory", "roofline")

# Bounds past which a size is a typo, not a model (exit 2 naming the option).
MAX_PARAMETERS = 10**14
MAX_LAYERS = 10**4
MAX_TOKENS = 10**9
MAX_COUNT = 10**9  # sequences, batch, heads, dimensions, GPUs
MAX_BYTES_PER_ELEMENT = 16
MAX_MEMORY = 10**15  # bytes: a petabyte on one device
MAX_RATE = 1e21  # operations or bytes per second
MAX_AMOUNT = 1e30  # operations or bytes in one modelled operation

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

# vLLM's --kv-cache-dtype values and aliases -> bytes per element ("auto": the config's dtype).
KV_DTYPES: dict[str, int | None] = {
    "auto": None,
    "bfloat16": 2,
    "float16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "bf16": 2,
    "fp16": 2,
}
TORCH_DTYPES = {"bfloat16": 2, "float16": 2, "float32": 4, "bf16": 2, "fp16": 2, "float": 4, "half": 2}

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
# Families whose parameter count invmap computes from the config (others: --parameters, or the
# model.safetensors.index.json beside config.json).
PARAMETER_FAMILIES = ("llama", "mistral", "mixtral", "qwen2", "qwen3", "opt")

MAX_CONFIG = 64 * 1024**2  # bytes: a config.json is a page of JSON

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


# --- units ---------------------------------------------------------------------------------------


def human_bytes(value: float) -> str:
    """Bytes in powers of two, as the field guide prints them: `96.00 KiB`."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    amount = float(value)
    for unit in units:
        if abs(amount) < 1024.0 or unit == units[-1]:
            return f"{amount:.2f} {unit}"
        amount /= 1024.0
    raise AssertionError("unreachable")  # pragma: no cover


def human_rate(value: float, unit: str) -> str:
    """A rate in powers of ten: `3.35 TB/s`, `989.00 TFLOP/s`."""
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {prefix}{unit}"
    return f"{value:.2f} {unit}"


def _n(value: float) -> str:
    """A number with thousands separators; floats to at most four significant decimals."""
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) < 1e16):
        return f"{int(value):,}"
    return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def human(value: float, unit: str) -> str:
    if unit == "bytes":
        return human_bytes(value)
    if unit == "bytes per second":
        return human_rate(value, "B/s")
    if unit == "operations per second":
        return human_rate(value, "FLOP/s")
    if unit == "operations":
        return human_rate(value, "FLOP")
    if unit == "tokens per second":
        return f"{value:,.1f} tokens/s"
    if unit == "seconds":
        return f"{value * 1e3:,.3f} ms"
    return f"{_n(value)} {unit}"


SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+))?\s*([KMGTP]i?B|B)?\s*$", re.I)
SIZE_SCALE = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}
SIZE_SCALE.update({"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "PIB": 2**50})


def parse_size(text: str, name: str = "memory") -> int:
    """`80GB` (x 10^9), `80GiB` (x 2^30), `85899345920` or `8.5e10` -> bytes; exit 2 naming the option."""
    found = SIZE.match(text)
    if not found:
        raise UsageError(f"{FLAGS[name]} takes a size such as 80GB, 80GiB or 85899345920 (bytes), not {text!r}")
    number, exponent, unit = found.groups()
    value = float(number) * 10 ** int(exponent or 0) * SIZE_SCALE[(unit or "").upper()]
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{FLAGS[name]} must be a positive size, not {text!r}")
    if value > MAX_MEMORY:
        raise UsageError(f"{FLAGS[name]} must be at most {MAX_MEMORY:,} bytes (a petabyte), not {text!r}")
    return int(value)


# --- the shipped tables --------------------------------------------------------------------------


_TABLES: dict[str, list[dict[str, Any]]] = {}


def _table(name: str) -> list[dict[str, Any]]:
    if name not in _TABLES:
        import tomli  # small files; tomli words any error, and the files ship with invmap

        with open(DATA / f"{name}s.toml", "rb") as handle:
            _TABLES[name] = tomli.load(handle)[name]
    return _TABLES[name]


def model_table() -> list[dict[str, Any]]:
    return _table("model")


def gpu_table() -> list[dict[str, Any]]:
    return _table("gpu")


def model_names() -> tuple[str, ...]:
    return tuple(m["name"] for m in model_table())


def gpu_names() -> tuple[str, ...]:
    return tuple(g["name"] for g in gpu_table())


def _folded(text: str) -> str:
    return re.sub(r"[\s_]+", "-", text.strip().casefold())


def _unknown(kind: str, name: str, names: tuple[str, ...], hint: str) -> UsageError:
    import difflib

    close = difflib.get_close_matches(_folded(name), names, n=1, cutoff=0.6)
    suggestion = f"; did you mean '{close[0]}'?" if close else ""
    return UsageError(f"unknown {kind} '{name}'{suggestion} ({hint}: {', '.join(names)})")


# --- GPUs ----------------------------------------------------------------------------------------


@dataclass
class Gpu:
    name: str
    display: str
    vendor: str
    memory_bytes: int | None
    memory_gb: float | None
    bandwidth: float | None  # bytes per second
    bf16_peak: float | None  # dense operations per second
    fp8_peak: float | None
    read_from: list[str]

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "display": self.display,
            "vendor": self.vendor,
            "memory_gb": self.memory_gb,
            "memory_bytes": self.memory_bytes,
            "bandwidth_tb_s": None if self.bandwidth is None else self.bandwidth / 1e12,
            "bf16_dense_tflops": None if self.bf16_peak is None else self.bf16_peak / 1e12,
            "fp8_dense_tflops": None if self.fp8_peak is None else self.fp8_peak / 1e12,
            "read_from": list(self.read_from),
        }


def _gpu_of(entry: dict[str, Any]) -> Gpu:
    def scaled(key: str, scale: float) -> float | None:
        value = entry.get(key)
        return None if value is None else float(value) * scale

    memory_gb = entry.get("memory_gb")
    return Gpu(
        entry["name"],
        entry["display"],
        entry["vendor"],
        None if memory_gb is None else int(round(memory_gb * 10**9)),  # decimal GB, converted once
        memory_gb,
        scaled("bandwidth_tb_s", 1e12),
        scaled("bf16_dense_tflops", 1e12),
        scaled("fp8_dense_tflops", 1e12),
        list(entry.get("read_from", [])),
    )


def gpus() -> list[Gpu]:
    return [_gpu_of(g) for g in gpu_table()]


def find_gpu(name: str) -> Gpu:
    wanted = _folded(name)
    for entry in gpu_table():
        if _folded(entry["name"]) == wanted or _folded(entry["display"]) == wanted:
            return _gpu_of(entry)
    raise _unknown("GPU", name, gpu_names(), "shipped GPUs (invmap gpus); or give --memory, --bandwidth, --peak")


# --- models --------------------------------------------------------------------------------------


@dataclass
class Model:
    name: str
    display: str
    config: dict[str, Any]  # the language model's part (text_config merged over the top level)
    where: str  # the file read, or the shipped table's entry
    read_from: list[str] = field(default_factory=list)
    note: str = ""
    folder: Path | None = None  # the folder holding config.json (for model.safetensors.index.json)

    @property
    def model_type(self) -> str:
        return str(self.config.get("model_type"))

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "display": self.display,
            "model_type": self.model_type,
            "read_from": list(self.read_from) or [self.where],
            "note": self.note or None,
        }


def models() -> list[Model]:
    return [_shipped(m) for m in model_table()]


def _shipped(entry: dict[str, Any]) -> Model:
    return Model(
        entry["name"],
        entry["display"],
        dict(entry["config"]),
        f"invmap's model table ({entry['name']})",
        list(entry.get("read_from", [])),
        entry.get("note", ""),
    )


def _language_part(config: dict[str, Any]) -> dict[str, Any]:
    """A multimodal config's `text_config`, with the top level's dtype and model_type as fallbacks."""
    text = config.get("text_config")
    if not isinstance(text, dict):
        return config
    merged = {k: config[k] for k in ("torch_dtype", "dtype", "model_type") if k in config}
    merged.update(text)
    return merged


def _read_json(path: Path) -> dict[str, Any]:
    shown = str(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG + 1)
    except FileNotFoundError:
        raise CatalogError(shown, ["no such file"]) from None
    except IsADirectoryError:
        raise CatalogError(shown, ["is a directory, not a config file"]) from None
    except OSError as exc:
        raise FileAccessError(f"cannot read {shown}: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG:
        raise CatalogError(shown, [f"larger than {MAX_CONFIG:,} bytes: not a config.json"])
    try:
        value = json.loads(data.decode("utf-8-sig"), parse_constant=_refuse_constant)
    except UnicodeDecodeError as exc:
        raise CatalogError(shown, [f"not UTF-8 text (invalid byte at offset {exc.start})"]) from None
    except json.JSONDecodeError as exc:
        raise CatalogError(shown, [f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"]) from None
    except (ValueError, RecursionError) as exc:
        raise CatalogError(shown, [f"invalid JSON: {exc}"]) from None
    if not isinstance(value, dict):
        raise CatalogError(shown, ["must be a JSON object (a model's config.json)"])
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_model(ref: str) -> Model:
    """`--model PATH` (a config.json or the folder holding it) or `--model NAME` (the shipped table)."""
    path = Path(ref)
    if ref.strip() and (os.path.lexists(path) or ref.endswith(("/", ".json"))):
        config_path = path / "config.json" if path.is_dir() else path
        if path.is_dir() and not config_path.exists():
            raise CatalogError(str(path), ["no config.json in this folder"])
        config = _language_part(_read_json(config_path))
        if "model_type" not in config:
            raise CatalogError(str(config_path), ["has no 'model_type' (needed to read its attention layout)"])
        name = config_path.parent.name or str(config_path)
        return Model(name, name, config, str(config_path), [], "", config_path.parent)
    wanted = _folded(ref)
    for entry in model_table():
        if _folded(entry["name"]) == wanted or _folded(entry["display"]) == wanted:
            return _shipped(entry)
    raise _unknown("model", ref, model_names(), "shipped models (invmap models); or give a path to a config.json")


# --- a model's attention layout ------------------------------------------------------------------


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


def _need(config: dict[str, Any], key: str, where: str, kind: type = int) -> Any:
    value = config.get(key)
    if value is None:
        raise CatalogError(where, [f"has no '{key}', which the estimate needs"])
    if kind is int and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise CatalogError(where, [f"'{key}' must be a positive integer, not {json.dumps(value)}"])
    return value


def _optional_int(config: dict[str, Any], key: str, where: str) -> int | None:
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise CatalogError(where, [f"'{key}' must be a positive integer, not {json.dumps(value)}"])
    return value


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
    if kind not in SUPPORTED_TYPES:
        raise CatalogError(where, [f"model_type '{kind}' is not supported (supported: {', '.join(SUPPORTED_TYPES)})"])
    layers = _need(c, "num_hidden_layers", where)
    heads = _need(c, "num_attention_heads", where)
    hidden = _optional_int(c, "hidden_size", where)
    dtype_bytes, dtype_name = _dtype(c)
    max_positions = _optional_int(c, "max_position_embeddings", where)
    if kind in LATENT_TYPES:
        rank = _need(c, "kv_lora_rank", where)
        rope = _need(c, "qk_rope_head_dim", where)
        nope = _optional_int(c, "qk_nope_head_dim", where) or 0
        value_dim = _optional_int(c, "v_head_dim", where) or rank
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
        hidden = _need(c, "hidden_size", where)
        head_dim = hidden // heads
    else:
        kv_heads = _optional_int(c, "num_key_value_heads", where) or heads
        head_dim = _optional_int(c, "head_dim", where)
        if head_dim is None:
            hidden = _need(c, "hidden_size", where)
            head_dim = hidden // heads
    if kv_heads > heads or heads % kv_heads:
        raise CatalogError(where, [f"num_key_value_heads ({kv_heads}) must divide num_attention_heads ({heads})"])
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
    )


def _windows(c: dict[str, Any], kind: str, layers: int, where: str) -> list[int | None]:
    """Each layer's window: None for full attention, W for a sliding-window layer."""
    types = c.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers:
            raise CatalogError(where, [f"'layer_types' must list one type for each of the {layers} layers"])
        unknown = sorted({t for t in types if t not in ("full_attention", "sliding_attention")}, key=str)
        if unknown:
            raise CatalogError(
                where,
                [
                    f"layer type {json.dumps(unknown[0])} is not supported (only full_attention and "
                    "sliding_attention layers are estimated)"
                ],
            )
        if "sliding_attention" in types:
            window = _need(c, "sliding_window", where)
            return [window if t == "sliding_attention" else None for t in types]
        return [None] * layers
    if kind in ("gemma3", "gemma3_text"):
        pattern = _optional_int(c, "sliding_window_pattern", where) or _optional_int(
            c, "_sliding_window_pattern", where
        )
        if pattern is None:
            raise CatalogError(where, ["has no 'layer_types' or 'sliding_window_pattern', which the estimate needs"])
        window = _need(c, "sliding_window", where)
        return [None if (i + 1) % pattern == 0 else window for i in range(layers)]
    if kind == "gpt_oss":
        raise CatalogError(where, ["has no 'layer_types', which the estimate needs"])
    if kind in ("qwen2", "qwen3", "qwen3_moe"):
        if c.get("use_sliding_window"):
            raise CatalogError(
                where, ["use_sliding_window = true is not supported (which layers slide depends on max_window_layers)"]
            )
        return [None] * layers
    if kind in ("mistral", "mixtral"):
        window = _optional_int(c, "sliding_window", where)
        return [window] * layers  # one window on every layer, or none
    return [None] * layers


# --- parameters from a config --------------------------------------------------------------------


def parameters_of(model: Model) -> tuple[int, int] | None:
    """(total, active per token) parameters for the families invmap counts; None for the others."""
    c, where, kind = model.config, model.where, model.model_type
    if kind not in PARAMETER_FAMILIES:
        return None
    hidden = _need(c, "hidden_size", where)
    vocab = _need(c, "vocab_size", where)
    layers = _need(c, "num_hidden_layers", where)
    heads = _need(c, "num_attention_heads", where)
    if kind == "opt":
        ffn = _need(c, "ffn_dim", where)
        projection = _optional_int(c, "word_embed_proj_dim", where) or hidden
        if projection != hidden:
            raise CatalogError(where, ["word_embed_proj_dim other than hidden_size is not counted"])
        positions = _need(c, "max_position_embeddings", where)
        per_layer = 4 * (hidden * hidden + hidden) + (hidden * ffn + ffn) + (ffn * hidden + hidden) + 4 * hidden
        total = vocab * hidden + (positions + 2) * hidden + layers * per_layer + 2 * hidden  # lm_head tied
        return total, total
    kv_heads = _optional_int(c, "num_key_value_heads", where) or heads
    head_dim = _optional_int(c, "head_dim", where) or hidden // heads
    inter = _need(c, "intermediate_size", where)
    q, kv = heads * head_dim, kv_heads * head_dim
    attention = hidden * q + 2 * hidden * kv + q * hidden
    if kind == "qwen2" or c.get("attention_bias"):
        attention += q + 2 * kv + (hidden if c.get("attention_bias") and kind != "qwen2" else 0)
    if kind == "qwen3":
        attention += 2 * head_dim  # q_norm and k_norm
    expert = 3 * hidden * inter + (2 * inter + hidden if c.get("mlp_bias") else 0)
    norms = 2 * hidden
    if kind == "mixtral":
        experts = _need(c, "num_local_experts", where)
        used = _need(c, "num_experts_per_tok", where)
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
    if model.folder is None:
        return None
    index = model.folder / "model.safetensors.index.json"
    if not index.is_file():
        return None
    data = _read_json(index)
    total = data.get("metadata", {}).get("total_size") if isinstance(data.get("metadata"), dict) else None
    if isinstance(total, bool) or not isinstance(total, int) or total <= 0:
        raise CatalogError(str(index), ["has no positive metadata.total_size"])
    return total


# --- inputs and their provenance -----------------------------------------------------------------


class Inputs:
    """The values an estimate uses, each with where it came from (`option`, `model`, `gpu`, the field
    guide's `default`, or invmap's own default)."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self.items: list[dict[str, Any]] = []
        self.values: dict[str, Any] = {}

    def pick(self, name: str, unit: str, *candidates: tuple[Any, str]) -> Any:
        """The option if given, else the first candidate (value, from) that is not None."""
        if name in self.values:
            return self.values[name]
        given = self.options.get(name)
        if given is not None:
            chosen: tuple[Any, str] = (check(name, given), "option")
        else:
            chosen = next(((v, f) for v, f in candidates if v is not None), (None, ""))
        if chosen[0] is not None:
            self.add(name, chosen[0], unit, chosen[1])
        return chosen[0]

    def add(self, name: str, value: Any, unit: str, source: str) -> None:
        if name in self.values:
            self.items = [i for i in self.items if i["name"] != name]
        self.values[name] = value
        self.items.append({"name": name, "value": value, "unit": unit, "from": source})

    @property
    def defaults_used(self) -> bool:
        return any(i["from"] == "default" for i in self.items)


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
    elif name == "gpu_memory_utilization":
        if not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 < value <= 1:
            raise UsageError(f"{flag} must be a fraction in (0, 1], not {value}")
        value = float(value)
    return value


def _kv_element(inputs: Inputs, layout: Layout | None) -> int:
    """KV bytes per element: --element-bytes, else --kv-cache-dtype (vLLM's values; `auto` is the
    config's torch_dtype or dtype), else the config's dtype, else the field guide's 2."""
    dtype = inputs.options.get("kv_cache_dtype")
    if dtype is not None and dtype not in KV_DTYPES:
        raise UsageError(f"unknown --kv-cache-dtype '{dtype}' (valid: {', '.join(KV_DTYPES)})")
    model_bytes = layout.dtype_bytes if layout is not None else None
    model_source = f"model ({layout.dtype_name})" if layout is not None and layout.dtype_name else "model"
    by_dtype, dtype_source = None, ""
    if dtype == "auto":
        if model_bytes is None:
            raise UsageError("--kv-cache-dtype auto needs a --model whose config names its torch_dtype (or dtype)")
        by_dtype, dtype_source = model_bytes, f"--kv-cache-dtype auto: {model_source}"
    elif dtype is not None:
        by_dtype, dtype_source = KV_DTYPES[dtype], f"--kv-cache-dtype {dtype}"
    if dtype is not None:
        inputs.add("kv_cache_dtype", dtype, "", "option")
    return inputs.pick(
        "element_bytes",
        "bytes",
        (by_dtype, dtype_source),
        (model_bytes, model_source),
        (IE_KV["element_bytes"], "default"),
    )


# --- KV ------------------------------------------------------------------------------------------


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

    def per_layer_token(self, per_gpu: bool = True) -> int:
        """Bytes one layer keeps for one token (on one GPU when `per_gpu`)."""
        if self.kind == "latent":
            rank, rope = self.latent  # type: ignore[misc]
            return (rank + rope) * self.element
        heads = self.heads_per_gpu if per_gpu else self.kv_heads
        return heads * self.head_dim * 2 * self.element  # type: ignore[operator]

    def per_token(self, per_gpu: bool = True) -> int:
        """Every layer as full attention: the field guide's `L x H_kv x d_h x 2 x b_e`."""
        return len(self.windows) * self.per_layer_token(per_gpu)

    def per_sequence(self, tokens: int, per_gpu: bool = True) -> int:
        """One sequence of `tokens`: a sliding layer keeps at most its window."""
        held = sum(tokens if w is None else min(tokens, w) for w in self.windows)
        return held * self.per_layer_token(per_gpu)


def _kv_shape(inputs: Inputs, model: Model | None, layout: Layout | None) -> tuple[KvShape, list[str], list[str]]:
    """The KV dimensions (option, then model, then the field guide's defaults), the formulas' lines for
    them and notes."""
    o = inputs.options
    notes: list[str] = []
    if layout is not None and layout.kind == "latent":
        for name in ("kv_heads", "head_dim"):
            if o.get(name) is not None:
                raise UsageError(
                    f"{FLAGS[name]} does not apply to {model.display}: its latent attention caches "  # type: ignore[union-attr]
                    "kv_lora_rank + qk_rope_head_dim per layer, not heads x head_dim"
                )
    layers = inputs.pick("layers", "layers", (layout.layers if layout else None, "model"), (IE_KV["layers"], "default"))
    attention_heads = inputs.pick(
        "attention_heads",
        "heads",
        (layout.attention_heads if layout else None, "model"),
        (IE_KV["attention_heads"], "default"),
    )
    windows: list[int | None] = list(layout.windows) if layout and layers == layout.layers else [None] * layers
    if layout is not None and layout.sliding and layers != layout.layers:
        notes.append(
            f"--layers {layers} replaces the model's {layout.layers} layers: every layer is counted as full attention"
        )
    tp = inputs.pick("tensor_parallel", "GPUs", (1, "invmap default"))
    if layout is not None and layout.kind == "latent":
        rank, rope = layout.latent  # type: ignore[misc]
        inputs.add("kv_lora_rank", rank, "elements", "model")
        inputs.add("qk_rope_head_dim", rope, "elements", "model")
        element = _kv_element(inputs, layout)
        shape = KvShape("latent", windows, None, None, (rank, rope), element, None, tp, attention_heads)
        return shape, [], notes
    kv_heads = inputs.pick(
        "kv_heads", "heads", (layout.kv_heads if layout else None, "model"), (IE_KV["kv_heads"], "default")
    )
    head_dim = inputs.pick(
        "head_dim", "elements", (layout.head_dim if layout else None, "model"), (IE_KV["head_dim"], "default")
    )
    if kv_heads > attention_heads:
        raise UsageError(f"--kv-heads ({kv_heads}) cannot exceed --attention-heads ({attention_heads})")
    if attention_heads % kv_heads:
        raise UsageError(f"--attention-heads ({attention_heads}) must be divisible by --kv-heads ({kv_heads})")
    element = _kv_element(inputs, layout)
    if kv_heads >= tp and kv_heads % tp:
        raise UsageError(f"{kv_heads} KV heads do not divide among --tensor-parallel {tp} GPUs")
    if kv_heads < tp and tp % kv_heads:
        raise UsageError(f"--tensor-parallel {tp} is not a multiple of the {kv_heads} KV heads")
    per_gpu = max(1, kv_heads // tp)
    lines = []
    if tp > 1:
        lines.append(
            f"KV heads per GPU = max(1, H_kv / N) = max(1, {kv_heads} / {tp}) = {per_gpu}"
            + (" (replicated: fewer KV heads than GPUs)" if kv_heads < tp else "")
        )
    shape = KvShape("standard", windows, kv_heads, head_dim, None, element, per_gpu, tp, attention_heads)
    return shape, lines, notes


def _token_formula(shape: KvShape, per_gpu: bool) -> str:
    value = shape.per_token(per_gpu)
    if shape.kind == "latent":
        rank, rope = shape.latent  # type: ignore[misc]
        return (
            f"bytes_per_token = L x (kv_lora_rank + qk_rope_head_dim) x b_e = {len(shape.windows)} x ({rank} + {rope})"
            f" x {shape.element} = {value:,} B ({human_bytes(value)})"
        )
    heads = shape.heads_per_gpu if per_gpu else shape.kv_heads
    symbol = "H_kv/N" if per_gpu and shape.tensor_parallel > 1 else "H_kv"
    return (
        f"bytes_per_token = L x {symbol} x d_h x 2 x b_e = {len(shape.windows)} x {heads} x {shape.head_dim} x 2 x "
        f"{shape.element} = {value:,} B ({human_bytes(value)})"
    )


def _sequence_formula(shape: KvShape, tokens: int, per_gpu: bool) -> str:
    value = shape.per_sequence(tokens, per_gpu)
    if not any(w is not None for w in shape.windows):
        return f"bytes_per_sequence = bytes_per_token x S = {shape.per_token(per_gpu):,} x {tokens:,} = {value:,} B ({human_bytes(value)})"
    full = sum(1 for w in shape.windows if w is None)
    window = max(w for w in shape.windows if w is not None)
    sliding = len(shape.windows) - full
    return (
        f"bytes_per_sequence = (L_full x S + L_sliding x min(S, W)) x bytes_per_layer_token = ({full} x {tokens:,} + "
        f"{sliding} x {min(tokens, window):,}) x {shape.per_layer_token(per_gpu):,} = {value:,} B ({human_bytes(value)})"
    )


KV_LIMITATIONS = [
    "It excludes block (page) rounding, reservation slack, prefix-sharing references, tier copies, and eviction "
    "and recomputation work (the field guide's equations page).",
    "It assumes dense K and V storage with the declared element size; quantization scales and metadata are not counted.",
]


def check_all(options: dict[str, Any]) -> None:
    """Every numeric option given, checked before anything is computed (used or not)."""
    for name, value in options.items():
        if value is not None and (name in INT_BOUNDS or name in FLOAT_BOUNDS or name == "gpu_memory_utilization"):
            check(name, value)


KV_SHAPE_OPTIONS = ("attention_heads", "kv_heads", "head_dim", "element_bytes", "kv_cache_dtype", "tensor_parallel")


def kv(options: dict[str, Any], model: Model | None) -> dict[str, Any]:
    """`ie memory kv` from a model's config: bytes per token, per sequence and in total."""
    check_all(options)
    inputs = Inputs(options)
    layout = layout_of(model) if model is not None else None
    shape, tp_lines, notes = _kv_shape(inputs, model, layout)
    tokens = inputs.pick("tokens", "tokens", (IE_KV["tokens"], "default"))
    concurrency = inputs.pick("concurrency", "sequences", (IE_KV["concurrency"], "default"))
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
        _token_formula(shape, per_gpu=False),
        _sequence_formula(shape, tokens, per_gpu=False),
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
        formulas.append(_token_formula(shape, per_gpu=True).replace("bytes_per_token", "bytes_per_token_per_gpu", 1))
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
    return _result(
        "kv",
        inputs,
        model,
        None,
        results,
        units,
        formulas,
        assumptions,
        limitations,
        notes,
        workload={"tokens_per_sequence": tokens, "concurrent_sequences": concurrency},
    )


# --- memory --------------------------------------------------------------------------------------


MEMORY_LIMITATIONS = [
    "It leaves out CUDA graphs, runtime workspaces, allocator slack and fragmentation, non-torch memory (CUDA "
    "context, communication buffers) and activation peaks beyond the modelled working set.",
    "The KV pool is what is left after weights and the activation working set; an engine measures its own "
    "(vLLM profiles a forward pass before it sizes the cache).",
]


def memory(options: dict[str, Any], model: Model | None, gpu: Gpu | None) -> dict[str, Any]:
    """`ie memory model`, and with a device's memory what is left for KV at a utilization fraction."""
    check_all(options)
    inputs = Inputs(options)
    layout = layout_of(model) if model is not None else None
    notes: list[str] = []
    formulas: list[str] = []
    counted = parameters_of(model) if model is not None else None
    stored = safetensors_total(model) if model is not None and options.get("parameters") is None else None
    if stored is not None:
        weights = stored
        inputs.add("weights_bytes", stored, "bytes", "model.safetensors.index.json")
        formulas.append(
            f"weights_bytes = metadata.total_size of model.safetensors.index.json = {stored:,} B ({human_bytes(stored)})"
        )
    else:
        if model is not None and options.get("parameters") is None and counted is None:
            raise UsageError(
                f"invmap does not count the parameters of model_type '{model.model_type}' (it counts "
                f"{', '.join(PARAMETER_FAMILIES)}): give --parameters, or put model.safetensors.index.json "
                "beside config.json"
            )
        parameters = inputs.pick(
            "parameters",
            "parameters",
            (counted[0] if counted else None, "model (counted from its config)"),
            (IE_MODEL["parameters"], "default"),
        )
        weight_bytes = inputs.pick(
            "weight_bytes",
            "bytes",
            (layout.dtype_bytes if layout else None, "model"),
            (IE_MODEL["weight_bytes"], "default"),
        )
        weights = parameters * weight_bytes
        formulas.append(
            f"weights_bytes = P x b_w = {parameters:,} x {weight_bytes} = {weights:,} B ({human_bytes(weights)})"
        )
    inputs.pick("layers", "layers", (layout.layers if layout else None, "model"), (IE_MODEL["layers"], "default"))
    hidden = inputs.pick(
        "hidden_size",
        "elements",
        (layout.hidden_size if layout else None, "model"),
        (IE_MODEL["hidden_size"], "default"),
    )
    batch = inputs.pick("batch_size", "sequences", (IE_MODEL["batch_size"], "default"))
    length = inputs.pick("sequence_length", "tokens", (IE_MODEL["sequence_length"], "default"))
    act_bytes = inputs.pick("activation_bytes", "bytes", (IE_MODEL["activation_bytes"], "default"))
    tensors = inputs.pick("activation_tensors", "tensors", (IE_MODEL["activation_tensors"], "default"))
    activations = batch * length * hidden * act_bytes * tensors
    total = weights + activations
    formulas.append(
        f"activation_bytes = B x S x H x b_a x a = {batch:,} x {length:,} x {hidden:,} x {act_bytes} x {tensors} = "
        f"{activations:,} B ({human_bytes(activations)})"
    )
    formulas.append(
        f"total_bytes = weights_bytes + activation_bytes = {weights:,} + {activations:,} = {total:,} B ({human_bytes(total)})"
    )
    results: dict[str, Any] = {"weights_bytes": weights, "activation_bytes": activations, "total_bytes": total}
    units = dict.fromkeys(results, "bytes")
    extra: dict[str, Any] = {"fits": None, "verdict": None}
    device_memory = _device_memory(inputs, gpu)
    assumptions: list[str] = []
    if device_memory is not None:
        shape, tp_lines, kv_notes = _kv_shape(inputs, model, layout)
        notes += kv_notes
        tp = shape.tensor_parallel
        util = inputs.pick("gpu_memory_utilization", "fraction", (DEFAULT_UTILIZATION, "invmap default"))
        request = inputs.pick(
            "tokens_per_request",
            "tokens",
            (layout.max_positions if layout else None, "model (max_position_embeddings)"),
            (length, "--sequence-length"),
        )
        budget = int(device_memory * util)
        weights_gpu = weights // tp if tp > 1 else weights
        left = budget - weights_gpu - activations
        per_token = shape.per_token()
        per_request = shape.per_sequence(request)
        block = options.get("block_size")
        pool_tokens = max(left, 0) // per_token
        if block is not None:
            check("block_size", block)
            inputs.add("block_size", block, "tokens", "option")
            pool_tokens = pool_tokens // block * block
        concurrency = max(left, 0) / per_request
        results.update(
            {
                "memory_bytes": device_memory,
                "budget_bytes": budget,
                "kv_available_bytes": max(left, 0),
                "kv_bytes_per_token": per_token,
                "kv_pool_tokens": pool_tokens,
                "max_concurrency": round(concurrency, 2),
            }
        )
        units.update(
            dict.fromkeys(("memory_bytes", "budget_bytes", "kv_available_bytes", "kv_bytes_per_token"), "bytes")
        )
        if tp > 1:
            results["weights_bytes_per_gpu"] = weights_gpu
            units["weights_bytes_per_gpu"] = "bytes"
        units.update({"kv_pool_tokens": "tokens", "max_concurrency": f"requests of {request:,} tokens"})
        formulas.append(
            f"budget_bytes = memory x utilization = {device_memory:,} x {util:g} = {budget:,} B ({human_bytes(budget)})"
        )
        if tp > 1:
            formulas.append(f"weights_bytes_per_gpu = weights_bytes / N = {weights:,} / {tp} = {weights_gpu:,} B")
        formulas.append(
            f"kv_available_bytes = budget - weights{'_per_gpu' if tp > 1 else ''} - activation_bytes = {budget:,} - "
            f"{weights_gpu:,} - {activations:,} = {left:,} B ({human_bytes(left)})"
        )
        formulas += tp_lines
        formulas.append(_token_formula(shape, per_gpu=True).replace("bytes_per_token", "kv_bytes_per_token", 1))
        rounding = f", rounded down to blocks of {block} tokens" if block else ""
        formulas.append(
            f"kv_pool_tokens = floor(kv_available_bytes / kv_bytes_per_token){rounding} = {pool_tokens:,} tokens "
            "(vLLM logs this as 'GPU KV cache size: N tokens')"
        )
        formulas.append(
            f"max_concurrency = kv_available_bytes / bytes_per_request = {max(left, 0):,} / {per_request:,} = "
            f"{concurrency:.2f}x (vLLM: 'Maximum concurrency for {request:,} tokens per request: Nx')"
        )
        label = gpu.display if gpu is not None and options.get("memory") is None else "the device"
        stated = (
            f"{gpu.memory_gb:g} GB" if gpu is not None and options.get("memory") is None else human_bytes(device_memory)
        )
        if weights_gpu > device_memory:
            extra.update(fits=False, verdict=f"weights alone need {human_bytes(weights_gpu)}; {label} has {stated}")
        elif left <= 0:
            extra.update(
                fits=False,
                verdict=f"weights ({human_bytes(weights_gpu)}) and activations ({human_bytes(activations)}) leave no room "
                f"for KV in {human_bytes(budget)} ({util:g} of {label}'s {stated})",
            )
        elif per_request > left:
            extra.update(
                fits=False,
                verdict=f"one request of {request:,} tokens needs {human_bytes(per_request)} of KV; "
                f"{human_bytes(left)} is left",
            )
        else:
            extra.update(
                fits=True,
                verdict=f"{pool_tokens:,} tokens of KV fit ({concurrency:.2f} requests of {request:,} tokens) in the "
                f"{human_bytes(left)} left of {label}'s {stated} at {util:g}",
            )
        if shape.kind == "standard" and any(w is not None for w in shape.windows):
            notes.append(
                "Sliding-window layers: kv_pool_tokens divides by bytes_per_token (every layer full); max_concurrency "
                "uses the window-bounded bytes of one request. vLLM's hybrid KV cache manager reports token counts "
                "between the two."
            )
        assumptions.append(
            "vLLM's --gpu-memory-utilization meaning: the fraction of the device's memory the engine may use in all "
            "(weights, activations and KV)."
        )
        if tp > 1:
            assumptions.append("Tensor parallelism splits the weights evenly across the GPUs (embeddings included).")
    else:
        for name in ("gpu_memory_utilization", "tokens_per_request", "block_size", *KV_SHAPE_OPTIONS):
            if options.get(name) is not None:
                raise UsageError(f"{FLAGS[name]} needs a device: give --gpu or --memory (the KV pool is sized on it)")
    if counted is not None and stored is None and options.get("parameters") is None:
        assumptions.append(
            f"Parameters counted from the config ({model.model_type}): embeddings, attention, MLP"  # type: ignore[union-attr]
            + (" (every expert)" if model.model_type == "mixtral" else "")  # type: ignore[union-attr]
            + ", norms and the output head unless tied."
        )
    return _result(
        "memory",
        inputs,
        model,
        gpu,
        results,
        units,
        formulas,
        assumptions,
        list(MEMORY_LIMITATIONS),
        notes,
        workload={"batch_size": batch, "sequence_length": length},
        extra=extra,
    )


def _device_memory(inputs: Inputs, gpu: Gpu | None) -> int | None:
    given = inputs.options.get("memory")
    if given is not None:
        value = parse_size(str(given))
        inputs.add("memory", value, "bytes", "option")
        return value
    if gpu is None:
        return None
    if gpu.memory_bytes is None:
        raise UsageError(
            f"invmap's table has no confirmed memory figure for {gpu.display}: give --memory (for example 48GB)"
        )
    inputs.add("memory", gpu.memory_bytes, "bytes", f"gpu ({gpu.memory_gb:g} GB, x 10^9)")
    return gpu.memory_bytes


# --- roofline ------------------------------------------------------------------------------------


ROOFLINE_LIMITATIONS = [
    "The bound omits launch overhead, synchronization, contention, cache effects and transfer behaviour (the field "
    "guide's equations page); it is a bound, not a throughput prediction.",
    "Datasheet peaks are rarely reached; measure the phase before choosing an optimization.",
]


def _attended(tokens: int, window: int | None) -> int:
    """Positions attended over a causal prefill of `tokens` (token i sees min(i, W) positions)."""
    if window is None or tokens <= window:
        return tokens * (tokens + 1) // 2
    return window * (window + 1) // 2 + (tokens - window) * window


def roofline(options: dict[str, Any], model: Model | None, gpu: Gpu | None) -> dict[str, Any]:
    """`ie roofline`: explicit operations and bytes, or a model's prefill or decode step on a GPU."""
    check_all(options)
    inputs = Inputs(options)
    scenario = options.get("scenario") or "prefill"
    if scenario not in IE_ROOFLINE:
        raise UsageError(f"--scenario must be prefill or decode, not '{scenario}'")
    inputs.add("scenario", scenario, "", "option" if options.get("scenario") else "default scenario")
    defaults = IE_ROOFLINE[scenario]
    formulas: list[str] = []
    assumptions: list[str] = []
    notes: list[str] = []
    tokens_per_step = None
    derived_ops = derived_bytes = None
    if model is not None and (options.get("operations") is None or options.get("bytes_moved") is None):
        derived_ops, derived_bytes, tokens_per_step, lines, said = _model_phase(inputs, model, scenario)
        formulas += lines
        assumptions += said
    elif model is None:
        for name in (
            "prompt_tokens",
            "context_tokens",
            "batch_size",
            "parameters",
            "weight_bytes",
            "element_bytes",
            "kv_cache_dtype",
        ):
            if options.get(name) is not None:
                raise UsageError(f"{FLAGS[name]} needs a --model (or give --operations and --bytes-moved)")
    ops = inputs.pick("operations", "operations", (derived_ops, "model"), (defaults["operations"], "default"))
    moved = inputs.pick("bytes_moved", "bytes", (derived_bytes, "model"), (defaults["bytes_moved"], "default"))
    peak_gpu = bandwidth_gpu = None
    if options.get("peak_operations_per_second") is None:
        peak_gpu = _gpu_figure(gpu, "bf16_peak", "a dense BF16 peak", "--peak-operations-per-second")
    if options.get("bandwidth_bytes_per_second") is None:
        bandwidth_gpu = _gpu_figure(gpu, "bandwidth", "an HBM bandwidth", "--bandwidth-bytes-per-second")
    peak = inputs.pick(
        "peak_operations_per_second",
        "operations per second",
        (peak_gpu, "gpu (dense BF16)"),
        (defaults["peak_operations_per_second"], "default"),
    )
    bandwidth = inputs.pick(
        "bandwidth_bytes_per_second",
        "bytes per second",
        (bandwidth_gpu, "gpu"),
        (defaults["bandwidth_bytes_per_second"], "default"),
    )
    intensity = ops / moved
    bandwidth_ceiling = intensity * bandwidth
    upper = min(peak, bandwidth_ceiling)
    limiting = "compute" if peak <= bandwidth_ceiling else "memory_bandwidth"
    ridge = peak / bandwidth
    formulas += [
        f"arithmetic_intensity = O / D = {_n(ops)} / {_n(moved)} = {_n(intensity)} operations per byte",
        f"ridge_point = P_peak / BW = {_n(peak)} / {_n(bandwidth)} = {_n(ridge)} operations per byte",
        f"bandwidth_ceiling = arithmetic_intensity x BW = {_n(intensity)} x {_n(bandwidth)} = {_n(bandwidth_ceiling)} "
        f"operations per second ({human_rate(bandwidth_ceiling, 'FLOP/s')})",
        f"upper_bound = min(P_peak, bandwidth_ceiling) = min({_n(peak)}, {_n(bandwidth_ceiling)}) = {_n(upper)} "
        f"operations per second ({human_rate(upper, 'FLOP/s')}): the lower roof is "
        f"{'compute' if limiting == 'compute' else 'memory bandwidth'}",
    ]
    results: dict[str, Any] = {
        "arithmetic_intensity_operations_per_byte": intensity,
        "ridge_point_operations_per_byte": ridge,
        "bandwidth_ceiling_operations_per_second": bandwidth_ceiling,
        "compute_ceiling_operations_per_second": peak,
        "upper_bound_operations_per_second": upper,
    }
    units = {
        "arithmetic_intensity_operations_per_byte": "operations per byte",
        "ridge_point_operations_per_byte": "operations per byte",
        "bandwidth_ceiling_operations_per_second": "operations per second",
        "compute_ceiling_operations_per_second": "operations per second",
        "upper_bound_operations_per_second": "operations per second",
    }
    if tokens_per_step is not None and options.get("operations") is None:
        step = max(ops / peak, moved / bandwidth)
        rate = upper / (ops / tokens_per_step)
        results.update({"step_time_lower_bound_seconds": step, "tokens_per_second_upper_bound": rate})
        units.update({"step_time_lower_bound_seconds": "seconds", "tokens_per_second_upper_bound": "tokens per second"})
        formulas.append(
            f"step_time >= max(O / P_peak, D / BW) = max({_n(ops / peak)}, {_n(moved / bandwidth)}) s = {step * 1e3:,.3f} ms"
        )
        formulas.append(
            f"tokens_per_second <= upper_bound / (O / tokens per step) = {_n(upper)} / ({_n(ops)} / {tokens_per_step:,}) "
            f"= {rate:,.1f} tokens/s"
        )
    extra = {"limiting_resource": limiting, "scenario": scenario}
    return _result(
        "roofline",
        inputs,
        model,
        gpu,
        results,
        units,
        formulas,
        assumptions,
        list(ROOFLINE_LIMITATIONS),
        notes,
        workload={"scenario": scenario, **({"tokens_per_step": tokens_per_step} if tokens_per_step else {})},
        extra=extra,
    )


def _gpu_figure(gpu: Gpu | None, attr: str, what: str, flag: str) -> float | None:
    if gpu is None:
        return None
    value = getattr(gpu, attr)
    if value is None:
        raise UsageError(f"invmap's table has no confirmed {what} figure for {gpu.display}: give {flag}")
    return value


def _model_phase(inputs: Inputs, model: Model, scenario: str) -> tuple[float, float, int, list[str], list[str]]:
    """Operations and bytes of one prefill of P tokens, or one decode step at batch B with context C."""
    layout = layout_of(model)
    counted = parameters_of(model)
    given = inputs.options.get("parameters")
    if given is None and counted is None:
        raise UsageError(
            f"invmap does not count the parameters of model_type '{model.model_type}' (it counts "
            f"{', '.join(PARAMETER_FAMILIES)}): give --parameters (active per token), or --operations and --bytes-moved"
        )
    active = inputs.pick(
        "parameters",
        "parameters (active per token)",
        (counted[1] if counted else None, "model (counted from its config)"),
    )
    total_params = counted[0] if counted and given is None else active
    if given is not None:
        assumptions_given = "--parameters is taken as the parameters read per step too (weights = P x b_w)"
    else:
        assumptions_given = ""
    weight_bytes = inputs.pick(
        "weight_bytes", "bytes", (layout.dtype_bytes, "model"), (IE_MODEL["weight_bytes"], "default")
    )
    shape, _, _ = _kv_shape(
        Inputs({k: inputs.options.get(k) for k in ("kv_cache_dtype", "element_bytes")}), model, layout
    )
    inputs.add(
        "element_bytes", shape.element, "bytes", "model" if inputs.options.get("element_bytes") is None else "option"
    )
    weights = total_params * weight_bytes
    heads, qd, vd = layout.attention_heads, layout.query_dim, layout.value_dim
    lines: list[str] = []
    said = [
        "Dense matrix products: 2 operations per parameter per token (a multiply and an add).",
        "Every weight is read from memory once per step (for a mixture of experts, all experts: which ones a batch "
        "touches is not modelled).",
    ]
    if assumptions_given:
        said.append(assumptions_given + ".")
    if scenario == "prefill":
        prompt = inputs.pick("prompt_tokens", "tokens", (PHASE_DEFAULTS["prompt_tokens"], "invmap default"))
        pairs = sum(_attended(prompt, w) for w in layout.windows)
        attention = 2 * heads * (qd + vd) * pairs
        ops = 2 * active * prompt + attention
        written = shape.per_sequence(prompt)
        moved = weights + written
        lines += [
            f"O = 2 x active_parameters x P + 2 x heads x (d_qk + d_v) x causal pairs over all layers = 2 x {active:,} x {prompt:,} + "
            f"2 x {heads} x ({qd} + {vd}) x {pairs:,} = {_n(ops)} operations",
            f"D = weights_bytes + KV written = {weights:,} + {written:,} = {_n(moved)} bytes",
        ]
        said.append("Causal attention: token i attends to min(i, W) earlier positions; activations stay on chip.")
        return float(ops), float(moved), prompt, lines, said
    batch = inputs.pick("batch_size", "sequences", (PHASE_DEFAULTS["batch_size"], "invmap default"))
    context = inputs.pick("context_tokens", "tokens", (PHASE_DEFAULTS["context_tokens"], "invmap default"))
    pairs = sum(context if w is None else min(context, w) for w in layout.windows)
    attention = 2 * heads * (qd + vd) * pairs * batch
    ops = 2 * active * batch + attention
    read = shape.per_sequence(context) * batch
    moved = weights + read
    lines += [
        f"O = B x (2 x active_parameters + 2 x heads x (d_qk + d_v) x positions attended over all layers) = {batch:,} x (2 x {active:,} + "
        f"2 x {heads} x ({qd} + {vd}) x {pairs:,}) = {_n(ops)} operations",
        f"D = weights_bytes + B x KV of C tokens = {weights:,} + {batch:,} x {shape.per_sequence(context):,} = {_n(moved)} bytes",
    ]
    said.append("Decode: each of the B sequences adds one token and reads its whole KV cache of C tokens.")
    return float(ops), float(moved), batch, lines, said


# --- the result ----------------------------------------------------------------------------------


def _result(
    kind: str,
    inputs: Inputs,
    model: Model | None,
    gpu: Gpu | None,
    results: dict[str, Any],
    units: dict[str, str],
    formulas: list[str],
    assumptions: list[str],
    limitations: list[str],
    notes: list[str],
    workload: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    defaults = inputs.defaults_used
    if defaults:
        notes = [
            "Some inputs are the field guide's defaults (marked 'from default'), which describe a made-up model, "
            "device and workload: give --model and --gpu, or the options, for a real one.",
            *notes,
        ]
    return {
        "estimate": kind,
        "evidence": LABEL,
        "model": model.summary() if model is not None else None,
        "gpu": gpu.summary() if gpu is not None else None,
        "configuration": {i["name"]: i["value"] for i in inputs.items},
        "inputs": inputs.items,
        "workload": workload,
        "results": results,
        "units": units,
        "human": {name: human(value, units[name]) for name, value in results.items()},
        **(extra or {}),
        "formulas": formulas,
        "assumptions": assumptions,
        "limitations": limitations,
        "notes": notes,
        "defaults_used": defaults,
    }


def text(result: dict[str, Any]) -> str:
    """The estimate as a person reads it: label, inputs with where each came from, results, formulas,
    what it assumes and leaves out."""
    title = {"kv": "KV cache", "memory": "Memory", "roofline": "Roofline"}[result["estimate"]]
    lines = [f"{title} estimate ({result['evidence']})"]
    if result["model"]:
        m = result["model"]
        lines.append(f"model: {m['display']} ({m['model_type']}), read from {', '.join(m['read_from'])}")
    if result["gpu"]:
        lines.append(f"gpu: {result['gpu']['display']}")
    lines.append("")
    lines.append("inputs:")
    width = max((len(i["name"]) for i in result["inputs"]), default=0)
    for i in result["inputs"]:
        value = i["value"] if isinstance(i["value"], str) else _n(i["value"])
        unit = f" {i['unit']}" if i["unit"] else ""
        lines.append(f"  {i['name']:<{width}}  {value}{unit}  from {i['from']}")
    lines.append("results:")
    width = max((len(n) for n in result["results"]), default=0)
    for name, value in result["results"].items():
        unit = result["units"][name]
        shown = result["human"][name]
        plain = f"{_n(value)} {unit}"
        lines.append(f"  {name:<{width}}  {plain}" + (f"  ({shown})" if shown != plain else ""))
    if result.get("limiting_resource"):
        lines.append(f"  {'limiting_resource':<{width}}  {result['limiting_resource']}")
    if result.get("verdict"):
        lines.append(f"  {'fits':<{width}}  {'yes' if result['fits'] else 'no'}: {result['verdict']}")
    for heading, key in (
        ("formulas", "formulas"),
        ("assumptions", "assumptions"),
        ("leaves out", "limitations"),
        ("notes", "notes"),
    ):
        if result[key]:
            lines.append(f"{heading}:")
            lines += [f"  {item}" if key == "formulas" else f"  - {item}" for item in result[key]]
    return "\n".join(lines) + "\n"


# --- experiment records --------------------------------------------------------------------------

RAW = {
    "kv": ("bytes_per_token", "bytes_per_sequence"),
    "memory": ("weights_bytes", "activation_bytes"),
    "roofline": ("arithmetic_intensity_operations_per_byte", "compute_ceiling_operations_per_second"),
}
HYPOTHESES = {
    "kv": "KV storage grows linearly with tokens and concurrent sequences under the model's fixed dimensions.",
    "memory": "The weights and the activation working set leave the stated room for the KV pool.",
    "roofline": "The phase is bounded by the lower of the compute and memory-bandwidth roofs.",
}


def record(result: dict[str, Any], source: dict[str, Any], record_id: str, invmap_version: str) -> dict[str, Any]:
    """An experiment record (format 1.0, result type `estimated`) addressing `source`'s question."""
    kind = result["estimate"]
    subject = result["model"]["display"] if result["model"] else "the field guide's made-up model"

    def value(name: str) -> dict[str, Any]:
        return {"name": name, "value": result["results"][name], "unit": result["units"][name], "evidence": LABEL}

    raw = [value(n) for n in RAW[kind]]
    derived = [value(n) for n in result["results"] if n not in RAW[kind]]
    h = result["human"]
    if kind == "kv":
        w = result["workload"]
        main = (
            f"{h['bytes_per_token']} of KV per token and {h['total_bytes']} for {w['concurrent_sequences']:,} "
            f"sequences of {w['tokens_per_sequence']:,} tokens"
        )
    elif kind == "memory":
        main = f"weights of {h['weights_bytes']}" + (f"; {result['verdict']}" if result.get("verdict") else "")
    else:
        lower = "compute" if result["limiting_resource"] == "compute" else "memory bandwidth"
        main = f"an upper bound of {h['upper_bound_operations_per_second']}, the lower roof being {lower}"
    exclusion = result["limitations"][0]
    sources = [source["url"]] if source.get("url") else []
    for url in (result["model"] or {}).get("read_from", []):
        if url.startswith(("http://", "https://")) and url not in sources:
            sources.append(url)
    environment: dict[str, Any] = {"execution": f"CPU-only formula (invmap {invmap_version} estimate {kind})"}
    environment["hardware"] = result["gpu"]["display"] if result["gpu"] else "not applicable"
    return {
        "schema_version": "1.0",
        "record_id": record_id,
        "title": f"{kind} estimate for {subject}, addressing {source['name']}: {source['question']}",
        "hypothesis": HYPOTHESES[kind],
        "result_type": LABEL,
        "workload": dict(result["workload"]),
        "environment": environment,
        "configuration": dict(result["configuration"]),
        "raw_measurements": raw,
        "derived_metrics": derived or [value(RAW[kind][-1])],
        "conclusion": f"The estimate gives {main}. {exclusion}",
        "limitations": list(result["limitations"]) + list(result["assumptions"]),
        "artifacts": {
            "source_id": source["id"],
            "question": source["question"],
            "estimate": result,
        },
        "sources": sources,
    }


# --- renderers and listings ----------------------------------------------------------------------


def plain_text(result: Any, context: Any) -> Any:
    """`formats.py` renderer of the estimate view for plain output (the same text as the table)."""
    yield text(result.data)


def model_rows() -> list[dict[str, Any]]:
    """`invmap models`: each shipped model, its KV layout and where its config was read."""
    rows = []
    for m in models():
        layout = layout_of(m)
        counted = parameters_of(m)
        shape_heads = layout.kv_heads
        element = layout.dtype_bytes or IE_KV["element_bytes"]
        if layout.kind == "latent":
            rank, rope = layout.latent  # type: ignore[misc]
            per_token = layout.layers * (rank + rope) * element
        else:
            per_token = layout.layers * shape_heads * layout.head_dim * 2 * element  # type: ignore[operator]
        rows.append(
            {
                "name": m.name,
                "display": m.display,
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


def gpu_rows() -> list[dict[str, Any]]:
    """`invmap gpus`: each shipped GPU's figures (None where not confirmed) and where they were read."""
    return [g.summary() for g in gpus()]
