"""The start-up logs of tests/fixtures/startup-logs as `estimate memory --engine` scenarios, and the
figure each log gives to judge the estimate by (issue 42, capacity). Shared by
tests/test_engine_model.py and benchmarks/capacity.py.

A log becomes a scenario from what the log or its thread states: the engine (vLLM V1 or V0,
SGLang), the model's config, the device's total memory as the engine saw it, the parallelism and the
flags that size the pool. The figure to match is the available KV memory the log prints, else the
pool it prints in tokens or blocks times the model's KV bytes per token. A log is left out only for
a reason said here (its model's config is not stored, or it uses a feature the model leaves out) or
in its index entry's `not_judged` (a start-up whose flags its thread does not state).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli

from invmap import estimate as core
from invmap.quantities import QUANTIZATIONS

FIXTURES = Path(__file__).parent / "fixtures"
LOGS = FIXTURES / "startup-logs"
CONFIGS = FIXTURES / "configs"
GIB = 2**30

# A log's model read from another model's config where that model's own is not stored: the
# Instruct models whose architecture keys are their base model's, and Qwen2-7B-Instruct, whose keys
# are Qwen2.5-7B-Instruct's: a stored copy naming it (the Hub page
# https://huggingface.co/PrunaAI/Qwen-Qwen2-7B-Instruct-HQQ-1bit-smashed/blob/88f6108475260118de8275f9914b3b9effeb709b/config.json)
# gives hidden 3584, intermediate 18944, 28 layers, 28 query and 4 KV heads, vocab 152064, untied,
# bfloat16, 32768 positions. Qwen2.5-32B-Instruct differs from its base only in keys that size
# neither the weights nor the KV cache (max_position_embeddings 32768, not 131072; rms_norm_eps,
# max_window_layers, eos_token_id), as a re-save naming it shows
# (https://huggingface.co/ehristoforu/qwen2.5-test-32b-it/blob/6bcc8f1cedfe72471276d0159d1646be6ac50e40/config.json);
# its log sets --max-model-len. Llama 3 8B and 8B Instruct are read from NousResearch's re-upload of
# the Instruct files: copies naming meta-llama/Meta-Llama-3-8B (e.g.
# https://huggingface.co/FriendliAI/Meta-Llama-3-8B-fp8/blob/main/config.json, a re-save) have the same
# shapes, 8192 positions and no rope_scaling. QwQ-32B has Qwen2.5-32B's keys but eos_token_id and an
# unused sliding_window (copies at https://huggingface.co/huihui-ai/QwQ-32B-abliterated/blob/a7d3c5f8fd4f9634956eaeec370f01065572e392/config.json
# and https://huggingface.co/mlx-community/QwQ-32B-bf16/blob/main/config.json), and
# DeepSeek-R1-Distill-Qwen-7B the shapes of Qwen2.5-7B-Instruct with rope_theta 10000 and 131072
# positions (https://huggingface.co/mlfoundations-dev/DeepSeek-R1-Distill-Qwen-7B_OpenThoughts3/blob/main/config.json,
# a fine-tune read from its snapshot); its log states its context length.
SAME_ARCHITECTURE = {
    "meta-llama/Llama-3.1-8B-Instruct": "meta-llama/Meta-Llama-3.1-8B",
    "meta-llama/Meta-Llama-3.1-8B-Instruct": "meta-llama/Meta-Llama-3.1-8B",
    "mistralai/Mixtral-8x7B-Instruct-v0.1": "mistralai/Mixtral-8x7B-v0.1",
    "Qwen/Qwen2-7B-Instruct": "Qwen/Qwen2.5-7B-Instruct",
    "Qwen/Qwen2.5-32B-Instruct": "Qwen/Qwen2.5-32B",
    "meta-llama/Meta-Llama-3-8B-Instruct": "NousResearch/Meta-Llama-3-8B-Instruct",
    "meta-llama/Meta-Llama-3-8B": "NousResearch/Meta-Llama-3-8B-Instruct",
    "Qwen/QwQ-32B": "Qwen/Qwen2.5-32B",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": "Qwen/Qwen2.5-7B-Instruct",
}
# Models of the logs that invmap ships (src/invmap/data/models.toml), by their shipped name.
SHIPPED = {
    "Qwen/Qwen2.5-7B-Instruct": "qwen2.5-7b-instruct",
    "mistralai/Mistral-7B-Instruct-v0.1": "mistral-7b-instruct-v0.1",
}
# The GPU a log names, as invmap's table names it (only GPUs whose reported total is in the table;
# for the others the log must state the total). The H20's total is left out of the table (its
# memory_reported note says why), so "H20" maps to nothing.
GPUS = {
    # The log on "NVIDIA A100 40GB" does not say SXM or PCIe. It is taken as the SXM part (39.56 GiB): the
    # PCIe part's one log prints 39.38 (a100-pcie-40gb's note), 0.18 GiB less, which at the log's
    # utilization of 0.5 moves the pool by 0.09 GiB, a fifth of the 0.5 GiB the target allows.
    "NVIDIA A100 40GB": "a100-sxm-40gb",
    # GCE's a2-highgpu-1g is "1x NVIDIA A100-SXM4-40GB" (a run record on that machine type:
    # https://github.com/OpenAgentsInc/openagents/blob/653550af078577651e61d262e3bf3ac0f5806b0b/docs/sarah/scoreboards/openers-v2-opener-02-welcome-back-r2.md).
    "A100 40GB (GCE a2-highgpu-1g)": "a100-sxm-40gb",
    "NVIDIA A100-SXM4-40GB": "a100-sxm-40gb",  # the part as nvidia-smi and CUDA name it
    # The logs on "NVIDIA A100 80GB" do not say SXM or PCIe: both parts report 79.15 GiB (gpus.toml) and are
    # compute capability 8.0, and vLLM V1 picks its `vllm serve` batch defaults by the device's name (2048
    # tokens and 256 sequences on an A100, whatever its memory), so either entry gives the same start-up.
    "NVIDIA A100 80GB": "a100-sxm-80gb",
    "NVIDIA A100-SXM4-80GB": "a100-sxm-80gb",
    "A100 80GB (by the log's own figures)": "a100-sxm-80gb",  # the index entry's notes say how
    "H100": "h100-sxm",
    "H100 80GB": "h100-sxm",
    "H100-80G": "h100-sxm",
    "H200": "h200",
    "RTX 3090": "rtx-3090",
    "L40S": "l40s",
}
# Settings the engine model leaves out: a log that uses one is not judged.
NOT_MODELLED = {
    "kv_transfer_config": "an LMCache connector",
    "decode_context_parallel_size": "decode context parallelism",
    "data_parallel_size": "data parallelism with expert parallelism",
    "enable_dp_attention": "DP attention",
    "quantization": "a --quantization the weights do not count (only fp8)",
    "load_format": "a dummy or bitsandbytes load format",
}
# The settings a log's own lines name, beside its flags: vLLM's warning when MXFP4 experts run on its
# Marlin kernel (marlin_utils_fp4.py), which pads them, and its lines naming the code that answers the
# profile's top-k/top-p sampling (vllm/v1/sample/ops/topk_topp_sampler.py), which sizes the sampler's peak.
LOG_LINES = {
    "Weight-only FP4 compression will be used leveraging the Marlin kernel": ("mxfp4_backend", "marlin"),
    "Using FlashInfer for top-p & top-k sampling": ("sampler", "flashinfer"),
    "Falling back to the PyTorch-native implementation of top-p & top-k sampling": ("sampler", "pytorch"),
    "Using V2 Model Runner": ("sampler", "greedy"),  # Model Runner V2's greedy profile (gpu_worker.py:363-364)
}
FLAGS = {
    "max_model_len": "tokens_per_request",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "mem_fraction_static": "gpu_memory_utilization",
    "tensor_parallel_size": "tensor_parallel",
    "tp_size": "tensor_parallel",
    "pipeline_parallel_size": "pipeline_parallel",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "max_num_seqs": "max_num_seqs",
    "kv_cache_dtype": "kv_cache_dtype",
    "quantization": "quantization",
}
# Settings of NOT_MODELLED the engine model does model at these values.
MODELLED_VALUES = {"quantization": QUANTIZATIONS}


@dataclass
class Case:
    log: dict[str, Any]
    scenario: core.Scenario | None
    skipped: str = ""

    @property
    def name(self) -> str:
        return self.log["file"]


def logs() -> list[dict[str, Any]]:
    return tomli.loads((LOGS / "index.toml").read_text())["log"]


def _config_folders() -> dict[str, Path]:
    sources = tomli.loads((CONFIGS / "SOURCES.toml").read_text())["config"]
    return {c["hub_id"]: CONFIGS / c["hub_id"].replace("/", "--") for c in sources}


def _memory(log: dict[str, Any]) -> tuple[str | None, str | None]:
    """(--memory, --gpu): the total the log prints (SGLang: the free memory before the weights, the
    total it sizes on), else the table's reported total for the GPU named. With a
    printed total the GPU named is given too where the table has it: its compute capability decides
    vLLM's FlashInfer all-reduce fusion workspace (the total given overrides the table's)."""
    logged = log["logged"]
    if log["engine"] == "sglang" and "avail_before_weights_gib" in logged:
        return f"{logged['avail_before_weights_gib']}GiB", None
    if "total_gpu_memory_gib" in logged:
        return f"{logged['total_gpu_memory_gib']}GiB", GPUS.get(log["gpu"])
    return None, GPUS.get(log["gpu"])


def case(log: dict[str, Any], folders: dict[str, Path]) -> Case:
    if log.get("not_judged"):
        return Case(log, None, log["not_judged"])
    hub = SAME_ARCHITECTURE.get(log["model"], log["model"])
    model = str(folders[hub]) if hub in folders else SHIPPED.get(hub)
    if model is None:
        return Case(log, None, f"no stored config for {log['model']}")
    flags = log["flags"]
    left_out = [w for k, w in NOT_MODELLED.items() if k in flags and flags[k] not in MODELLED_VALUES.get(k, ())]
    if left_out:
        return Case(log, None, f"uses {left_out[0]}")
    if logged_available(log, per_token=1) is None:  # no figure of the pool, whatever its token size
        shown = ", ".join(sorted(log["logged"]))
        return Case(log, None, f"the log gives no KV pool to judge by (it logs {shown})")
    memory, gpu = _memory(log)
    if memory is None and gpu is None:
        return Case(
            log, None, f"the log states no total and invmap's table has no reported total for {log['gpu'] or 'its GPU'}"
        )
    given = {FLAGS[k]: v for k, v in flags.items() if k in FLAGS}
    logged = log["logged"]
    given.setdefault("tokens_per_request", logged.get("tokens_per_request") or logged.get("context_len"))
    if "max_num_batched_tokens" in logged:
        given.setdefault(
            "max_num_batched_tokens", logged["max_num_batched_tokens"]
        )  # the value the log says is in force
    if log["tensor_parallel"] > 1:
        given.setdefault("tensor_parallel", log["tensor_parallel"])
    if log["pipeline_parallel"] > 1:
        given.setdefault("pipeline_parallel", log["pipeline_parallel"])
    if memory is not None:
        given["memory"] = memory
    given.update(named_settings(log))
    if log["engine"] == "vllm" and log.get("v1") and log["engine_version"]:
        given["engine_version"] = log["engine_version"]  # the release decides the sampler where the log names none
    engine = "sglang" if log["engine"] == "sglang" else "vllm" if log.get("v1") else "vllm-v0"
    flags_given = {k: v for k, v in given.items() if v is not None}
    return Case(log, core.Scenario("memory", model=model, gpu=gpu, engine=engine, flags=flags_given))


def named_settings(log: dict[str, Any]) -> dict[str, str]:
    """The settings the log's own lines name (LOG_LINES), else its index entry's `environment` (what its
    thread's install decides where the excerpt prints no such line; its `notes` say how)."""
    text = (LOGS / log["file"]).read_text()
    named = dict(value for line, value in LOG_LINES.items() if line in text)
    return {**log.get("environment", {}), **named}


def cases() -> list[Case]:
    folders = _config_folders()
    return [case(log, folders) for log in logs()]


def logged_available(log: dict[str, Any], per_token: int) -> float | None:
    """The available KV memory (GiB) the log gives: printed, else its pool in tokens or blocks times
    the KV bytes per token (`per_token`, of the GPU's share of the layers)."""
    logged = log["logged"]
    if "available_kv_gib" in logged:
        return float(logged["available_kv_gib"])
    if "k_size_gb" in logged:
        return float(logged["k_size_gb"] + logged["v_size_gb"])
    if "kv_size_gb" in logged:
        return float(logged["kv_size_gb"])
    for key, block in (("kv_tokens", 1), ("max_total_num_tokens", 1), ("gpu_blocks", 16)):
        if key in logged:
            return logged[key] * block * per_token / GIB
    return None


def within(estimated: float, logged: float) -> bool:
    """Issue 42's target: within 5% or 0.5 GiB of the logged figure, whichever is larger."""
    return abs(estimated - logged) <= max(0.05 * abs(logged), 0.5)


@dataclass
class Judged:
    case: Case
    estimated: float | None = None
    logged: float | None = None
    refusal: str = ""

    @property
    def error(self) -> float | None:
        if self.estimated is None or self.logged is None:
            return None
        return (self.estimated - self.logged) / abs(self.logged) if self.logged else None

    @property
    def ok(self) -> bool:
        return self.estimated is not None and self.logged is not None and within(self.estimated, self.logged)


def judge(c: Case) -> Judged:
    if c.scenario is None:
        return Judged(c)
    outcome = core.run(c.scenario)
    if outcome.refusal is not None:
        return Judged(c, refusal=outcome.refusal.message)
    results = outcome.estimate.results
    return Judged(c, results["kv_available_bytes"] / GIB, logged_available(c.log, results["kv_bytes_per_token"]))
