"""A model's config: `--model PATH` (a config.json, or the folder holding it) or a shipped table's
entry, its language part, and its keys read with the checks an estimate needs."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from invmap.errors import CatalogError, FileAccessError
from invmap.estimate.checks import check_key
from invmap.estimate.hub import CONFIG, INDEX, cached, endpoint, fetch_model, is_hub_id, store
from invmap.estimate.refusals import RefusedFile
from invmap.estimate.tables import entry_named, model_names, model_table, unknown
from invmap.inputfile import read_capped

MAX_CONFIG = 64 * 1024**2  # bytes: a config.json is a page of JSON


# A multimodal config's encoders beside its language model: their weights load with it (the estimates
# count those of the families `encoders.ENCODER_COUNTS` declares, and say which they leave out).
ENCODER_KEYS = ("vision_config", "audio_config")


# What a family's transformers config class gives a key that config.json leaves out, for the keys the
# estimates read (transformers' configuration_<family>.py, the same from 4.50 to 5.x): Gemma 3's Hub
# configs leave vocab_size, head_dim and the window pattern to Gemma3TextConfig, and SigLIP's leave
# num_channels to SiglipVisionConfig. Gemma (1 to 4) and OPT tie the output head unless the config
# says not to; every other family's class defaults tie_word_embeddings to False, as a config without
# the key is read.
FAMILY_DEFAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "gemma": ("GemmaConfig", {"tie_word_embeddings": True}),
    "gemma2": ("Gemma2Config", {"tie_word_embeddings": True}),
    "gemma3_text": (
        "Gemma3TextConfig",
        {
            "vocab_size": 262_208,
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "num_hidden_layers": 26,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
            "head_dim": 256,
            "max_position_embeddings": 131_072,
            "sliding_window": 4096,
            "sliding_window_pattern": 6,
            "tie_word_embeddings": True,
        },
    ),
    "gemma4_text": ("Gemma4TextConfig", {"tie_word_embeddings": True}),
    "opt": ("OPTConfig", {"tie_word_embeddings": True}),
    "siglip_vision_model": (
        "SiglipVisionConfig",
        {"num_channels": 3, "image_size": 224, "patch_size": 16, "vision_use_head": True},
    ),
}


# A default that applies only where the config lacks other keys (transformers derives `layer_types`
# from the window pattern only when the config gives none; `_sliding_window_pattern` is the pattern as
# newer releases save it).
SUPERSEDED_BY = {"sliding_window_pattern": ("layer_types", "_sliding_window_pattern")}


def with_family_defaults(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`config` (and its encoders' configs) with FAMILY_DEFAULTS' values for the keys it leaves out,
    and what was taken, a phrase per class ("Gemma3TextConfig's vocab_size 262208")."""
    taken: list[str] = []

    def filled(part: dict[str, Any]) -> dict[str, Any]:
        family = FAMILY_DEFAULTS.get(str(part.get("model_type")))
        if family is None:
            return part
        name, defaults = family
        left = {
            k: v
            for k, v in defaults.items()
            if part.get(k) is None and all(part.get(other) is None for other in SUPERSEDED_BY.get(k, ()))
        }
        if left:
            taken.append(f"{name}'s " + ", ".join(f"{k} {json.dumps(v)}" for k, v in left.items()))
        return {**part, **left}

    out = filled(config)
    for key in ENCODER_KEYS:
        if isinstance(out.get(key), dict):
            out = {**out, key: filled(out[key])}
    return out, taken


@dataclass
class Model:
    name: str
    display: str
    config: dict[str, Any]  # the language model's part (text_config merged over the top level)
    where: str  # the file read, or the shipped table's entry
    read_from: list[str] = field(default_factory=list)
    note: str = ""
    folder: Path | None = None  # the folder holding config.json (for model.safetensors.index.json)
    source: str = "file"  # file, shipped, hub-cache (the Hugging Face cache) or hub (fetched now)
    index: dict[str, Any] | None = None  # a fetched model.safetensors.index.json that could not be cached
    hub_id: str | None = None
    defaults: list[str] = field(default_factory=list)  # FAMILY_DEFAULTS taken for keys the config leaves out

    def __post_init__(self) -> None:
        self.config, self.defaults = with_family_defaults(self.config)

    @property
    def model_type(self) -> str:
        return str(self.config.get("model_type"))

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "display": self.display,
            "model_type": self.model_type,
            "read_from": list(self.read_from) or [self.where],
            "source": self.source,
            "hub_id": self.hub_id,
            "note": self.note or None,
        }


def models() -> list[Model]:
    return [shipped(m) for m in model_table()]


def shipped(entry: dict[str, Any]) -> Model:
    return Model(
        entry["name"],
        entry["display"],
        dict(entry["config"]),
        f"invmap's model table ({entry['name']})",
        list(entry.get("read_from", [])),
        entry.get("note", ""),
        source="shipped",
        hub_id=entry.get("hub_id"),
    )


def _language_part(config: dict[str, Any]) -> dict[str, Any]:
    """A multimodal config's `text_config`, with the top level's dtype and model_type as fallbacks,
    and its encoders' configs (ENCODER_KEYS) kept beside it."""
    text = config.get("text_config")
    if not isinstance(text, dict):
        return config
    merged = {k: config[k] for k in ("torch_dtype", "dtype", "model_type") if k in config}
    merged.update(text)
    merged.update({k: config[k] for k in ENCODER_KEYS if isinstance(config.get(k), dict)})
    return merged


def read_json(path: Path) -> dict[str, Any]:
    shown = str(path)
    data = read_capped(
        shown,
        MAX_CONFIG,
        "is a directory, not a config file",
        f"larger than {MAX_CONFIG:,} bytes: not a config.json",
        lambda exc: FileAccessError(f"cannot read {shown}: {exc.strerror or exc}"),  # exit 4, as any read is
        fifo=True,
    )
    return parse_json(data, shown)


def parse_json(data: bytes, shown: str) -> dict[str, Any]:
    """A JSON object read from a file or fetched (`shown` names it); else exit 3 saying why."""
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
        config = _with_type(_language_part(read_json(config_path)), str(config_path))
        name = config_path.parent.name or str(config_path)
        return consistent(Model(name, name, config, str(config_path), [], "", config_path.parent))
    entry = entry_named(model_table(), ref)
    if entry is not None:
        return consistent(shipped(entry))
    if is_hub_id(ref):
        return consistent(hub_model(ref))
    raise unknown(
        "model",
        ref,
        model_names(),
        "shipped models (invmap models); or give a path to a config.json, or a Hugging Face id org/name",
    )


def hub_model(repo_id: str) -> Model:
    """A Hugging Face id: the local Hugging Face cache's copy, else config.json (and the safetensors
    index when the Hub has one) fetched and cached (hub.py)."""
    found = cached(repo_id)
    if found is not None:
        snapshot, no_index = found
        config = _with_type(_language_part(read_json(snapshot / CONFIG)), str(snapshot / CONFIG))
        note = "read from the Hugging Face cache" + (
            f"; the Hub has no {INDEX}: parameters counted from the config" if no_index else ""
        )
        where = str(snapshot / CONFIG)
        return Model(repo_id, repo_id, config, where, [where], note, snapshot, "hub-cache", None, repo_id)
    fetched = fetch_model(repo_id)
    config = _with_type(_language_part(parse_json(fetched.config, fetched.config_url)), fetched.config_url)
    index = None if fetched.index is None else parse_json(fetched.index, fetched.index_url)
    snapshot, kept_where = store(repo_id, fetched)
    note = f"fetched from {endpoint()}; {kept_where}" + (
        f"; the Hub has no {INDEX}: parameters counted from the config" if index is None else ""
    )
    kept = index if snapshot is None else None
    return Model(
        repo_id, repo_id, config, fetched.config_url, [fetched.config_url], note, snapshot, "hub", kept, repo_id
    )


def _with_type(config: dict[str, Any], where: str) -> dict[str, Any]:
    if "model_type" not in config:
        raise CatalogError(where, ["has no 'model_type' (needed to read its attention layout)"])
    return config


def consistent(model: Model) -> Model:
    """A config whose numbers contradict each other is refused whatever is estimated from it (exit 3):
    a mixture routing each token to more experts than it has."""
    c, where = model.config, model.where
    used, experts = optional_int(c, "num_experts_per_tok", where), optional_int(c, "num_local_experts", where)
    if used is not None and experts is not None and used > experts:
        raise RefusedFile(
            "config",
            where,
            f"'num_experts_per_tok' ({used:,}) cannot exceed 'num_local_experts' ({experts:,})",
            "num_experts_per_tok",
            "num_local_experts",
        )
    return model


def need(config: dict[str, Any], key: str, where: str) -> int:
    """A number the estimate needs from the config: a positive integer within the bounds declared for
    `key` (`num_hidden_layers` as --layers); else exit 3 naming the file and the key."""
    value = config.get(key)
    if value is None:
        raise RefusedFile("config", where, f"has no '{key}', which the estimate needs", key)
    return check_key(key, value, where)


def optional_int(config: dict[str, Any], key: str, where: str) -> int | None:
    """As `need`, for a key the config may leave out (None)."""
    value = config.get(key)
    return None if value is None else check_key(key, value, where)


def head_dim_of(config: dict[str, Any], heads: int, where: str, named: bool = True) -> int:
    """The head dimension: `head_dim` (for a family whose configs may name it), else hidden_size //
    num_attention_heads (as transformers reads it), which must leave at least one element a head."""
    given = optional_int(config, "head_dim", where) if named else None
    if given is not None:
        return given
    hidden = need(config, "hidden_size", where)
    if hidden < heads:
        raise RefusedFile(
            "config",
            where,
            f"a head dimension of 0 ('hidden_size' {hidden:,} // 'num_attention_heads' {heads:,}): a config "
            "with fewer hidden elements than heads must name its 'head_dim'",
            "hidden_size",
            "num_attention_heads",
        )
    return hidden // heads
