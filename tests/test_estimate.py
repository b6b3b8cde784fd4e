"""Estimates (`invmap estimate kv|memory|roofline`, `models`, `gpus`) and their experiment records.

The field guide's documented `ie` examples are reproduced number for number (its chapters 07 and 08
and docs/reference/generated-results.md), the PagedAttention paper's 800 KB of KV per token for
OPT-13B, and the KV bytes per token of every shipped model, worked out here by hand from its config.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import LLAMA_LIKE, installed_invmap
from invmap import estimate as core
from invmap import options as decl
from invmap.cli import shortcuts


def run_json(cli, *args: str) -> dict:
    result = cli(*args, "--json")
    assert result.code == 0 and result.err == "", (args, result.err)
    return json.loads(result.out)


# --- the field guide's documented examples ---------------------------------------------------------


def test_kv_defaults_are_ie_memory_kv_numbers(cli):
    """ie memory kv: 98,304 bytes per token, 201,326,592 per sequence, 1,610,612,736 for eight 2,048-token
    sequences, group size 4 (the kv-memory-estimate-v1 record), labelled estimated, and said to be made up."""
    out = run_json(cli, "estimate", "kv")
    assert out["evidence"] == "estimated" and out["estimate"] == "kv"
    assert out["results"] == {
        "bytes_per_token": 98304,
        "bytes_per_sequence": 201326592,
        "total_bytes": 1610612736,
        "kv_group_size": 4,
    }
    assert out["human"]["bytes_per_token"] == "96.00 KiB"
    assert out["human"]["bytes_per_sequence"] == "192.00 MiB"
    assert out["human"]["total_bytes"] == "1.50 GiB"
    assert out["configuration"] == {
        "layers": 24,
        "attention_heads": 32,
        "tensor_parallel": 1,
        "kv_heads": 8,
        "head_dim": 128,
        "element_bytes": 2,
        "tokens": 2048,
        "concurrency": 8,
    }
    assert out["defaults_used"] is True and "made-up model" in out["notes"][0]
    assert (
        out["formulas"][0] == "bytes_per_token = L x H_kv x d_h x 2 x b_e = 24 x 8 x 128 x 2 x 2 = 98,304 B (96.00 KiB)"
    )


def test_memory_defaults_are_ie_memory_model_numbers(cli):
    """ie memory model: 2,000,000,000 bytes of weights, 33,554,432 of activations, 2,033,554,432 in all."""
    out = run_json(cli, "estimate", "memory")
    assert out["results"] == {"weights_bytes": 2000000000, "activation_bytes": 33554432, "total_bytes": 2033554432}
    assert out["fits"] is None and out["defaults_used"] is True


@pytest.mark.parametrize(
    ("args", "intensity", "ceiling", "upper", "limiting"),
    [
        ([], 5.0, 5e12, 2e12, "compute"),  # the prefill-shaped fixture (chapter 07)
        (["--scenario", "decode"], 0.4, 4e11, 4e11, "memory_bandwidth"),
        (["--bytes-moved", "400000000"], 2.5, 2.5e12, 2e12, "compute"),  # the exercise: double the bytes
    ],
)
def test_roofline_reproduces_ie_roofline(cli, args, intensity, ceiling, upper, limiting):
    out = run_json(cli, "estimate", "roofline", *args)
    r = out["results"]
    assert r["arithmetic_intensity_operations_per_byte"] == intensity
    assert r["bandwidth_ceiling_operations_per_second"] == ceiling
    assert r["upper_bound_operations_per_second"] == upper
    assert r["compute_ceiling_operations_per_second"] == 2e12
    assert r["ridge_point_operations_per_byte"] == 2.0
    assert out["limiting_resource"] == limiting


def test_explicit_options_reproduce_ie_with_other_numbers(cli):
    out = run_json(
        cli,
        "estimate",
        "kv",
        "--layers",
        "32",
        "--attention-heads",
        "32",
        "--kv-heads",
        "32",
        "--head-dim",
        "128",
        "--tokens",
        "4096",
        "--concurrency",
        "2",
        "--element-bytes",
        "1",
    )
    assert out["results"]["bytes_per_token"] == 32 * 32 * 128 * 2 * 1
    assert out["results"]["total_bytes"] == 32 * 32 * 128 * 2 * 4096 * 2
    assert all(i["from"] == "option" for i in out["inputs"] if i["name"] != "tensor_parallel")


# --- models ---------------------------------------------------------------------------------------

# Bytes of KV per token, by hand from each config: layers x kv_heads x head_dim x 2 (K and V) x bytes;
# latent attention: layers x (kv_lora_rank + qk_rope_head_dim) x bytes.
BY_HAND = {
    "llama-3.1-8b": 32 * 8 * (4096 // 32) * 2 * 2,
    "llama-3-70b-instruct": 80 * 8 * (8192 // 64) * 2 * 2,
    "qwen2.5-7b-instruct": 28 * 4 * (3584 // 28) * 2 * 2,
    "qwen3-8b": 36 * 8 * 128 * 2 * 2,
    "mistral-7b-instruct-v0.1": 32 * 8 * (4096 // 32) * 2 * 2,
    "mixtral-8x7b-instruct-v0.1": 32 * 8 * (4096 // 32) * 2 * 2,
    "gpt-oss-20b": 24 * 8 * 64 * 2 * 2,
    "deepseek-v3": 61 * (512 + 64) * 2,
    "gemma-3-270m": 18 * 1 * 256 * 2 * 2,
    "opt-13b": 40 * 40 * (5120 // 40) * 2 * 2,
}


def test_every_shipped_model_has_its_kv_bytes_worked_out_by_hand():
    assert set(BY_HAND) == set(core.model_names())


@pytest.mark.parametrize("name", core.model_names())
def test_kv_bytes_per_token_of_each_shipped_model(cli, name):
    out = run_json(cli, "estimate", "kv", "--model", name)
    assert out["results"]["bytes_per_token"] == BY_HAND[name]
    assert out["model"]["name"] == name
    assert out["model"]["read_from"] and all(u.startswith("https://") for u in out["model"]["read_from"])


STORED_CONFIGS = Path(__file__).parent / "fixtures" / "configs"
SHIPPED_WITH_A_STORED_CONFIG = [
    m["name"]
    for m in core.model_table()
    if m.get("hub_id") and (STORED_CONFIGS / m["hub_id"].replace("/", "--")).is_dir()
]


@pytest.mark.parametrize("name", SHIPPED_WITH_A_STORED_CONFIG)
def test_a_shipped_model_counts_what_its_stored_config_counts(cli, name):
    """A shipped name whose config is also stored byte for byte (tests/fixtures/configs) gives the same
    weights and KV bytes as that file: the shipped keys may be fewer, never different in effect (its
    quantization_config included: gpt-oss-20b's MXFP4 experts, DeepSeek-V3's FP8 blocks)."""
    hub_id = next(m["hub_id"] for m in core.model_table() if m["name"] == name)
    folder = STORED_CONFIGS / hub_id.replace("/", "--")
    flags = ("estimate", "memory", "--engine", "vllm", "--memory", "1000GiB")
    shipped = run_json(cli, *flags, "--model", name)["results"]
    stored = run_json(cli, *flags, "--model", str(folder))["results"]
    for key in ("weights_bytes", "kv_bytes_per_token"):
        assert shipped[key] == stored[key], (name, key)


def test_opt_13b_has_the_pagedattention_papers_800_kb_per_token(cli):
    """PagedAttention: 2 (key and value) x 5120 (hidden) x 40 (layers) x 2 bytes = 800 KB per token."""
    out = run_json(cli, "estimate", "kv", "--model", "opt-13b")
    assert out["results"]["bytes_per_token"] == 2 * 5120 * 40 * 2 == 819200
    assert out["human"]["bytes_per_token"] == "800.00 KiB"


def test_sliding_window_layers_bound_a_long_sequence(cli):
    """gpt-oss-20b: 12 of its 24 layers keep at most 128 tokens; Mistral 7B v0.1 keeps 4,096 on every layer."""
    out = run_json(cli, "estimate", "kv", "--model", "gpt-oss-20b", "--tokens", "8192", "--concurrency", "1")
    layer_token = 8 * 64 * 2 * 2
    assert out["results"]["bytes_per_sequence"] == (12 * 8192 + 12 * 128) * layer_token
    assert out["results"]["bytes_per_token"] == 24 * layer_token
    assert any("hybrid KV cache manager" in n for n in out["notes"])
    mistral = run_json(cli, "estimate", "kv", "--model", "mistral-7b-instruct-v0.1", "--tokens", "8192")
    assert mistral["results"]["bytes_per_sequence"] == 32 * 4096 * (8 * 128 * 2 * 2)
    short = run_json(cli, "estimate", "kv", "--model", "mistral-7b-instruct-v0.1", "--tokens", "100")
    assert short["results"]["bytes_per_sequence"] == 100 * short["results"]["bytes_per_token"]


@pytest.mark.parametrize(
    ("model", "tp", "per_gpu"),
    [
        ("llama-3.1-8b", "2", 32 * 4 * 128 * 2 * 2),  # 8 KV heads split over 2 GPUs
        ("llama-3.1-8b", "8", 32 * 1 * 128 * 2 * 2),
        ("llama-3.1-8b", "16", 32 * 1 * 128 * 2 * 2),  # fewer KV heads than GPUs: replicated
        ("deepseek-v3", "8", 61 * (512 + 64) * 2),  # a latent cache is not split
    ],
)
def test_tensor_parallel_gives_per_gpu_figures(cli, model, tp, per_gpu):
    out = run_json(cli, "estimate", "kv", "--model", model, "--tensor-parallel", tp, "--tokens", "1000")
    assert out["results"]["bytes_per_token_per_gpu"] == per_gpu
    assert out["results"]["bytes_per_sequence_per_gpu"] == per_gpu * 1000


def test_kv_heads_that_do_not_divide_among_the_gpus_are_refused(cli):
    result = cli("estimate", "kv", "--model", "llama-3.1-8b", "--tensor-parallel", "3")
    assert (result.code, result.out) == (2, "")
    assert result.err == "Error: 8 KV heads do not divide among --tensor-parallel 3 GPUs\n"


@pytest.mark.parametrize(
    ("dtype", "element"),
    [("auto", 2), ("fp8", 1), ("fp8_e4m3", 1), ("fp8_e5m2", 1), ("bfloat16", 2), ("bf16", 2), ("fp16", 2)],
)
def test_kv_cache_dtype_takes_vllms_values(cli, dtype, element):
    out = run_json(cli, "estimate", "kv", "--model", "llama-3.1-8b", "--kv-cache-dtype", dtype)
    assert out["results"]["bytes_per_token"] == 32 * 8 * 128 * 2 * element
    assert out["configuration"]["kv_cache_dtype"] == dtype


def test_kv_cache_dtype_mistakes(cli):
    bad = cli("estimate", "kv", "--kv-cache-dtype", "int3")
    assert bad.code == 2 and bad.err.startswith("Error: --kv-cache-dtype takes one of auto, bfloat16,")
    auto = cli("estimate", "kv", "--kv-cache-dtype", "auto")
    assert auto.code == 2 and "--kv-cache-dtype auto needs a --model" in auto.err
    # --element-bytes is explicit and wins over the dtype
    out = run_json(cli, "estimate", "kv", "--model", "opt-13b", "--kv-cache-dtype", "fp8", "--element-bytes", "4")
    assert out["results"]["bytes_per_token"] == 40 * 40 * 128 * 2 * 4


def test_latent_attention_refuses_heads_options(cli):
    result = cli("estimate", "kv", "--model", "deepseek-v3", "--kv-heads", "8")
    assert result.code == 2
    assert "--kv-heads does not apply to DeepSeek-V3: its latent attention caches kv_lora_rank" in result.err


def write_config(folder, **config) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(folder)


LLAMA = {**LLAMA_LIKE, "tie_word_embeddings": False}


def test_a_config_on_disk_folder_or_file(cli, tmp_path):
    folder = write_config(tmp_path / "llama", **LLAMA)
    for ref in (folder, f"{folder}/config.json"):
        out = run_json(cli, "estimate", "kv", "--model", ref)
        assert out["results"]["bytes_per_token"] == 131072
        assert out["model"]["read_from"] == [f"{folder}/config.json"]


def test_a_multimodal_configs_text_config_is_read(cli, tmp_path):
    text = {k: v for k, v in LLAMA.items() if k != "torch_dtype"}
    folder = write_config(tmp_path / "mm", model_type="llava", torch_dtype="float32", text_config=text)
    out = run_json(cli, "estimate", "kv", "--model", folder)
    assert out["results"]["bytes_per_token"] == 32 * 8 * 128 * 2 * 4  # the top level's float32


def test_gemma3_pattern_without_layer_types(cli, tmp_path):
    folder = write_config(
        tmp_path / "g",
        model_type="gemma3_text",
        num_hidden_layers=12,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=256,
        sliding_window=512,
        sliding_window_pattern=6,
        torch_dtype="bfloat16",
    )
    out = run_json(cli, "estimate", "kv", "--model", folder, "--tokens", "4096", "--concurrency", "1")
    assert out["results"]["bytes_per_sequence"] == (2 * 4096 + 10 * 512) * 256 * 2 * 2


def test_safetensors_index_beside_the_config_gives_the_weights(cli, tmp_path):
    folder = write_config(tmp_path / "st", **LLAMA)
    (tmp_path / "st" / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 16060522496}, "weight_map": {}}), encoding="utf-8"
    )
    out = run_json(cli, "estimate", "memory", "--model", folder)
    assert out["results"]["weights_bytes"] == 16060522496
    assert {"name": "weights_bytes", "value": 16060522496, "unit": "bytes", "from": "model.safetensors.index.json"} in (
        out["inputs"]
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"model_type": "llama", "num_attention_heads": 32}, "has no 'num_hidden_layers', which the estimate needs"),
        ({"model_type": "llama", "num_hidden_layers": 32}, "has no 'num_attention_heads', which the estimate needs"),
        (
            {"model_type": "deepseek_v3", "num_hidden_layers": 61, "num_attention_heads": 128, "kv_lora_rank": 512},
            "has no 'qk_rope_head_dim', which the estimate needs",
        ),
        (
            {"model_type": "gpt_oss", "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 64},
            "has no 'layer_types', which the estimate needs",
        ),
        (
            {"model_type": "llama", "num_hidden_layers": "32", "num_attention_heads": 32},
            "'num_hidden_layers' must be a positive integer, not \"32\"",
        ),
    ],
)
def test_a_config_missing_a_needed_key_is_exit_3_naming_key_and_file(cli, tmp_path, config, message):
    folder = write_config(tmp_path / "m", **config)
    result = cli("estimate", "kv", "--model", folder)
    assert (result.code, result.out) == (3, "")
    assert result.err == f"Error: {folder}/config.json: {message}\n"


def test_an_unsupported_model_type_is_exit_3_listing_the_supported_ones(cli, tmp_path):
    folder = write_config(tmp_path / "m", model_type="mamba", num_hidden_layers=4)
    result = cli("estimate", "kv", "--model", folder)
    assert result.code == 3
    assert result.err == (
        f"Error: {folder}/config.json: model_type 'mamba' is not supported (supported: "
        f"{', '.join(core.SUPPORTED_TYPES)})\n"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "invalid JSON: Expecting property name enclosed in double quotes (line 1, column 2)"),
        ("[1, 2]", "must be a JSON object (a model's config.json)"),
        ('{"num_hidden_layers": NaN}', "invalid JSON: NaN is not a JSON number"),
    ],
)
def test_a_broken_config_is_exit_3(cli, tmp_path, content, message):
    path = tmp_path / "config.json"
    path.write_text(content, encoding="utf-8")
    result = cli("estimate", "kv", "--model", str(path))
    assert (result.code, result.err) == (3, f"Error: {path}: {message}\n")


def test_a_folder_without_config_and_an_unknown_name(cli, tmp_path):
    result = cli("estimate", "kv", "--model", str(tmp_path))
    assert (result.code, result.err) == (3, f"Error: {tmp_path}: no config.json in this folder\n")
    unknown = cli("estimate", "kv", "--model", "llama-3.1-8")
    assert unknown.code == 2
    assert unknown.err.startswith("Error: unknown model 'llama-3.1-8'; did you mean 'llama-3.1-8b'? (shipped models")
    gpu = cli("estimate", "memory", "--gpu", "h1000")
    assert gpu.code == 2 and gpu.err.startswith("Error: unknown GPU 'h1000'")


def test_parameters_counted_from_the_config():
    """Llama 3.1 8B's published count, 8,030,261,248; Mixtral 8x7B's ~46.7B in all, ~12.9B active."""
    by_name = {m.name: m for m in core.models()}
    assert core.parameters_of(by_name["llama-3.1-8b"]) == (8030261248, 8030261248)
    total, active = core.parameters_of(by_name["mixtral-8x7b-instruct-v0.1"])
    assert 46.6e9 < total < 46.8e9 and 12.8e9 < active < 13.0e9
    assert core.parameters_of(by_name["deepseek-v3"]) is None


# --- memory on a GPU ------------------------------------------------------------------------------


def test_memory_on_a_gpu_gives_the_kv_pool_and_concurrency(cli):
    out = run_json(
        cli, "estimate", "memory", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tokens-per-request", "8192"
    )
    r = out["results"]
    reported = round(79.22 * 2**30)  # the H100's total as CUDA reports it (vLLM's log), not the datasheet's 80 GB
    assert r["memory_bytes"] == reported and r["budget_bytes"] == int(reported * 0.9)
    left = int(reported * 0.9) - 8030261248 * 2 - 4 * 512 * 4096 * 2 * 2
    assert r["kv_available_bytes"] == left
    assert r["kv_pool_tokens"] == left // 131072
    assert r["max_concurrency"] == round(left / (131072 * 8192), 2)
    assert out["fits"] is True
    assert any("GPU KV cache size: N tokens" in f for f in out["formulas"])
    assert {
        "name": "memory",
        "value": reported,
        "unit": "bytes",
        "from": "gpu (79.22 GiB as the device reports it)",
    } in (out["inputs"])
    assert any(a.startswith("memory is the total H100 SXM reports to CUDA (79.22 GiB") for a in out["assumptions"])
    blocks = run_json(cli, "estimate", "memory", "--model", "llama-3.1-8b", "--memory", "80GB", "--block-size", "7")
    datasheet = 72 * 10**9 - 8030261248 * 2 - 4 * 512 * 4096 * 2 * 2
    assert blocks["results"]["kv_pool_tokens"] == datasheet // 131072 // 7 * 7


def test_a_model_that_does_not_fit_is_exit_0_with_the_sentence(cli):
    out = run_json(cli, "estimate", "memory", "--model", "llama-3-70b-instruct", "--gpu", "h100-sxm")
    assert out["fits"] is False
    assert out["verdict"] == "weights alone need 131.42 GiB; H100 SXM has 79.22 GiB (the total it reports)"
    plain = cli("estimate", "memory", "--model", "llama-3-70b-instruct", "--gpu", "h100-sxm")
    assert plain.code == 0
    assert [line.split(None, 1) for line in plain.out.splitlines() if line.startswith("  fits ")] == [
        ["fits", "no: weights alone need 131.42 GiB; H100 SXM has 79.22 GiB (the total it reports)"]
    ]
    datasheet = run_json(cli, "estimate", "memory", "--model", "llama-3-70b-instruct", "--gpu", "h100-nvl")
    assert datasheet["verdict"] == "weights alone need 131.42 GiB; H100 NVL has 94 GB"


def test_memory_sizes_and_a_gpu_without_a_confirmed_figure(cli):
    gib = run_json(cli, "estimate", "memory", "--memory", "80GiB")
    assert gib["results"]["memory_bytes"] == 80 * 2**30
    missing = cli("estimate", "memory", "--gpu", "a10g")
    assert missing.code == 2
    assert missing.err == (
        "Error: invmap's table has no memory figure for A10G (no source it accepts gives one): give --memory (for "
        "example 24GB, or the total nvidia-smi shows, 24564MiB)\n"
    )
    smi = run_json(cli, "estimate", "memory", "--memory", "24564MiB")
    assert smi["results"]["memory_bytes"] == 24564 * 2**20
    counted = run_json(
        cli, "estimate", "memory", "--model", "deepseek-v3", "--memory", "141GB"
    )  # any config is counted
    assert (
        counted["configuration"]["parameters"] == 671_026_404_352
    )  # DeepSeek-V3's 671B, MLA and experts by their keys
    alone = cli("estimate", "memory", "--gpu-memory-utilization", "0.8")
    assert (alone.code, alone.err) == (
        2,
        "Error: --gpu-memory-utilization needs a device: give --gpu or --memory (the KV pool is sized on it)\n",
    )


# --- roofline from a model ------------------------------------------------------------------------


def test_decode_roofline_of_a_model(cli):
    out = run_json(
        cli,
        "estimate",
        "roofline",
        "--scenario",
        "decode",
        "--model",
        "llama-3.1-8b",
        "--batch-size",
        "8",
        "--context-tokens",
        "2048",
        "--peak",
        "989e12",
        "--bandwidth",
        "3.35e12",
    )
    params = 8030261248
    ops = 8 * (2 * params + 2 * 32 * (128 + 128) * 32 * 2048)
    moved = params * 2 + 8 * 32 * 8 * 128 * 2 * 2 * 2048
    r = out["results"]
    assert r["arithmetic_intensity_operations_per_byte"] == pytest.approx(ops / moved)
    assert out["limiting_resource"] == "memory_bandwidth"
    assert r["tokens_per_second_upper_bound"] == pytest.approx(3.35e12 * ops / moved / (ops / 8))
    assert out["defaults_used"] is False


def test_prefill_roofline_counts_causal_attention(cli):
    out = run_json(
        cli,
        "estimate",
        "roofline",
        "--model",
        "opt-13b",
        "--prompt-tokens",
        "1000",
        "--peak",
        "1e15",
        "--bandwidth",
        "2e12",
    )
    params = core.parameters_of(core.load_model("opt-13b"))[0]
    ops = 2 * params * 1000 + 2 * 40 * (128 + 128) * 40 * (1000 * 1001 // 2)
    assert out["configuration"]["operations"] == ops
    assert out["limiting_resource"] == "compute"


def test_roofline_needs_figures_from_the_table_or_options(cli):
    result = cli("estimate", "roofline", "--gpu", "gh200")
    assert result.code == 2
    assert result.err == (
        "Error: invmap's table has no dense BF16 peak for GH200 96GB (no source it accepts gives one): give "
        "--peak-operations-per-second\n"
    )
    given = run_json(cli, "estimate", "roofline", "--gpu", "gh200", "--peak", "989e12", "--bandwidth", "4e12")
    assert given["results"]["ridge_point_operations_per_byte"] == pytest.approx(989e12 / 4e12)
    lonely = cli("estimate", "roofline", "--context-tokens", "10")
    assert lonely.code == 2 and "--context-tokens needs a --model" in lonely.err


# --- bad input ------------------------------------------------------------------------------------

ESTIMATES = [c for c in decl.COMMANDS if c.parent == "estimate"]


def numeric_options():
    for command in ESTIMATES:
        for o in decl.options_of(command):
            if o.kind in ("int", "float"):
                yield command, o


@pytest.mark.parametrize(("command", "option"), list(numeric_options()), ids=lambda x: getattr(x, "dest", ""))
@pytest.mark.parametrize("value", ["0", "-3"])
def test_zero_and_negative_sizes_are_usage_errors_naming_the_option(cli, command, option, value):
    result = cli(*command.path.split(), option.flags[0], value)
    assert (result.code, result.out) == (2, ""), result.err
    assert option.flags[0] in result.err and "Traceback" not in result.err


def other_spellings():
    for command, o in numeric_options():
        for flag in (*o.flags[1:], *o.old_flags):
            yield command, o, flag


@pytest.mark.parametrize(("command", "option", "flag"), list(other_spellings()), ids=lambda x: getattr(x, "dest", x))
def test_a_refusal_names_the_option_as_it_was_typed(cli, command, option, flag):
    # `--max-model-len 0` is refused as --max-model-len, not as invmap's --tokens-per-request.
    result = cli(
        *command.path.split(), f"{flag}=0" if flag.startswith("--") else flag, *([] if "--" in flag else ["0"])
    )
    assert (result.code, result.out) == (2, ""), result.err
    assert result.err.startswith(f"Error: {flag} "), result.err
    assert re.search(rf"(?<![\w-]){re.escape(option.flags[0])}(?![\w-])", result.err) is None, result.err


def test_the_installed_program_names_the_spelling_typed(sh):
    done = sh(
        "estimate", "memory", "--engine", "sglang", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tp-size", "0"
    )
    assert (done.code, done.out, done.err) == (2, "", "Error: --tp-size must be a positive integer, not 0\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["estimate", "memory", "--parameters", str(10**14 + 1)], "--parameters must be at most 100,000,000,000,000"),
        (["estimate", "kv", "--layers", "10001"], "--layers must be at most 10,000, not 10,001"),
        (["estimate", "kv", "--tokens", str(10**9 + 1)], "--tokens must be at most 1,000,000,000"),
        (["estimate", "kv", "--tokens", "1e30"], "--tokens must be at most 1,000,000,000, not about 1.0e+30"),
        (["estimate", "memory", "--max-model-len", "1.5"], "--max-model-len must be a positive integer, not 1.5"),
        (
            ["estimate", "memory", "--memory", "80GB", "--gpu-memory-utilization", "1.5"],
            "must be a fraction in (0, 1], not 1.5",
        ),
        (["estimate", "memory", "--memory", "lots"], "--memory takes a size such as 80GB, 80GiB or 85899345920"),
        (["estimate", "memory", "--memory", "2000TB"], "--memory must be at most"),
        (["estimate", "roofline", "--operations", "nan"], "--operations must be a positive finite number, not nan"),
        (["estimate", "roofline", "--scenario", "train"], "--scenario takes one of prefill, decode, not 'train'"),
        (["estimate", "kv", "--kv-heads", "64"], "--kv-heads (64) cannot exceed --attention-heads (32)"),
        (["estimate", "kv", "--kv-heads", "5"], "--attention-heads (32) must be divisible by --kv-heads (5)"),
    ],
)
def test_sizes_beyond_bounds_are_usage_errors(cli, args, message):
    result = cli(*args)
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith("Error: ") and message in result.err


# --- records --------------------------------------------------------------------------------------


def test_record_writes_an_estimated_record_that_record_check_accepts(cli, sh, tmp_path):
    target = tmp_path / "experiments" / "kv.json"
    target.parent.mkdir()
    result = cli("estimate", "kv", "--model", "opt-13b", "--record", "pagedattention", "-o", str(target), "--json")
    assert result.code == 0 and json.loads(result.out)["results"]["bytes_per_token"] == 819200
    assert result.err.startswith(f"Wrote {target}: an estimated record addressing pagedattention")
    record = json.loads(target.read_text(encoding="utf-8"))
    assert record["schema_version"] == "1.0" and record["result_type"] == "estimated"
    assert record["raw_measurements"][0] == {
        "name": "bytes_per_token",
        "value": 819200,
        "unit": "bytes",
        "evidence": "estimated",
    }
    assert all(v["evidence"] == "estimated" for v in record["raw_measurements"] + record["derived_metrics"])
    assert record["sources"][0] == "https://arxiv.org/abs/2309.06180"
    assert record["conclusion"].startswith(
        "The estimate gives 800.00 KiB of KV per token and 12.50 GiB for 8 sequences"
    )
    assert "excludes block (page) rounding" in record["conclusion"]
    assert record["artifacts"]["source_id"] == "pagedattention"
    checked = sh("record", "check", str(target), "--json")
    assert checked.code == 0 and json.loads(checked.out) == [{"path": str(target), "valid": True, "problems": []}]


@pytest.mark.parametrize("kind", ["kv", "memory", "roofline"])
def test_every_estimate_writes_a_valid_record(cli, tmp_path, kind):
    target = tmp_path / f"{kind}.json"
    assert cli("estimate", kind, "--record", "roofline", "-o", str(target)).code == 0
    from invmap.records import check_file

    assert check_file(str(target))[1] == []


def test_record_option_mistakes(cli, tmp_path):
    alone = cli("estimate", "kv", "--record", "pagedattention")
    assert (alone.code, alone.err) == (2, "Error: --record SOURCE needs -o FILE: where to write the record\n")
    orphan = cli("estimate", "kv", "-o", str(tmp_path / "x.json"))
    assert orphan.code == 2 and "go with --record SOURCE" in orphan.err
    target = tmp_path / "kv.json"
    target.write_text("{}", encoding="utf-8")
    exists = cli("estimate", "kv", "--record", "pagedattention", "-o", str(target))
    assert exists.code == 2 and target.read_text(encoding="utf-8") == "{}"
    assert cli("estimate", "kv", "--record", "pagedattention", "-o", str(target), "--force").code == 0
    nobody = cli("estimate", "kv", "--record", "no-such-source-at-all", "-o", str(tmp_path / "y.json"))
    assert nobody.code == 1 and not (tmp_path / "y.json").exists()


def measured_record(url: str) -> dict:
    return {
        "schema_version": "1.0",
        "record_id": "paged-measured",
        "title": "KV capacity measured",
        "hypothesis": "Paging keeps the pool full.",
        "result_type": "measured",
        "workload": {},
        "environment": {"hardware": "one GPU"},
        "configuration": {},
        "raw_measurements": [{"name": "tokens", "value": 1, "unit": "tokens", "evidence": "measured"}],
        "derived_metrics": [{"name": "tokens", "value": 1, "unit": "tokens", "evidence": "measured"}],
        "conclusion": "Measured.",
        "limitations": ["One run."],
        "artifacts": {},
        "sources": [url],
    }


def test_questions_mark_an_estimate_and_keep_the_question_open_until_measured(cli, tmp_path):
    folder = tmp_path / "experiments"
    folder.mkdir()
    assert cli("estimate", "kv", "--record", "pagedattention", "-o", str(folder / "kv.json")).code == 0
    rid = json.loads((folder / "kv.json").read_text(encoding="utf-8"))["record_id"]
    rows = {r["id"]: r for r in run_json(cli, "questions", "--records", str(folder))}
    assert rows["pagedattention"]["records"] == [rid]
    assert rows["pagedattention"]["estimated_records"] == [rid]
    plain = cli("questions", "--records", str(folder), "--layer", "L3", "--format", "plain").out.splitlines()
    assert plain[0].endswith(f"\t{rid} (estimate)")
    still_open = [r["id"] for r in run_json(cli, "questions", "--records", str(folder), "--open")]
    assert "pagedattention" in still_open
    (folder / "measured.json").write_text(
        json.dumps(measured_record("https://arxiv.org/abs/2309.06180")), encoding="utf-8"
    )
    closed = [r["id"] for r in run_json(cli, "questions", "--records", str(folder), "--open")]
    assert "pagedattention" not in closed and len(closed) == len(still_open) - 1


# --- listings, completion, manners -----------------------------------------------------------------


def test_models_and_gpus_list_the_tables_with_where_each_was_read(cli):
    models = run_json(cli, "models")
    assert [m["name"] for m in models] == list(core.model_names())
    assert all(m["read_from"] and m["kv_bytes_per_token"] == BY_HAND[m["name"]] for m in models)
    gpus = run_json(cli, "gpus")
    assert [g["name"] for g in gpus] == list(core.gpu_names())  # the figures' own rules: tests/test_gpus.py


def test_completion_offers_model_and_gpu_names():
    from test_completion import complete, warm

    warm()
    code, out, _ = complete("bash", "invmap estimate kv --model ll")
    assert code == 0 and out.split() == [n for n in core.model_names() if n.startswith("ll")]
    code, out, _ = complete("bash", "invmap estimate memory --gpu h1")
    assert out.split() == [n for n in core.gpu_names() if n.startswith("h1")]
    code, out, _ = complete("bash", "invmap estimate kv --kv-cache-dtype fp8")
    assert out.split() == ["fp8", "fp8_e4m3", "fp8_e5m2"]


def test_the_core_imports_no_cli():
    """estimate.py is core: importing it loads no typer, click or invmap.cli."""
    probe = "import sys, invmap.estimate; print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click') or m.startswith('invmap.cli')))"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "[]\n"


@pytest.mark.skipif(not shortcuts.ENABLED, reason="the Typer shortcuts are off: Typer itself imports pydantic")
def test_an_estimate_imports_no_heavy_module():
    """A run imports neither pydantic, rich, httpx nor rapidfuzz (start-up is measured)."""
    program = installed_invmap()
    for args in (
        ["estimate", "kv", "--model", "llama-3.1-8b"],
        ["estimate", "memory", "--gpu", "h100-sxm"],
        ["estimate", "roofline"],
    ):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", program, *args, "--json"], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        imported = {
            line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
        }
        assert "invmap.estimate" in imported
        assert not {m for m in imported if m.split(".")[0] in ("pydantic", "rich", "httpx", "rapidfuzz")}, args


def test_in_a_pipe_the_estimate_is_text_with_its_label_formulas_and_limitations(sh):
    done = sh("estimate", "kv", "--model", "opt-13b")
    assert done.code == 0 and done.err == "" and "\x1b[" not in done.out
    assert done.out.startswith(
        "KV cache estimate (estimated)\nmodel: OPT-13B (opt), shipped config of facebook/opt-13b (source: invmap models)"
    )
    assert "bytes_per_token = L x H_kv x d_h x 2 x b_e = 40 x 40 x 128 x 2 x 2 = 819,200 B (800.00 KiB)" in done.out
    assert "leaves out:\n  - It excludes block (page) rounding" in done.out


def test_docs_recreate_estimates_and_gpus_run_as_written(tmp_path):
    """Each `sh` block of docs/estimates.md ("Recreate: estimates") and docs/gpus.md, line by line as a user types it; every line
    of the `text` block right after it is a line of what those commands printed."""
    import os
    import re
    from pathlib import Path

    from conftest import REPO

    pages = [(REPO / "docs" / name).read_text(encoding="utf-8") for name in ("estimates.md", "gpus.md")]
    blocks = [b for page in pages for b in re.findall(r"```(sh|text)\n(.*?)```(\s*)", page, re.S)]
    env = {**os.environ, "PATH": f"{Path(installed_invmap()).parent}:{os.environ['PATH']}"}
    checked = 0
    for n, (lang, body, _) in enumerate(blocks):
        if lang != "sh":
            continue
        printed: list[str] = []
        for line in (line for line in body.splitlines() if line.strip()):
            done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=tmp_path, env=env)
            assert done.returncode == 0, (line, done.stderr)
            printed += done.stdout.splitlines()
        expected = blocks[n + 1]
        assert expected[0] == "text", body
        for wanted in expected[1].splitlines():
            assert wanted in printed, (body, wanted)
            checked += 1
    assert checked >= 10


def test_a_hostile_folder_name_is_shown_not_interpreted(cli, tmp_path):
    folder = write_config(tmp_path / "evil\x1b]0;pwned\x07", **LLAMA)
    table = cli("estimate", "kv", "--model", folder, "--format", "table")
    assert table.code == 0 and "\x1b]0;" not in table.out and "\\x1b]0;pwned\\x07" in table.out
    for fmt in ("plain", "json"):
        out = cli("estimate", "kv", "--model", folder, "--format", fmt).out
        assert "\x1b" not in out and "\x07" not in out


def test_an_unreadable_config_is_exit_4(cli, tmp_path):
    import os

    folder = write_config(tmp_path / "locked", **LLAMA)
    (tmp_path / "locked" / "config.json").chmod(0)
    try:
        if os.access(tmp_path / "locked" / "config.json", os.R_OK):
            pytest.skip("running as a user who reads any file (root)")
        result = cli("estimate", "kv", "--model", folder)
        assert result.code == 4 and result.err.startswith(f"Error: cannot read {folder}/config.json: ")
    finally:
        (tmp_path / "locked" / "config.json").chmod(0o644)
