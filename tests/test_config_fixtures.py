"""The model configs of tests/fixtures/configs (issue 42, capacity) are listed, present and well formed.

SOURCES.toml says, for every folder <org>--<name>/, which Hugging Face model the config belongs to,
which files the folder holds and where each was read. These tests hold the folders and the index
to each other, check that every file parses, that the index metadata keeps only what it should,
and that the provenance fields say something checkable (a commit, a package version, a URL).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import tomli

FOLDER = Path(__file__).parent / "fixtures" / "configs"
SOURCES = FOLDER / "SOURCES.toml"
INDEX_METADATA = "safetensors-index-metadata.json"

# Every key of a [[config]] table with its type.
FIELDS: dict[str, type] = {
    "hub_id": str,
    "files": list,
    "read_from": list,
    "publisher_copy": bool,
    "agreeing_copies": int,
    "note": str,
}
# The files a folder may hold.
KNOWN_FILES = ("config.json", INDEX_METADATA)
# The three ways a copy is cited: a URL, a stored GitHub file at a commit, a file inside a PyPI wheel.
CITATION = re.compile(
    r"https://\S+"
    r"|[A-Za-z0-9][\w.-]*/[\w.-]+@[0-9a-f]{40}:\S+"
    r"|pypi:[A-Za-z0-9][\w.-]*==[\w.+!-]+:\S+"
)
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
# Keys every decoder config here has, at the top level or under text_config.
CORE_KEYS = ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")


def load() -> list[dict]:
    with SOURCES.open("rb") as handle:
        return tomli.load(handle)["config"]


CONFIGS = load()


def folder_of(entry: dict) -> Path:
    return FOLDER / entry["hub_id"].replace("/", "--")


def test_sources_lists_each_folder_once_and_every_folder_is_listed():
    folders = [folder_of(entry).name for entry in CONFIGS]
    assert len(folders) == len(set(folders)), sorted(f for f in folders if folders.count(f) > 1)
    on_disk = sorted(p.name for p in FOLDER.iterdir() if p.is_dir())
    assert sorted(folders) == on_disk


@pytest.mark.parametrize("entry", CONFIGS, ids=lambda e: e["hub_id"])
def test_every_entry_has_the_declared_keys_types_and_citations(entry):
    assert set(entry) == set(FIELDS)
    for key, kind in FIELDS.items():
        value = entry[key]
        assert isinstance(value, kind) and not (kind is int and isinstance(value, bool)), (key, value)
    assert HUB_ID.fullmatch(entry["hub_id"])
    assert entry["read_from"], "at least the copy stored here"
    for citation in entry["read_from"]:
        assert CITATION.fullmatch(citation), citation
    assert 1 <= entry["agreeing_copies"] <= len(entry["read_from"])
    assert entry["note"].strip()


@pytest.mark.parametrize("entry", CONFIGS, ids=lambda e: e["hub_id"])
def test_the_listed_files_are_exactly_the_folder_and_parse(entry):
    folder = folder_of(entry)
    assert "config.json" in entry["files"]
    assert set(entry["files"]) <= set(KNOWN_FILES)
    assert sorted(p.name for p in folder.iterdir()) == sorted(entry["files"])
    for name in entry["files"]:
        text = (folder / name).read_text(encoding="utf-8")
        data = json.loads(text, parse_constant=lambda c: pytest.fail(f"{name}: non-finite {c}"))
        assert isinstance(data, dict) and data, name


@pytest.mark.parametrize("entry", CONFIGS, ids=lambda e: e["hub_id"])
def test_each_config_has_the_core_decoder_keys(entry):
    config = json.loads((folder_of(entry) / "config.json").read_text(encoding="utf-8"))
    text = config.get("text_config", config)
    missing = [key for key in CORE_KEYS if key not in text]
    assert missing == [], missing
    for key in CORE_KEYS[1:]:
        assert isinstance(text[key], int) and text[key] > 0, key


@pytest.mark.parametrize("entry", [e for e in CONFIGS if INDEX_METADATA in e["files"]], ids=lambda e: e["hub_id"])
def test_index_metadata_keeps_only_the_metadata_table_and_the_entry_count(entry):
    data = json.loads((folder_of(entry) / INDEX_METADATA).read_text(encoding="utf-8"))
    assert set(data) == {"metadata", "weight_map_entries"}
    assert isinstance(data["weight_map_entries"], int) and data["weight_map_entries"] > 0
    total = data["metadata"]["total_size"]
    assert isinstance(total, int) and total > 0 and math.isfinite(total)


def test_the_quantized_formats_the_issue_names_are_present():
    """FP8 (DeepSeek-V3), MXFP4 (gpt-oss-20b) and GPTQ configs are among the fixtures."""
    methods = set()
    for entry in CONFIGS:
        config = json.loads((folder_of(entry) / "config.json").read_text(encoding="utf-8"))
        methods.add(config.get("quantization_config", {}).get("quant_method"))
    assert {"fp8", "mxfp4", "gptq"} <= methods


def test_the_citation_pattern_is_not_vacuous():
    for good in (
        "https://huggingface.co/org/name/blob/abc/config.json",
        "owner/repo@" + "a" * 40 + ":path/config.json",
        "pypi:aiconfigurator-core==0.12.0:aiconfigurator_core/model_configs/x.json",
    ):
        assert CITATION.fullmatch(good), good
    for bad in ("owner/repo:path", "owner/repo@abc:path", "pypi:pkg:path", "a copy somewhere"):
        assert not CITATION.fullmatch(bad), bad
