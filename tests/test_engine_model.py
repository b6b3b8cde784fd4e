"""`estimate memory --engine` against real start-up logs, and the engine's manners (issue 42, capacity).

Every log of tests/fixtures/startup-logs is run as the scenario its log and thread state
(tests/startup_cases.py); the available KV memory must be within 5% or 0.5 GiB of what the engine
logged. The floors below are what the model reaches on the logs it can judge; raise them, never
lower them. benchmarks/capacity.py prints every log's error and the median and p90.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import startup_cases

from invmap.estimate import engine as engine_model
from invmap.estimate import sampling
from invmap.quantities import ENGINES, INPUTS, SAMPLERS

CASES = startup_cases.cases()
JUDGED = {j.case.name: j for j in map(startup_cases.judge, CASES)}
CONFIGS = Path(__file__).parent / "fixtures" / "configs"
PHI4 = str(CONFIGS / "microsoft--phi-4")
CUBLAS_H100 = 32 * 2**20  # PyTorch's cuBLAS workspace on compute capability 9.0 (engine.CUBLAS_WORKSPACE)

# Within the target, per half (development, held out), of the logs the model judges. The held-out
# floor went from 6 to 5 when the MXFP4 experts were counted as vLLM pads them: the weights of
# vllm-gpt-oss-120b-a100-80g-1.log now match its log (17.19 vs 17.22 GiB) and the pool falls 7%
# short, because the non-torch allowance (2.1 GiB under TP) and the activation reading overstate
# that 4-GPU Ray run (the log leaves 0.78 GiB for both); it was within only as two errors cancelled.
# Raised to 17 and 15 (of 18 and 19 judged) when 20 more logs of llm-d-planner's v0.19.0 H100 sweep
# were added (Llama-3.1-8B-Instruct, Qwen2.5-7B-Instruct and Qwen3-8B at TP 1/2/4, PP 4,
# max-model-len 2k to 32k, fp8 KV; phi-2) and gemma-2-9b-it's config was stored: all 21 are within.
# Lowered to 14 held out (17 of 18 development unchanged) when the non-torch allowance fitted to the
# sweep's development logs (0.25 GiB, 2.1 GiB under TP) was replaced by the buffers vLLM's source
# sizes (issue 42: nothing fitted): Mixtral-8x7B at TP 2 and Qwen3-30B-A3B at TP 1 left the target
# (+6.6%, +5.7%: vLLM measured 2.07 and 0.27 GiB that no source line sizes) and gpt-oss-120b at TP 4
# on A100s entered it (-4.2%, the sampler phase read in source).
# Raised to 19 and 16 (of 20 and 21 judged), and MIN_JUDGED from 37 to 41, when four logs from outside that
# sweep were added, all within: Llama 3.1 8B on vLLM V0 on an A10 (-4.3%), gpt-oss-120b on vLLM 0.11.2 on a
# Kaggle H100 (+4.2%) and two runs of SGLang's documentation notebooks with Llama-3.1-8B-Instruct (+0.2%, +0.3%).
# Raised to 21 and 19 (of 22 and 25 judged), and MIN_JUDGED from 41 to 47, when six logs' configs were
# stored or mapped: the five Qwen2-7B-Instruct runs (four judged, on A100 80GB, all within once the
# A100 is named for vLLM's batch defaults; that also moved gpt-oss-120b on A100s from -4.2% to +0.3%),
# Qwen2.5-32B-Instruct on two L40S (+5.5%, within by 0.5 GiB) and Qwen2.5-72B-Instruct at TP 2 on
# H100s (+58.8%, outside: the 1.5 GiB of non-torch memory vLLM measures under TP is not sized); then
# to 20 held out and MIN_JUDGED 49 with Llama 3 8B on vLLM V0 on an H100 (+3.7%, held out) and
# Llama 3 8B Instruct on vLLM 0.4.1 on an RTX 3090 (+12.4%, 0.57 GiB over: outside, development);
# then to 22 and 21, MIN_JUDGED 51, with two SGLang logs, both within: DeepSeek-R1-Distill-Qwen-7B on
# an RTX 3090 (+3.6%) and QwQ-32B at TP 4 on L4s (+10.1%, 0.29 GiB over a 2.84 GiB pool).
# Held-out floor raised to 22 when vLLM v0.19.0's fused-MoE workspace (TritonExperts' buffers, kept by the
# worker's WorkspaceManager through the sampler run) was counted: Qwen3-30B-A3B entered the target (+5.7% to
# +2.5%; torch peak 2.57 vs the logged 2.68 GiB); Mixtral-8x7B at TP 2 moved from +6.6% to +5.7% (1.16 vs
# 1.21 GiB), the rest being the non-torch memory vLLM measures under TP.
# MIN_JUDGED lowered by one (to 50) when vllm-llama-3.1-8b-l40s-1.log was marked not judged: vLLM PR #17122,
# its thread, gives no command line (closed unmerged, it only adds log lines), so the run's utilization and
# batch are unknown; the +26.9% it showed was against vLLM's default 0.9, which nothing in the thread states.
# The FlashInfer fusion workspace rounded to an H100 SXM's stated 512 MiB multicast granularity moved
# Mixtral-8x7B at TP 2 within (+2.2%): held-out 22 -> 23. MIN_JUDGED lowered by one (to 49) and the
# development floor to 21 when vllm-llama-3.1-8b-a10-1.log (within, -4.3%) was marked not judged: its page
# gives no command line, and its 0.22 GiB of activation cannot hold the 256-row sampler of V0's default
# batch, so the defaults the case assumed are not the run's.
# Development floor raised to 22 and MIN_JUDGED to 50 when DeepSeek-V2-Lite-Chat's config was stored
# (KTransformers' copy): vllm-deepseek-v2-lite-chat-h100-1.log, MLA on one H100, is within (+1.2%).
# Held-out floor raised to 25 and MIN_JUDGED to 52 with Qwen2.5-72B-Instruct at TP 4 on four L40S (vLLM
# 0.19.0, +9.1%: 0.46 GiB over a 5.11 GiB pool, within by the 0.5 GiB rule; held out). Qwen3-8B on vLLM 0.19.1
# on an A100 SXM4 40GB (development) is not judged until startup_cases.GPUS maps its GPU's name.
# Development floor raised to 26 and MIN_JUDGED to 55 when the A100 SXM4 80GB gained its reported total
# (79.15 GiB) and the two A100 logs of one blog post were read as the 80 GB part by their own figures:
# gpt-oss-20b (development) is within (+1.5%, Marlin MXFP4 by the GPU's compute capability); Gemma 4
# 26B-A4B (held out) is not (+9.2%: its vision encoder's weights are not counted).
# Development floor raised to 27 and MIN_JUDGED to 56 when the log on "NVIDIA A100 40GB" was taken as the
# SXM part (startup_cases.GPUS says why the PCIe part's 0.18 GiB less is small): Qwen2-7B at TP 2, +2.4%.
# Held-out floor raised to 26 when Gemma 4's vision encoder (transformers' modeling_gemma4.py, as vLLM's
# gemma4_mm.py builds it) and its full-attention layers' own heads (vLLM's gemma4.py) were counted:
# vllm-gemma-4-26b-a4b-a100-1.log moved from +9.2% to +3.5% (48.09 GiB of weights against 48.5 loaded).
# Gemma 2's head read as tied when its config leaves tie_word_embeddings out (Gemma2Config's default) moved
# vllm-gemma-2-9b-it-h100-1.log from -2.4% to +0.8% (weights 17.21 GiB against 17.22 loaded).
# The RoPE caches vLLM builds with the model (cos_sin_cache) were counted in the weights: Llama 3.1 8B's,
# Gemma 2 9B's and Qwen3 8B's then agree with "Model loading took" to 0.01 GiB; Gemma 4 moved to +1.8%.
# Floors unchanged when vLLM's Triton sampler buffer (at the GPU's SM count), PyTorch's cuBLAS workspace and
# the caching allocator's rounding of the weights were counted: the torch peak and "Model loading took" of
# the v0.19.0 H100 logs then agree to the digits printed; Qwen2.5-72B at TP 2 moved from +25.7% to +19.7%
# (0.60 GiB over, all of it non-torch memory vLLM measures), SGLang's QwQ-32B at TP 4 from +9.0% to +1.3%.
MIN_WITHIN = {False: 27, True: 26}
MIN_JUDGED = 56


def run_json(cli, *args: str) -> dict:
    result = cli(*args, "--json")
    assert result.code == 0 and result.err == "", (args, result.err)
    return json.loads(result.out)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_log_is_judged_or_says_why_not(case):
    judged = JUDGED[case.name]
    if case.scenario is None:
        assert case.skipped, case.name
        return
    assert judged.refusal == "", (case.name, judged.refusal)
    assert judged.logged is not None, f"{case.name}: the log gives no pool to judge by"


def test_the_available_kv_memory_is_within_the_target_on_each_half():
    judged = [j for j in JUDGED.values() if j.error is not None]
    assert len(judged) >= MIN_JUDGED
    for held_out, floor in MIN_WITHIN.items():
        half = [j for j in judged if j.case.log["held_out"] == held_out]
        within = [j.case.name for j in half if j.ok]
        assert len(within) >= floor, (held_out, within)


MXFP4_WEIGHTS = sorted(
    c.name
    for c in CASES
    if c.scenario is not None
    and "weights_gib" in c.log["logged"]
    and startup_cases.named_settings(c.log).get("mxfp4_backend") == "marlin"
    and (Path(c.scenario.model) / "config.json").is_file()
    and '"mxfp4"' in (Path(c.scenario.model) / "config.json").read_text()
)


@pytest.mark.parametrize("name", MXFP4_WEIGHTS)
def test_mxfp4_weights_per_gpu_are_what_vllm_loaded(name):
    """MXFP4 experts as vLLM's Marlin MoE kernel pads them (the logs that name Marlin): the weights
    per GPU within 1% of the log's "Model loading took". (Triton's swizzled layout, v0.19.0, was not
    read: gpt-oss-20b's Triton logs load 0.5 GiB more than create_weights allocates.)"""
    case = next(c for c in CASES if c.name == name)
    outcome = startup_cases.core.run(case.scenario)
    loaded = case.log["logged"]["weights_gib"] * startup_cases.GIB
    assert abs(outcome.estimate.results["weights_bytes"] - loaded) <= 0.01 * loaded, name


def test_mxfp4_backend_needs_an_engine(cli):
    result = cli("estimate", "memory", "--model", str(CONFIGS / "openai--gpt-oss-20b"), "--mxfp4-backend", "marlin")
    assert result.code == 2 and "--mxfp4-backend describes an engine's start-up" in result.err, result.err


@pytest.mark.parametrize(
    ("model", "engine", "why"),
    [("llama-3.1-8b", "vllm", "llama-3.1-8b has none"), (None, "sglang", "the SGLang estimate has no such choice")],
)
def test_mxfp4_backend_where_it_cannot_apply_is_refused_not_ignored(cli, model, engine, why):
    """A kernel choice for a model without MXFP4 experts, or for SGLang, changes nothing: refused, exit 2."""
    model = model or str(CONFIGS / "openai--gpt-oss-20b")
    result = cli(
        "estimate", "memory", "--model", model, "--gpu", "h100-sxm", "--engine", engine, "--mxfp4-backend", "marlin"
    )
    assert result.code == 2 and result.out == "", result.err
    assert result.err == (
        f"Error: --mxfp4-backend applies only to vLLM with a model whose experts are MXFP4 ({why}): leave it out\n"
    )


# The logs within the target when this pin was last written (a deliberate change to the engine model
# rewrites it; a log that drops out of the target fails here by name).
WITHIN_PIN = json.loads((Path(__file__).parent / "assets" / "startup-within.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", WITHIN_PIN)
def test_a_log_within_the_target_stays_within_it(name):
    judged = JUDGED[name]
    assert judged.ok and startup_cases.within(judged.estimated, judged.logged), (judged.estimated, judged.logged)


def test_the_engine_model_names_the_engines_quantities(cli):
    result = run_json(
        cli, "estimate", "memory", "--engine", "vllm", "--model", PHI4, "--gpu", "h100-sxm", "--max-model-len", "8192",
        "--gpu-memory-utilization", "0.95",
    )  # fmt: skip
    r = result["results"]
    assert result["fits"] is True
    assert result["verdict"].startswith(f"Available KV cache memory: {r['kv_available_bytes'] / 2**30:.2f} GiB; ")
    assert f"GPU KV cache size: {r['kv_pool_tokens']:,} tokens" in result["verdict"]
    assert r["kv_pool_tokens"] == r["kv_blocks"] * 16
    assert (
        r["kv_available_bytes"] == r["budget_bytes"] - r["weights_bytes"] - r["activation_bytes"] - r["non_torch_bytes"]
    )
    assert any(
        f.startswith("non-torch = no FlashInfer all-reduce fusion workspace (one GPU) = 0 B")
        for f in result["formulas"]
    )
    assert any(
        a.startswith("Non-torch memory counts only buffers whose size vLLM's source declares")
        for a in result["assumptions"]
    )


LLAMA_H100 = ("estimate", "memory", "--engine", "vllm", "--model", "llama-3.1-8b", "--max-model-len", "8192")


@pytest.mark.parametrize(
    ("flags", "non_torch", "why"),
    [
        # 2 x 8,192 x 4,096 x 2 = 128 MiB; 2 x 256 x 4 = 2 KiB -> 2 MiB; 3 x 128 MiB; + 3 x 2 KiB (no stated
        # driver granularity for an H200: FlashInfer's own rounding only)
        (
            ("--gpu", "h200", "--memory", "139.8GiB", "-tp", "2"),
            538_974_208,
            "compute capability 9.0, TP 2: N = min(64 MiB",
        ),
        # an H100 SXM's driver rounds each of the three buffers up to its 512 MiB multicast granularity
        (("--gpu", "h100-sxm", "-tp", "2"), 3 * 512 * 2**20, "multicast granularity (512.00 MiB) for this GPU"),
        # N = 2 MiB / 8 KiB = 256: 8 MiB, 2 MiB, 24 MiB, + 3 x 2 KiB; then 512 MiB each on an H100 SXM
        (("--gpu", "h100-sxm", "-tp", "4"), 3 * 512 * 2**20, "compute capability 9.0, TP 4: N = min(2 MiB"),
        (("--gpu", "h200", "--memory", "139.8GiB", "-tp", "4"), 35_657_728, "each rounded up to 2 MiB + 2 KiB ="),
        # N = 32 MiB / 8 KiB = 4,096: 4 x 4,096 x 4,096 x 2 = 128 MiB, as at TP 2 on an H100
        (
            ("--gpu", "b200", "--memory", "178GiB", "-tp", "4"),
            538_974_208,
            "compute capability 10.0, TP 4: N = min(32 MiB",
        ),
        (("--gpu", "h100-sxm"), 0, "(one GPU)"),
        (("--gpu", "h100-sxm", "-tp", "2", "-pp", "2"), 0, "(pipeline parallelism)"),
        (
            ("--gpu", "a100-sxm-80gb", "--memory", "79.15GiB", "-tp", "2"),
            0,
            "(compute capability 8.0: vLLM turns it on for 9.0 and 10.x)",
        ),
        (
            ("--gpu", "a10g", "--memory", "21.98GiB", "-tp", "2"),
            0,
            "(invmap's table gives no compute capability for the device)",
        ),
        (
            ("--gpu", "rtx-4090", "--memory", "23.5GiB", "-tp", "2"),
            0,
            "(compute capability 8.9: vLLM turns it on for 9.0 and 10.x)",
        ),
        (("--gpu", "mi300x", "-tp", "2"), 0, "(an AMD GPU: vLLM turns the fusion on only on CUDA)"),
        (("--memory", "79.19GiB", "-tp", "2"), 0, "(invmap's table gives no compute capability for the device)"),
        (("--gpu", "h100-sxm", "-tp", "16"), 0, "(TP 16 is not one the fusion supports)"),
        # an H100 PCIe is compute capability 9.0, but its GPUs talk over PCIe: no multicast, no workspace
        (
            ("--gpu", "h100-pcie", "--memory", "79.18GiB", "-tp", "2"),
            0,
            "(GPUs linked by PCIe have no multicast, so FlashInfer refuses the workspace",
        ),
    ],
)
def test_non_torch_memory_is_the_fusion_workspace_vllm_sizes_or_nothing(cli, flags, non_torch, why):
    """vLLM v0.19.0's FlashInfer all-reduce fusion workspace as FlashInfer v0.6.6 sizes it (TP 2/4/8, no PP,
    compute capability 9.0 or 10.x), else no non-torch term at all, each with its reason."""
    result = run_json(cli, *LLAMA_H100, *flags)
    assert result["results"]["non_torch_bytes"] == non_torch
    line = next(f for f in result["formulas"] if f.startswith("non-torch = "))
    assert why in line and line.endswith(f"= {non_torch:,} B ({line.rsplit('(', 1)[1]}"), line


def test_the_activation_peak_is_the_larger_of_the_forward_and_the_sampler_phase(cli):
    """Llama 3.1 8B on an H100 (vllm serve's 8,192 tokens and 1,024 sequences): the sampler phase,
    (8,192 + 2 x 1,024) x 4,096 x 2 + 1,024 x 128,256 x (2 + 3 x 4) and the Triton kernel's buffer of
    132 x 128,256 x 4 (the H100 SXM's 132 SMs), is above the forward's tensors; PyTorch's 32 MiB cuBLAS
    workspace comes on top. vLLM v0.19.0 logged a torch peak increase of 1.89 GiB for this run
    (vllm-llama-3.1-8b-instruct-h100-7.log); this is 1.885."""
    result = run_json(cli, *LLAMA_H100, "--gpu", "h100-sxm")
    sampler = (8_192 + 2 * 1_024) * 4_096 * 2 + 1_024 * 128_256 * (2 + 12) + 132 * 128_256 * 4
    assert result["results"]["activation_bytes"] == 32 * 2**20 + sampler == 2_023_837_696
    line = next(f for f in result["formulas"] if f.startswith("activation peak = "))
    assert line.startswith(
        "activation peak = cuBLAS workspace 33,554,432 B (PyTorch's default for compute capability 9.0) + "
        "max(forward, sampler)"
    ), line
    assert "S = min(next power of 2 of min(SMs 132, R), SMs) = 132" in line, line


FEW_ROWS = ("--max-num-seqs", "100", "--max-num-batched-tokens", "512")
# The sampler's Triton buffer and PyTorch's cuBLAS workspace by device: (flags, the buffer's rows S, the
# workspace, what the limitations say of each where it is not counted).
DEVICE_TERMS = {
    "h100-sxm": (("--gpu", "h100-sxm"), 132, 32 * 2**20, None, None),
    # fewer rows than SMs: S is the next power of 2 of R, up to the SM count (512 tokens, so that the
    # sampler phase stays above the forward's)
    "h100-sxm, 100 sequences": (("--gpu", "h100-sxm", *FEW_ROWS), 128, 32 * 2**20, None, None),
    "h100-pcie, 100 sequences": (("--gpu", "h100-pcie", "--memory", "79GiB", *FEW_ROWS), 114, 32 * 2**20, None, None),
    # compute capability 8.9: the ":4096:2:16:8" default; no SM count in the table for the L40S
    "l40s": (("--gpu", "l40s"), 0, (4096 * 2 + 16 * 8) * 1024, "table gives no SM count for the device", None),
    "b200": (
        ("--gpu", "b200"), 148, 0, None,
        "on compute capability 10.x and later PyTorch's default moved between releases",
    ),
    "mi300x": (("--gpu", "mi300x"), 304, 0, None, "ROCm's hipBLAS default was not read at the torch vLLM pins for it"),
    # no compute capability in the table: neither is counted
    "a10g": (
        ("--gpu", "a10g", "--memory", "22GiB"), 0, 0, "table gives no SM count for the device",
        "invmap's table gives no compute capability for the device",
    ),
    "--memory": (
        ("--memory", "80GiB"), 0, 0, "table gives no SM count for the device",
        "a device given by --memory has no compute capability",
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "rows", "cublas", "no_buffer", "no_cublas"), DEVICE_TERMS.values(), ids=list(DEVICE_TERMS)
)
def test_the_triton_buffer_and_the_cublas_workspace_follow_the_device(cli, flags, rows, cublas, no_buffer, no_cublas):
    """Beside the same sampler phase, the activation holds S x V x 4 for the Triton kernel's buffer, S from the
    GPU's multiprocessors, and the cuBLAS workspace PyTorch sizes by compute capability; where either is not
    counted the limitations say why."""
    base = ("estimate", "memory", "--engine", "vllm", "--model", "llama-3.1-8b", "--max-model-len", "8192")
    result = run_json(cli, *base, *flags)
    bare = run_json(cli, *base, *flags, "--sampler", "flashinfer")  # the same 12 bytes, no buffer
    assert result["results"]["activation_bytes"] - bare["results"]["activation_bytes"] == rows * 128_256 * 4
    line = next(f for f in result["formulas"] if f.startswith("activation peak = "))
    assert (f"), SMs) = {rows})" in line) == bool(rows), line
    assert line.startswith(f"activation peak = cuBLAS workspace {cublas:,} B (") == bool(cublas), line
    said = " ".join(result["limitations"])
    assert (no_buffer is not None) == ("cached buffer of vLLM's Triton top-k/top-p kernel" in said), said
    if no_buffer:
        assert no_buffer in said, said
    assert (no_cublas is not None) == ("PyTorch's cuBLAS workspace, which the profile's first matmul takes" in said), (
        said
    )
    if no_cublas:
        assert f"is left out: {no_cublas}." in said, said
    if cublas:  # the workspace is in every stage's peak, the forward's too
        staged = run_json(cli, *base, *flags, "-pp", "2")
        first = next(f for f in staged["formulas"] if f.startswith("activation peak = "))
        assert first.startswith("activation peak = cuBLAS workspace"), first


@pytest.mark.parametrize(
    ("model", "flags", "workspace", "activation"),
    [
        # T 8,192, k 8, I 768, H 2,048: workspace13 8,192 x 8 x 2,048 x 2 and workspace2 the same (N = 1,536 < H);
        # the sampler phase (8,192 + 2 x 1,024) x 2,048 x 2 + 1,024 x 151,936 x (2 + 3 x 4) and the Triton
        # kernel's 132 x 151,936 x 4 on top; PyTorch's 32 MiB cuBLAS workspace beside them all
        ("Qwen--Qwen3-30B-A3B", (), 536_870_912, CUBLAS_H100 + 536_870_912 + 41_943_040 + 2_178_154_496 + 80_222_208),
        # TP 2: I/TP 7,168, N 14,336; workspace13 8,192 x 2 x 7,168 x 2, workspace2 8,192 x 2 x 14,336 x 2
        (
            "mistralai--Mixtral-8x7B-v0.1",
            ("-tp", "2"),
            704_643_072,
            CUBLAS_H100 + 704_643_072 + 83_886_080 + 458_752_000 + 132 * 32_000 * 4,
        ),
    ],
)
def test_an_unquantized_moe_holds_vllms_fused_moe_workspace_through_the_sampler_run(
    cli, model, flags, workspace, activation
):
    """vLLM v0.19.0's TRITON MoE backend takes its buffers from the worker's WorkspaceManager, which keeps
    them: the torch peak is the workspace plus the larger of the forward's states and the sampler phase.
    The logs measured 2.68 GiB (Qwen3-30B-A3B) and 1.21 GiB (Mixtral at TP 2) against 2.67 and 1.21 here."""
    result = run_json(
        cli, "estimate", "memory", "--engine", "vllm", "--model", str(CONFIGS / model), "--gpu", "h100-sxm",
        "--max-model-len", "8192", *flags,
    )  # fmt: skip
    assert result["results"]["activation_bytes"] == activation
    line = next(f for f in result["formulas"] if f.startswith("MoE workspace (vLLM's TritonExperts"))
    assert line.endswith(f"= {workspace:,} B ({line.rsplit('(', 1)[1]}"), line


def test_quantized_experts_get_no_moe_workspace_and_say_why(cli):
    result = run_json(
        cli, "estimate", "memory", "--engine", "vllm", "--model", str(CONFIGS / "openai--gpt-oss-20b"), "--gpu",
        "h100-sxm", "--max-model-len", "8192",
    )  # fmt: skip
    assert "no MoE workspace counted (mxfp4 experts run another MoE backend, not read)" in result["formulas"]


def test_deepseek_v4s_fp4_experts_are_mxfp4_beside_its_fp8_block_quantization(cli, tmp_path):
    """DeepSeek-V4's config says "expert_dtype": "fp4" beside an FP8 block quantization_config: the
    routed experts are counted as MXFP4 (17/32 B a weight), everything else linear as FP8 with its
    128x128 float32 scales. Without the key the experts are FP8 too: the difference is exactly the
    routed experts' parameters (61 layers x 384 experts x 3 x 7,168 x 3,072) times (1 + 4/16,384 - 17/32)."""
    v4 = CONFIGS / "deepseek-ai--DeepSeek-V4-Pro"
    config = json.loads((v4 / "config.json").read_text(encoding="utf-8"))
    del config["expert_dtype"]
    plain = tmp_path / "v4-without-expert-dtype"
    plain.mkdir()
    (plain / "config.json").write_text(json.dumps(config), encoding="utf-8")
    fp4 = run_json(cli, "estimate", "memory", "--model", str(v4))
    fp8 = run_json(cli, "estimate", "memory", "--model", str(plain))
    experts = 61 * 384 * 3 * 7168 * 3072
    assert fp4["results"]["weights_bytes"] == 887_901_984_256
    assert fp8["results"]["weights_bytes"] - fp4["results"]["weights_bytes"] == int(experts * (1 + 4 / 16384 - 17 / 32))
    line = next(f for f in fp4["formulas"] if f.startswith("weights_bytes = "))
    assert "MXFP4: 4-bit values with a one-byte scale per 32 (expert_dtype fp4) for the routed experts" in line
    moe = run_json(cli, "estimate", "memory", "--engine", "vllm", "--model", str(v4), "--gpu", "h100-sxm", "-tp", "8")
    assert "no MoE workspace counted (mxfp4 experts run another MoE backend, not read)" in moe["formulas"]
    weights = next(f for f in moe["formulas"] if f.startswith("weights (per GPU) = "))
    assert "fp8 linear modules at 1.00024 B, routed experts as mxfp4 at 0.53125 B, the rest at 2 B" in weights


@pytest.mark.parametrize("engine", ENGINES)
def test_each_engine_says_what_its_estimate_leaves_out_of_cuda_graphs_and_the_sampler(cli, engine):
    """vLLM V1 (read at v0.19.0) names the CUDA-graph estimate later releases subtract and says it counts
    the Triton sampler's buffer at the H100's SMs; V0 and SGLang say their graphs come out of the headroom, V0 that its
    sampler term is invmap's reading; SGLang runs no profile, so it has no sampler line."""
    result = run_json(cli, "estimate", "memory", "--engine", engine, "--model", "llama-3.1-8b", "--gpu", "h100-sxm")
    said = " ".join(result["limitations"])
    v1 = engine == "vllm"
    assert ("from v0.21.0 vLLM subtracts a measured estimate by default" in said) == v1, said
    assert ("CUDA graphs are captured after the pool is sized (vLLM V0; SGLang" in said) == (not v1), said
    assert ("counts the Triton kernel's cached buffer at the device's 132 SMs" in said) == v1, said
    assert ("V0's sampler term is invmap's reading too" in said) == (engine == "vllm-v0"), said
    assert ("activation peak is invmap's reading" in said) == (engine != "sglang"), said


def test_one_request_that_does_not_fit_is_the_engines_refusal_with_the_longest_that_does(cli):
    result = run_json(
        cli, "estimate", "memory", "--engine", "vllm", "--model", PHI4, "--memory", "40GiB", "--max-model-len", "128k",
    )  # fmt: skip
    longest = result["results"]["longest_request_tokens"]
    assert result["fits"] is False and 0 < longest < 128_000
    assert result["verdict"].startswith("To serve at least one request with the models's max seq len (128000)")
    assert f"the estimated maximum model length is {longest}." in result["verdict"]


def test_a_tensor_parallel_size_that_does_not_divide_the_query_heads_is_vllms_refusal(cli):
    result = cli(
        "estimate", "memory", "--engine", "vllm", "--model", "qwen2.5-7b-instruct", "--gpu", "h100-sxm", "-tp", "8"
    )
    assert result.code == 2 and result.out == ""
    assert "Total number of attention heads (28) must be divisible by tensor parallel size (8)." in result.err


@pytest.mark.parametrize(
    "name", ["tensor_parallel", "tokens_per_request", "gpu_memory_utilization", "pipeline_parallel"]
)
def test_every_spelling_of_an_input_gives_the_same_estimate(cli, name):
    q = INPUTS[name]
    value = {"tensor_parallel": "2", "tokens_per_request": "4096", "gpu_memory_utilization": "0.8"}.get(name, "2")
    base = ("estimate", "memory", "--engine", "vllm", "--model", PHI4, "--gpu", "h100-sxm")
    outs = {flag: run_json(cli, *base, flag, value)["results"] for flag in q.flags}
    assert len(q.flags) > 1 and len({json.dumps(r, sort_keys=True) for r in outs.values()}) == 1, outs


@pytest.mark.parametrize(
    ("typed", "tokens"), [("128k", 128_000), ("32K", 32_768), ("1.5e4", 15_000), ("131,072", 131_072), ("8192", 8192)]
)
def test_token_counts_are_read_as_vllm_reads_them(cli, typed, tokens):
    result = run_json(
        cli, "estimate", "memory", "--engine", "vllm", "--model", PHI4, "--gpu", "h100-sxm", "--max-model-len", typed
    )
    assert result["configuration"]["tokens_per_request"] == tokens


def test_a_token_count_vllm_would_refuse_is_refused(cli):
    result = cli(
        "estimate", "memory", "--engine", "vllm", "--model", PHI4, "--gpu", "h100-sxm", "--max-model-len", "1.5K"
    )
    assert result.code == 2 and "Error: --max-model-len takes a count such as 8192, 128k" in result.err


@pytest.mark.parametrize(
    ("typed", "size"), [("80G", 80 * 10**9), ("80GB", 80 * 10**9), ("80GiB", 80 * 2**30), ("1.5e12", 15 * 10**11)]
)
def test_memory_sizes_are_read_as_people_type_them(cli, typed, size):
    result = run_json(cli, "estimate", "memory", "--engine", "vllm", "--model", PHI4, "--memory", typed)
    assert result["results"]["memory_bytes"] == size


def test_each_engine_is_declared_and_runs(cli):
    for engine in ENGINES:
        result = run_json(
            cli, "estimate", "memory", "--engine", engine, "--model", PHI4, "--gpu", "h100-sxm", "--max-model-len", "8k"
        )
        assert result["configuration"]["engine"] == engine and result["results"]["kv_pool_tokens"] > 0


def mxfp4_defaults():
    """Every GPU of the table whose compute capability is stated and whose total an estimate can use,
    with the MXFP4 kernel vLLM picks on it (Marlin below engine.MXFP4_MARLIN_BELOW), or None from
    engine.MXFP4_READ_BELOW (10.x) up, where the option's declared default (triton) stands."""
    from invmap.estimate.gpus import gpus

    for gpu in gpus():
        if gpu.capability is None or gpu.memory_reported_bytes is None:
            continue
        marlin, read = gpu.capability < engine_model.MXFP4_MARLIN_BELOW, gpu.capability < engine_model.MXFP4_READ_BELOW
        yield gpu.name, "marlin" if marlin else "triton" if read else None


@pytest.mark.parametrize(("gpu", "kernel"), list(mxfp4_defaults()))
def test_the_mxfp4_kernel_defaults_to_the_one_vllm_picks_for_the_gpu(cli, gpu, kernel):
    found = run_json(cli, "estimate", "memory", "--engine", "vllm", "--model", "gpt-oss-20b", "--gpu", gpu)
    given = next(i for i in found["inputs"] if i["name"] == "mxfp4_backend")
    if kernel is None:
        assert (given["value"], given["from"]) == ("triton", "invmap default")
        return
    assert given["value"] == kernel and given["from"].startswith("vLLM's choice for compute capability ")
    # The option still wins, and the weights follow the kernel: Marlin pads the experts more.
    other = "triton" if kernel == "marlin" else "marlin"
    chosen = run_json(
        cli, "estimate", "memory", "--engine", "vllm", "--model", "gpt-oss-20b", "--gpu", gpu, "--mxfp4-backend", other
    )
    assert next(i for i in chosen["inputs"] if i["name"] == "mxfp4_backend")["from"] == "option"
    weights = {kernel: found["results"]["weights_bytes"], other: chosen["results"]["weights_bytes"]}
    assert weights["marlin"] > weights["triton"]


def test_a_gpu_with_a_compute_capability_below_9_runs_gpt_oss_on_marlin():
    assert ("a100-sxm-80gb", "marlin") in list(mxfp4_defaults()) and ("h100-sxm", "triton") in list(mxfp4_defaults())


GEMMA4 = CONFIGS / "google--gemma-4-26B-A4B"
# Gemma 4's vision encoder by transformers' modules (modeling_gemma4.py): patch projection 3 x 16^2 x 1152,
# position table 2 x 10240 x 1152, 27 layers of q/k/v/o 4 x 1152^2, gated MLP 3 x 1152 x 4304, four
# norms of 1152 and q/k norms of 72, and the embedder's projection 1152 x 2816.
GEMMA4_VISION = (
    3 * 16**2 * 1152 + 2 * 10240 * 1152 + 27 * (4 * 1152**2 + 3 * 1152 * 4304 + 4 * 1152 + 2 * 72) + 1152 * 2816
)


def gemma4_variant(tmp_path: Path, name: str, edit) -> str:
    """Gemma 4 26B-A4B's config with `edit` applied (to the whole config), in its own folder."""
    return variant(tmp_path, GEMMA4, name, edit)


def weights_of(cli, model: str, *flags: str, rounded: bool = True) -> int:
    """The weights per GPU; without `rounded`, less the allocator's rounding the formula states."""
    found = run_json(
        cli, "estimate", "memory", *flags, "--model", model, "--gpu", "a100-sxm-80gb", "--max-model-len", "8k"
    )
    line = next((f for f in found["formulas"] if f.startswith("weights (per GPU) = ")), "")
    extra = re.search(r", \+ allocator rounding ([\d,]+) B ", line)
    return found["results"]["weights_bytes"] - (0 if rounded or not extra else int(extra[1].replace(",", "")))


@pytest.mark.parametrize("engine", [None, *ENGINES])
def test_a_vision_encoder_of_a_family_invmap_reads_is_counted_and_says_so(cli, engine, tmp_path):
    flags = ("--engine", engine) if engine else ()
    found = run_json(
        cli, "estimate", "memory", *flags, "--model", str(GEMMA4), "--gpu", "a100-sxm-80gb", "--max-model-len", "8k"
    )
    assert (
        f"The config's vision_config (gemma4_vision) is counted as vLLM builds it: {GEMMA4_VISION:,} parameters "
        "at the model's dtype, on the first pipeline stage, whole on each GPU."
    ) in found["assumptions"]
    assert not any(a.startswith("Only the language model") for a in found["assumptions"])
    text_only = gemma4_variant(tmp_path, "text-only", lambda c: c.pop("vision_config"))
    assert found["results"]["weights_bytes"] - weights_of(cli, text_only, *flags) == 2 * GEMMA4_VISION  # bf16
    # An audio encoder beside it (Gemma 4's smaller models have one) is not counted, and is said to be left out.
    audio = gemma4_variant(tmp_path, "audio", lambda c: c.update(audio_config={"model_type": "gemma4_audio"}))
    heard = run_json(cli, "estimate", "memory", *flags, "--model", audio, "--gpu", "a100-sxm-80gb")
    assert (
        "The config's audio_config describes an encoder whose weights load too and are not counted, so the device "
        "holds less for the KV cache than this says."
    ) in heard["assumptions"]
    assert heard["results"]["weights_bytes"] == found["results"]["weights_bytes"]


MEDGEMMA = CONFIGS / "google--medgemma-27b-it"


def variant(tmp_path: Path, source: Path, name: str, edit) -> str:
    """`source`'s config with `edit` applied (to the whole config), in its own folder."""
    config = json.loads((source / "config.json").read_text())
    edit(config)
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


def test_gemma3s_count_is_the_publishers_weights_to_the_byte(cli):
    # google/medgemma-27b-it's model.safetensors.index.json (SOURCES.toml): metadata.total_size, bf16.
    # The count: the text model with its head tied (Gemma3TextConfig's default) and four norms and a q/k
    # norm a layer, SigLIP as vLLM's siglip.py builds it, and Gemma3MultiModalProjector.
    stored = json.loads((MEDGEMMA / "safetensors-index-metadata.json").read_text())["metadata"]["total_size"]
    assert weights_of(cli, str(MEDGEMMA)) == stored  # the parameters alone (no engine: no RoPE caches)
    found = run_json(cli, "estimate", "memory", "--engine", "vllm", "--model", str(MEDGEMMA), "--gpu", "h100-sxm")
    assert (
        "The config's vision_config (siglip_vision_model) is counted as vLLM builds it: 423,060,336 parameters at "
        "the model's dtype, on the first pipeline stage, its linear layers split under TP."
    ) in found["assumptions"]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_engines_weights_hold_its_rope_caches_beside_the_parameters(cli, engine):
    # vLLM's get_rope: one cos_sin_cache per distinct rope, rows x rotary_dim at the model's dtype, on each GPU.
    # MedGemma 27B: its global layers' linear rope (factor 8) over 131,072 positions x 128, and its sliding
    # layers' default rope, 131,072 x 128.
    rope = (131072 * 8 * 128 + 131072 * 128) * 2
    assert weights_of(cli, str(MEDGEMMA), "--engine", engine, rounded=False) - weights_of(cli, str(MEDGEMMA)) == rope
    for tp in ("1", "2"):  # whole on each GPU: the buffers are not split
        args = ("estimate", "memory", "--engine", engine, "--model", str(MEDGEMMA), "--gpu", "h100-sxm", "-tp", tp)
        found = run_json(cli, *args)
        assert any("+ RoPE caches 1,048,576 x 128 + 131,072 x 128 x 2 B (288.00 MiB)" in f for f in found["formulas"])


@pytest.mark.parametrize("engine", ENGINES)
def test_online_fp8_puts_every_linear_layer_at_one_byte(cli, engine):
    # Llama 3.1 8B: 32 layers of q/k/v/o (4,096 x (4,096 + 2 x 1,024 + 4,096)) and a gated MLP (3 x 4,096 x
    # 14,336) go from two bytes to one; the embeddings, the output head and the norms stay at two.
    linear = 32 * (4096 * 10240 + 3 * 4096 * 14336)
    bf16 = weights_of(cli, "llama-3.1-8b", "--engine", engine, rounded=False)  # FP8's tensors are not listed
    assert bf16 - weights_of(cli, "llama-3.1-8b", "--engine", engine, "--quantization", "fp8") == linear
    # A checkpoint quantized the same way keeps its own format (DeepSeek-V3's FP8 blocks and their scales).
    given = weights_of(cli, "deepseek-v3", "--engine", engine, "-tp", "8", "-q", "fp8")
    assert given == weights_of(cli, "deepseek-v3", "--engine", engine, "-tp", "8")


def test_online_quantization_of_a_checkpoint_quantized_otherwise_is_vllms_refusal(cli):
    args = ("estimate", "memory", "--engine", "vllm", "--model", "gpt-oss-20b", "--gpu", "h100-sxm", "-q", "fp8")
    result = cli(*args)
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "Error: Quantization method specified in the model config (mxfp4) does not match the quantization method "
        "specified in the `quantization` argument (fp8). (vLLM's refusal: leave out -q for a checkpoint stored as "
        "mxfp4)\n"
    )


@pytest.mark.parametrize("factor", ["8", 0, 1e9, True])
def test_a_rope_factor_that_cannot_be_is_the_files_mistake(cli, tmp_path, factor):
    def scaled(c):
        c["text_config"]["rope_scaling"] = {"rope_type": "linear", "factor": factor}

    model = variant(tmp_path, MEDGEMMA, "scaled", scaled)
    result = cli("estimate", "memory", "--engine", "vllm", "--model", model, "--gpu", "h100-sxm")
    assert (result.code, result.out) == (3, "")
    assert result.err == (
        f"Error: {model}/config.json: the rope's 'factor' must be a number above 0 and at most 1,024, "
        f"not {json.dumps(factor)}\n"
    )


def test_sglang_pages_layers_of_two_sizes_by_the_token(cli):
    # SGLang's pool is tokens of every layer's K and V (blocks of one token), with no page unification.
    found = run_json(
        cli,
        "estimate",
        "memory",
        "--engine",
        "sglang",
        "--model",
        str(GEMMA4),
        "--gpu",
        "a100-sxm-80gb",
        "--max-model-len",
        "8k",
    )
    per_token = 25 * 8 * 256 * 2 * 2 + 5 * 2 * 512 * 2 * 2
    tokens = found["results"]["kv_available_bytes"] // per_token
    assert (found["results"]["kv_bytes_per_token"], found["results"]["kv_pool_tokens"]) == (per_token, tokens)
    assert found["units"]["kv_blocks"] == "blocks of 1 token"
    assert (
        f"KV per token = {per_token:,} B (25 layers of 8,192 B a token; 5 layers of 4,096 B a token); pool = "
        f"{tokens:,} blocks of 1 token = {tokens:,} tokens (floor(available / (block x KV per token)))"
    ) in found["formulas"]


def test_layers_whose_pages_vllm_cannot_make_one_size_are_its_refusal(cli, tmp_path):
    # global_head_dim 384: the full-attention layers keep 2 x 2 x 384 x 2 = 3,072 B a token, which does not
    # divide the sliding layers' 8,192 (unify_kv_cache_spec_page_size raises NotImplementedError). SGLang
    # pages by token, and sizes its pool.
    model = gemma4_variant(tmp_path, "odd", lambda c: c["text_config"].update(global_head_dim=384))
    args = ("estimate", "memory", "--model", model, "--gpu", "h100-sxm")
    result = cli(*args, "--engine", "vllm")
    assert (result.code, result.out) == (3, "")
    assert result.err == (
        f"Error: {model}/config.json: The page size of the layer is not divisible by the maximum page size. Cannot "
        "unify by adjusting block_size. (vLLM's refusal: its layers keep 3,072 and 8,192 B of KV a token)\n"
    )
    assert cli(*args, "--engine", "sglang").code == 0


def test_global_kv_heads_that_do_not_divide_the_query_heads_are_refused(cli, tmp_path):
    model = gemma4_variant(tmp_path, "three", lambda c: c["text_config"].update(num_global_key_value_heads=3))
    result = cli("estimate", "kv", "--model", model, "--tokens", "8k")
    assert (result.code, result.out) == (3, "")
    assert (
        result.err
        == f"Error: {model}/config.json: num_global_key_value_heads (3) must divide num_attention_heads (16)\n"
    )


# Logs whose "Model loading took" (SGLang: "mem usage") the weights give to the digits it is printed in
# (0.01 GiB; where the log prints four decimals, to half a MiB: small tensors' 512-byte rounding and the
# rope's float32 temporaries are not replayed), with what they show.
LOADED = {
    "vllm-llama-3.1-8b-instruct-h100-2.log": "its llama3 rope's cache (131,072 x 128 x 2 B, 32 MiB) beside 14.96",
    "vllm-gemma-2-9b-it-h100-1.log": "its head tied, as Gemma2Config ties it when the config says nothing",
    "vllm-qwen3-8b-h100-1.log": "its q and k norms and its rope's cache",
    # phi-2: counted as a gated three its MLPs made 6.74 GiB
    "vllm-phi-2-h100-1.log": "its MLP two biased linears, fc1 and fc2",
    "vllm-qwen2-7b-a100-80g-1.log": "57 MiB of blocks the allocator does not split (14.2488 GiB, four decimals)",
    "vllm-qwen2-7b-a100-80g-3.log": "at TP 2, 21.5 MiB of them (7.1217)",
    "vllm-qwen2.5-72b-instruct-h100-1.log": "at TP 2, each layer's 231 MiB down projection in a 232 MiB block",
    "vllm-qwen2.5-72b-instruct-l40s-1.log": "at TP 4, 120 MiB of whole blocks",
    "vllm-phi-4-h100-1.log": "its q/k/v (75 MiB) and down (175 MiB) projections in whole blocks",
    "vllm-qwen2.5-7b-instruct-h100-1.log": "at TP 4, nothing left over",
}


def loaded(name: str) -> tuple[float, float]:
    """(the weights in GiB as estimated, as the log printed them)."""
    judged = JUDGED[name]
    outcome = startup_cases.core.run(judged.case.scenario)
    return outcome.estimate.results["weights_bytes"] / 2**30, judged.case.log["logged"]["weights_gib"]


@pytest.mark.parametrize("name", LOADED)
def test_the_weights_are_what_vllm_loaded(name):
    estimated, logged = loaded(name)
    if len(repr(logged).partition(".")[2]) > 2:
        assert abs(estimated - logged) < 0.5 * 2**20 / 2**30, (estimated, logged)
    else:
        assert round(estimated, 2) == logged


def test_sglangs_weights_are_the_segments_the_allocator_reserves():
    """SGLang's pool starts from the free memory after the weights load, so the weights take whole
    segments: QwQ-32B at TP 4 on L4s, 15.51 GiB against the 15.54 logged and the 15.29 of parameters."""
    estimated, logged = loaded("sglang-qwq-32b-l4-1.log")
    assert abs(estimated - logged) < 0.05 and logged - estimated < logged - 15.29
    outcome = startup_cases.core.run(JUDGED["sglang-qwq-32b-l4-1.log"].case.scenario)
    line = next(f for f in outcome.estimate.as_json()["formulas"] if f.startswith("weights (per GPU) = "))
    assert "B (the segments torch's caching allocator reserves, rounded up to 2 MiB)" in line, line


def test_the_allocators_rounding_is_a_term_of_the_weights_or_said_to_be_left_out(cli):
    """Qwen2.5-72B at TP 2: 80 MiB of blocks beside the parameters and the rope's cache. gpt-oss's MXFP4
    tensors are not listed: no rounding, and the limitations say why."""
    result = run_json(
        cli, "estimate", "memory", "--engine", "vllm", "--model", str(CONFIGS / "Qwen--Qwen2.5-72B-Instruct"),
        "--gpu", "h100-sxm", "-tp", "2", "--max-model-len", "8192",
    )  # fmt: skip
    line = next(f for f in result["formulas"] if f.startswith("weights (per GPU) = "))
    assert ", + allocator rounding 83,886,080 B (the blocks torch's caching allocator hands out whole" in line, line
    assert not any("PyTorch's caching allocator holds beyond their bytes" in s for s in result["limitations"])
    quantized = run_json(cli, "estimate", "memory", "--engine", "vllm", "--model", "gpt-oss-20b", "--gpu", "h100-sxm")
    line = next(f for f in quantized["formulas"] if f.startswith("weights (per GPU) = "))
    assert "allocator rounding" not in line, line
    said = " ".join(quantized["limitations"])
    assert (
        "only in total: quantized weights keep their packed values and scales in tensors invmap does not list." in said
    ), said


@pytest.mark.parametrize("engine", [None, *ENGINES])
def test_an_encoder_invmap_does_not_count_is_said_to_be_left_out_of_the_weights(cli, engine, tmp_path):
    flags = ["--engine", engine] if engine else []

    def other(c):  # SigLIP under another text model: its projector is that model's, not read
        c["text_config"]["model_type"] = "gemma2"

    found = run_json(
        cli,
        "estimate",
        "memory",
        *flags,
        "--model",
        variant(tmp_path, MEDGEMMA, "other", other),
        "--gpu",
        "h100-sxm",
        "--max-model-len",
        "8k",
    )
    said = [a for a in found["assumptions"] if a.startswith("Only the language model's weights are counted")]
    assert said == [
        "Only the language model's weights are counted: the config's vision_config describes an encoder whose "
        "weights load too, so the device holds less for the KV cache than this says."
    ]
    text_only = run_json(cli, "estimate", "memory", *flags, "--model", "llama-3.1-8b", "--gpu", "a100-sxm-80gb")
    assert not any(a.startswith("Only the language model") for a in text_only["assumptions"])


@pytest.mark.parametrize("engine", [None, *ENGINES])
def test_keys_a_gemma3_config_leaves_out_are_read_as_its_transformers_class_defaults(cli, tmp_path, engine):
    # Gemma 3's Hub configs leave vocab_size and the layer pattern to Gemma3TextConfig (262,208; a full-attention
    # layer in six, as medgemma's layer_types list), and SigLIP's num_channels to SiglipVisionConfig (3).
    def sparse(c):
        for key in ("vocab_size", "layer_types"):
            c["text_config"].pop(key)
        c["vision_config"].pop("num_channels")

    flags = ("--engine", engine) if engine else ()
    args = ("--gpu", "h100-sxm", "--max-model-len", "8k", *flags)
    full = run_json(cli, "estimate", "memory", "--model", str(MEDGEMMA), *args)
    left = run_json(cli, "estimate", "memory", "--model", variant(tmp_path, MEDGEMMA, "sparse", sparse), *args)
    assert left["results"] == full["results"]
    assert (
        "Keys the config leaves out are read as transformers' defaults for its family: Gemma3TextConfig's vocab_size "
        "262208, sliding_window_pattern 6, tie_word_embeddings true; SiglipVisionConfig's num_channels 3."
    ) in left["notes"]
    # kv too: the defaults are the model's, whatever is estimated
    kv = run_json(cli, "estimate", "kv", "--model", variant(tmp_path, MEDGEMMA, "kv", sparse), "--tokens", "8k")
    assert kv["results"]["bytes_per_token"] == 62 * 16 * 128 * 2 * 2


@pytest.mark.parametrize("family", ["gemma2", "llama"])
def test_a_config_without_tie_word_embeddings_takes_its_familys_default(cli, tmp_path, family):
    # Gemma2Config ties by default (vllm-gemma-2-9b-it-h100-1.log loaded 17.22 GiB: the head is the
    # embedding table); LlamaConfig does not.
    gemma2 = CONFIGS / "google--gemma-2-9b-it"
    as_family = variant(tmp_path, gemma2, "left-out", lambda c: c.update(model_type=family))
    untied = variant(tmp_path, gemma2, "untied", lambda c: c.update(model_type=family, tie_word_embeddings=False))
    head = 256000 * 3584 * 2
    difference = weights_of(cli, untied, "--engine", "vllm") - weights_of(cli, as_family, "--engine", "vllm")
    assert difference == (head if family == "gemma2" else 0)


def test_gemma4s_full_attention_layers_are_counted_with_their_own_heads_as_vllm_holds_them(cli, tmp_path):
    # vLLM's Gemma4DecoderLayer: global_head_dim 512 and, with attention_k_eq_v, num_global_key_value_heads 2
    # on the 5 full-attention layers; its QKVParallelLinear holds a V slot beside K. Per layer:
    # 2816 x (16 + 2 + 2) x 512 + 16 x 512 x 2816, where the sliding layers' dimensions count
    # 2816 x (16 + 8 + 8) x 256 + 16 x 256 x 2816.
    def uniform(c):
        c["text_config"].pop("global_head_dim")

    full = 2816 * 20 * 512 + 16 * 512 * 2816
    sliding = 2816 * 32 * 256 + 16 * 256 * 2816
    # the parameters alone (no engine: its RoPE caches follow the head dimension too)
    given = weights_of(cli, str(GEMMA4)) - weights_of(cli, gemma4_variant(tmp_path, "uniform", uniform))
    assert given == 2 * 5 * (full - sliding)


def test_layers_that_share_earlier_layers_kv_keep_none_of_their_own(cli, tmp_path):
    # num_kv_shared_layers 6: layers 24-29 read earlier layers' K and V (vLLM's Gemma4Attention gives them a
    # kv_sharing_target_layer_name and no cache); layers 0-23 keep theirs: 20 sliding of 8 x 256, 4 full of 2 x 512.
    shared = gemma4_variant(tmp_path, "shared", lambda c: c["text_config"].update(num_kv_shared_layers=6))
    found = run_json(cli, "estimate", "kv", "--model", shared, "--tokens", "8k")
    assert found["results"]["bytes_per_token"] == 20 * 8 * 256 * 2 * 2 + 4 * 2 * 512 * 2 * 2
    assert (
        "The config's last 6 layers (num_kv_shared_layers) read earlier layers' K and V and keep none of their own, "
        "as vLLM gives them no KV cache: 24 of 30 layers hold KV."
    ) in found["notes"]
    engine = run_json(cli, "estimate", "memory", "--engine", "vllm", "--model", shared, "--gpu", "a100-sxm-80gb")
    assert engine["results"]["kv_bytes_per_token"] == found["results"]["bytes_per_token"]
    # A pipeline stage of shared layers only would hold no KV: refused, not a pool of nothing.
    late = gemma4_variant(tmp_path, "late", lambda c: c["text_config"].update(num_kv_shared_layers=15))
    args = ("estimate", "memory", "--engine", "vllm", "--model", late, "--gpu", "a100-sxm-80gb", "-pp", "2")
    result = cli(*args)
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "Error: -pp 2 gives a stage only layers that share earlier layers' KV (layers 15-29; num_kv_shared_layers "
        "15): it would hold no KV cache\n"
    )
    every = gemma4_variant(tmp_path, "every", lambda c: c["text_config"].update(num_kv_shared_layers=30))
    refused = cli("estimate", "kv", "--model", every, "--tokens", "8k")
    assert refused.code == 3 and "'num_kv_shared_layers' (30) must be fewer than num_hidden_layers (30)" in refused.err


def test_a_double_wide_mlp_doubles_the_kv_shared_layers_mlp(cli, tmp_path):
    # vLLM's Gemma4DecoderLayer: use_double_wide_mlp gives the last num_kv_shared_layers layers intermediate_size x 2.
    def wide(c):
        c["text_config"].update(num_kv_shared_layers=6, use_double_wide_mlp=True)

    def narrow(c):
        c["text_config"].update(num_kv_shared_layers=6)

    difference = weights_of(cli, gemma4_variant(tmp_path, "wide", wide)) - weights_of(
        cli, gemma4_variant(tmp_path, "narrow", narrow)
    )
    assert difference == 2 * 6 * 3 * 2816 * 2112


def test_gemma4s_per_layer_embeddings_are_counted_as_vllm_builds_them(cli, tmp_path):
    # vLLM's Gemma4Model with hidden_size_per_layer_input P: a table of vocab_size_per_layer_input x (L x P),
    # a projection H x (L x P) and a norm of P; each layer a gate H x P, a projection P x H and a norm of H.
    def per_layer(c):
        c["text_config"]["hidden_size_per_layer_input"] = 256

    with_ple = weights_of(cli, gemma4_variant(tmp_path, "ple", per_layer), "--engine", "vllm")
    layers, hidden, ple, rows = 30, 2816, 256, 262144
    counted = rows * layers * ple + hidden * layers * ple + ple + layers * (2 * hidden * ple + hidden)
    assert with_ple - weights_of(cli, str(GEMMA4), "--engine", "vllm") == 2 * counted


def test_full_attention_layers_with_their_own_dimensions_keep_their_own_kv(cli):
    # Gemma 4 26B-A4B: 25 sliding layers of 8 KV heads of 256, 5 full-attention layers of 2 of 512
    # (vLLM's Gemma4Attention caches K and V of num_global_key_value_heads x global_head_dim), bf16.
    found = run_json(cli, "estimate", "kv", "--model", str(GEMMA4), "--tokens", "8k")
    assert found["results"]["bytes_per_token"] == 25 * 8 * 256 * 2 * 2 + 5 * 2 * 512 * 2 * 2
    assert found["results"]["bytes_per_sequence"] == 5 * 8000 * 2 * 512 * 2 * 2 + 25 * 1024 * 8 * 256 * 2 * 2
    # Options that replace the model's dimensions replace them on every layer, and say so.
    given = run_json(cli, "estimate", "kv", "--model", str(GEMMA4), "--tokens", "8k", "--head-dim", "128")
    assert given["results"]["bytes_per_token"] == 30 * 8 * 128 * 2 * 2
    assert (
        "--head-dim replaces the model's dimensions on every layer, its full-attention layers' own "
        "(global_head_dim 512) too"
    ) in given["notes"]


def test_the_rooflines_kv_bytes_are_the_kv_estimates_for_layers_of_two_sizes(cli):
    # The roofline sums a sequence's KV by layer group (phase.StepCosts); it must agree with the layer-by-layer
    # sum of `estimate kv` when the full-attention layers keep other bytes a token than the sliding ones.
    kv = run_json(cli, "estimate", "kv", "--model", str(GEMMA4), "--tokens", "8000", "--concurrency", "1")
    found = run_json(
        cli,
        "estimate",
        "roofline",
        "--model",
        str(GEMMA4),
        "--parameters",
        "4000000000",
        "--peak",
        "1e15",
        "--bandwidth",
        "3e12",
        "--scenario",
        "decode",
        "--batch-size",
        "1",
        "--context-tokens",
        "8000",
    )
    per_sequence = kv["results"]["bytes_per_sequence"]
    assert per_sequence == 5 * 8000 * 2 * 512 * 2 * 2 + 25 * 1024 * 8 * 256 * 2 * 2
    assert f"D = weights_bytes + B x KV of C tokens = 8,000,000,000 + 1 x {per_sequence:,} = " in found["formulas"][1]


@pytest.mark.parametrize("tp", [1, 2])
def test_vllm_pages_layers_of_two_sizes_with_one_page_and_larger_blocks_for_the_smaller(cli, tp):
    # vLLM V1's unify_kv_cache_spec_page_size: the full-attention layers' page (16 x 2 x 2/TP heads x 512 x 2 B)
    # is half the sliding layers' (16 x 2 x 8/TP x 256 x 2), so they take blocks of 32 tokens; groups of 5
    # layers (one full, five sliding), tokens = blocks // 6 x 16.
    length = 32768
    found = run_json(
        cli,
        "estimate",
        "memory",
        "--engine",
        "vllm",
        "--model",
        str(GEMMA4),
        "--gpu",
        "a100-sxm-80gb",
        "--max-model-len",
        str(length),
        "-tp",
        str(tp),
    )["results"]
    sliding, full = 2 * (8 // tp) * 256 * 2, 2 * max(1, 2 // tp) * 512 * 2
    page = 16 * sliding
    assert found["kv_bytes_per_token"] == 25 * sliding + 5 * full
    blocks = found["kv_available_bytes"] // page // 5
    assert (found["kv_blocks"], found["kv_pool_tokens"]) == (blocks, blocks // 6 * 16)
    pages = 5 * -(-length // 32) + 25 * (-(-min(1023 + 2048, length) // 16) + 1)
    assert found["max_concurrency"] == round(blocks / -(-pages // 5), 2)


@pytest.mark.parametrize("name", ["max_num_batched_tokens", "max_num_seqs"])
def test_sglang_runs_no_profile_so_its_batch_is_refused_not_ignored(cli, name):
    flag = INPUTS[name].flag
    args = ["estimate", "memory", "--engine", "sglang", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
    result = cli(*args, flag, "64")
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        f"Error: {flag} does not apply with --engine sglang: SGLang sizes its KV pool from --mem-fraction-static "
        "without a profile run, so the batch does not change it; leave it out\n"
    )
    plain = run_json(cli, *args)
    assert plain["workload"] == {} and not {i["name"] for i in plain["inputs"]} & {
        "max_num_batched_tokens",
        "max_num_seqs",
    }


def test_sglang_says_its_total_is_the_free_memory_and_more_so_under_tensor_parallelism(cli):
    args = ["estimate", "memory", "--engine", "sglang", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
    said = {
        tp: next(a for a in run_json(cli, *args, "-tp", str(tp))["assumptions"] if a.startswith("SGLang's total"))
        for tp in (1, 2)
    }
    assert said[1].endswith("invmap takes the device's reported total, a little more.")
    assert "more under tensor parallelism (one TP 4 log's pool implies 2.2 GiB less free memory" in said[2]


def test_a_gpu_without_a_reported_total_asks_for_memory(cli):
    result = cli("estimate", "memory", "--engine", "vllm", "--model", PHI4, "--gpu", "h20")
    assert result.code == 2 and "give --memory with the total your engine logs" in result.err


def test_quantized_weights_are_counted_at_their_formats_bytes(cli):
    base = ("estimate", "memory", "--engine", "vllm", "--memory", "141GB", "--max-model-len", "4096", "-tp", "8")
    v3 = run_json(cli, *base, "--model", str(CONFIGS / "deepseek-ai--DeepSeek-V3"))
    weights = v3["results"]["weights_bytes"] * 8
    assert 640e9 < weights < 700e9  # 671B parameters, linear layers at FP8 with block scales: not 2 bytes each
    oss = run_json(
        cli,
        "estimate",
        "memory",
        "--engine",
        "vllm",
        "--memory",
        "80GB",
        "--model",
        str(CONFIGS / "openai--gpt-oss-20b"),
    )
    assert 11e9 < oss["results"]["weights_bytes"] < 15e9  # MXFP4 experts: about 13 GB, not the 42 GB of bf16


def test_a_phi3_config_is_read_by_its_standard_keys(cli):
    result = run_json(cli, "estimate", "kv", "--model", PHI4, "--tokens", "1000", "--concurrency", "1")
    assert result["results"]["bytes_per_token"] == 40 * 10 * 128 * 2 * 2


def test_an_engine_only_input_without_an_engine_is_refused(cli):
    result = cli("estimate", "memory", "--model", PHI4, "--gpu", "h100-sxm", "--max-num-seqs", "8")
    assert result.code == 2 and "give --engine" in result.err


# --- estimate fit ----------------------------------------------------------------------------------

FIT = ("estimate", "fit", "--model", "llama-3-70b-instruct", "--gpu", "h100-sxm", "--max-model-len", "8192")


def test_fit_tries_each_tensor_parallel_size_and_names_the_smallest_that_holds_the_requests(cli):
    from invmap.quantities import FIT_TENSOR_PARALLEL

    found = run_json(cli, *FIT, "--concurrency", "32")
    scenarios = found["scenarios"]
    assert [s["configuration"]["tensor_parallel"] for s in scenarios] == list(FIT_TENSOR_PARALLEL) == [1, 2, 4, 8]
    concurrency = [s["results"]["max_concurrency"] for s in scenarios]
    assert scenarios[0]["fits"] is False and concurrency == sorted(concurrency)  # 140 GB of weights on one GPU
    chosen = next(s for s in scenarios if s["fits"] and s["results"]["max_concurrency"] >= 32)
    assert found["answer"]["tensor_parallel"] == chosen["configuration"]["tensor_parallel"]
    assert found["answer"]["max_concurrency"] == chosen["results"]["max_concurrency"]
    assert found["verdict"].startswith("The smallest that holds 32 requests of 8,192 tokens: tensor parallel ")
    each = run_json(cli, "estimate", "memory", *FIT[2:], "--engine", "vllm", "-tp", "4")
    assert each["results"] == scenarios[2]["results"]  # a row is `estimate memory --engine` at that size


def test_fit_takes_the_release_and_its_sampler_into_every_size(cli):
    """`fit --engine-version 0.15.1` sizes every row with that release's sort, as `estimate memory` does."""
    found = run_json(cli, *FIT, "--concurrency", "32", "--engine-version", "0.15.1")
    for s in found["scenarios"]:
        assert sampler_input(s) == ("pytorch", "vLLM 0.15.1's default")
    each = run_json(cli, "estimate", "memory", *FIT[2:], "--engine", "vllm", "-tp", "4", "--engine-version", "0.15.1")
    assert each["results"] == found["scenarios"][2]["results"]
    before = cli(*FIT, "--concurrency", "32", "--engine-version", "0.10.1")
    assert before.code == 2 and before.err.startswith("Error: vLLM 0.10.1's profile samples with FlashInfer or")


def test_fit_is_one_table_at_each_width(cli):
    from conftest import screen

    for cols in (60, 80, 120):
        lines = screen([*FIT, "--concurrency", "32"], cols)
        assert lines[0].startswith("The smallest that holds 32 requests")
        assert any(line.startswith("4  8 ") or line.startswith("# 4") for line in lines), lines
        assert all(len(line) <= cols for line in lines)


# What each engine says when the query heads do not divide among the GPUs: vLLM's config check, SGLang's
# attention layer's assertion. Both come before any split of the KV heads.
HEADS_REFUSAL = {
    "vllm": "Total number of attention heads (32) must be divisible by tensor parallel size (3). (vLLM's refusal)",
    "vllm-v0": "Total number of attention heads (32) must be divisible by tensor parallel size (3). (vLLM's refusal)",
    "sglang": "SGLang's attention layer asserts total_num_heads % tp_size == 0: 32 query heads do not divide "
    "among 3 GPUs (the server stops with an AssertionError)",
}


@pytest.mark.parametrize("engine", ENGINES)
def test_an_engine_refuses_query_heads_that_do_not_divide_before_the_kv_heads(cli, engine):
    # Llama 3.1 8B: 32 query heads, 8 KV heads; at TP 3 neither divides, and the engine names the query heads.
    args = ["estimate", "memory", "--engine", engine, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-tp", "3"]
    result = cli(*args)
    assert (result.code, result.out, result.err) == (2, "", f"Error: {HEADS_REFUSAL[engine]}\n")
    as_json = cli(*args, "--json")
    assert (as_json.code, as_json.out) == (2, "")
    # Without an engine the field guide's estimate names the KV heads, the only split it sizes.
    plain = cli("estimate", "kv", "--model", "llama-3.1-8b", "-tp", "3")
    assert (plain.code, plain.err) == (2, "Error: 8 KV heads do not divide among -tp 3 GPUs\n")


def test_fit_refuses_a_size_whose_heads_do_not_divide_with_the_engines_reason(cli):
    found = run_json(
        cli, "estimate", "fit", "--model", "qwen2.5-7b-instruct", "--gpu", "h100-sxm", "--concurrency", "4"
    )
    refused = [s for s in found["scenarios"] if "refused" in s]
    assert [s["scenario"]["flags"]["tensor_parallel"] for s in refused] == [8]
    assert refused[0]["refused"]["reason"] == "heads_split"
    assert (
        "Total number of attention heads (28) must be divisible by tensor parallel size (8)."
        in refused[0]["refused"]["message"]
    )
    assert found["answer"]["tensor_parallel"] == 1


def test_fit_without_a_size_that_holds_them_says_so(cli):
    found = run_json(cli, *FIT, "--concurrency", "100000")
    assert found["answer"] is None and found["verdict"].startswith("No tensor-parallel size up to 8 holds 100,000")


FUSION_LINE = "Initialized FlashInfer Allreduce norm fusion workspace"
V019 = [c for c in CASES if c.scenario is not None and c.log["engine_version"] == "0.19.0"]


@pytest.mark.parametrize("case", V019, ids=[c.name for c in V019])
def test_the_fusion_workspace_is_counted_exactly_where_the_log_says_vllm_created_it(case):
    """vLLM v0.19.0 logs the FlashInfer all-reduce fusion workspace when it creates it; the engine
    model counts it on those logs and on no other (TP 1, PP, A100s)."""
    counted = startup_cases.core.run(case.scenario).estimate.results["non_torch_bytes"] > 0
    assert counted == (FUSION_LINE in (startup_cases.LOGS / case.name).read_text()), case.name


TRITON_MOE_LINE = "Using TRITON backend for Unquantized MoE"


@pytest.mark.parametrize("case", V019, ids=[c.name for c in V019])
def test_the_moe_workspace_is_counted_exactly_where_the_log_says_vllm_ran_the_triton_moe_backend(case):
    """The fused-MoE workspace is counted on the v0.19.0 logs that name the TRITON backend for an
    unquantized MoE and on no other (dense models, MXFP4 experts)."""
    formulas = startup_cases.core.run(case.scenario).estimate.formulas
    counted = any(f.startswith("MoE workspace (vLLM's TritonExperts") for f in formulas)
    assert counted == (TRITON_MOE_LINE in (startup_cases.LOGS / case.name).read_text()), case.name


def test_a_log_that_gives_no_pool_is_not_judged_and_says_so_whatever_the_gpu():
    """A log with no pool figure (SGLang's memory left after the weights, or a refused start-up) is
    never judged, and its reason is the missing pool, not the GPU's missing reported total."""
    no_pool = {c.name: c for c in CASES if startup_cases.logged_available(c.log, per_token=1) is None}
    assert all(c.scenario is None for c in no_pool.values())
    assert no_pool["sglang-deepseek-v3-h200-1.log"].skipped == (
        "the log gives no KV pool to judge by (it logs avail_after_weights_gib)"
    )
    assert no_pool["sglang-deepseek-v4-pro-h200-1.log"].skipped == (
        "the log gives no KV pool to judge by (it logs avail_after_weights_gib, weights_gib)"
    )


# --- the sampler of vLLM V1's profile (--sampler) -----------------------------------------------------

LLAMA_ROWS, LLAMA_VOCAB = 1024, 128256  # vLLM's default 1,024 sequences on an H100; Llama 3.1's vocabulary


def sampled(cli, sampler: str, *more: str) -> dict:
    return run_json(
        cli, "estimate", "memory", "--engine", "vllm", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
        "--sampler", sampler, *more,
    )  # fmt: skip


def test_every_declared_sampler_has_its_reading_and_nothing_else_does():
    assert list(sampling.SAMPLER_PATHS) == list(SAMPLERS)


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_each_sampler_sizes_the_sampler_phase_by_its_bytes_an_element(cli, sampler):
    """The sampler phase holds R x V x (b + s): s = 12 for the Triton kernel and FlashInfer, 36 for the
    PyTorch sort; the activation differs from the default's by exactly R x V x (s - 12), less the Triton
    kernel's buffer (132 x V x 4 on an H100 SXM) for any other sampler, and the formula and the
    limitations name the sampler's own reading."""
    result, default = sampled(cli, sampler), sampled(cli, "triton")
    size, words, left_out = sampling.SAMPLER_PATHS[sampler]
    buffer = 0 if sampler == "triton" else 132 * LLAMA_VOCAB * 4
    extra = LLAMA_ROWS * LLAMA_VOCAB * (size - sampling.SAMPLER_PATHS["triton"].bytes) - buffer
    assert result["results"]["activation_bytes"] == default["results"]["activation_bytes"] + extra
    assert result["results"]["kv_available_bytes"] == default["results"]["kv_available_bytes"] - extra
    peak = next(f for f in result["formulas"] if f.startswith("activation peak = "))
    tail = ", T = 8,192, R = 1,024 = " if sampler != "triton" else " + S x V x 4 (the Triton kernel's cached buffer"
    assert f"R x V x (2 + {size}) ({words}){tail}" in peak, peak
    if sampler == "triton":
        left_out = (
            "it counts the Triton kernel's cached buffer at the device's 132 SMs and leaves nothing of the kernel out."
        )
    assert left_out in " ".join(result["limitations"])
    assert {"name": "sampler", "value": sampler} in [{k: i[k] for k in ("name", "value")} for i in result["inputs"]], (
        result["inputs"]
    )


def test_the_pytorch_sort_of_gpt_oss_at_1024_rows_is_4_5_gib_more_than_the_triton_kernel(cli):
    """The case docs/estimates.md gives: 1,024 rows of gpt-oss's 201,088-token vocabulary, less the
    Triton kernel's own buffer of 132 x 201,088 float32 logits on an H100 SXM."""
    model = ("--model", "gpt-oss-20b", "--gpu", "h100-sxm")
    sort = run_json(cli, "estimate", "memory", "--engine", "vllm", *model, "--engine-version", "0.15.1")
    kernel = run_json(cli, "estimate", "memory", "--engine", "vllm", *model)
    gap = kernel["results"]["kv_available_bytes"] - sort["results"]["kv_available_bytes"]
    assert gap == 1024 * 201088 * 24 - 132 * 201088 * 4 and round(gap / 2**30, 1) == 4.5


def test_the_triton_kernel_sorts_fewer_than_8_rows_as_vllm_does(cli):
    """v0.19.0 runs its Triton kernel on 8 rows or more and the PyTorch sort below."""
    for seqs, same_as in (("7", "pytorch"), ("8", "flashinfer")):
        kernel = sampled(cli, "triton", "--max-num-seqs", seqs)
        other = sampled(cli, same_as, "--max-num-seqs", seqs)
        assert kernel["results"]["activation_bytes"] == other["results"]["activation_bytes"], seqs
    peak = next(f for f in sampled(cli, "triton", "--max-num-seqs", "7")["formulas"] if f.startswith("activation"))
    assert "(vLLM sorts fewer than 8 rows rather than run its Triton kernel)" in peak


@pytest.mark.parametrize("engine", [e for e in ENGINES if e != "vllm"])
def test_the_sampler_is_refused_for_an_engine_that_has_no_such_choice(cli, engine):
    result = cli(
        "estimate", "memory", "--engine", engine, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--sampler", "pytorch"
    )
    assert result.code == 2 and result.out == ""
    why = "SGLang runs no profile" if engine == "sglang" else "invmap reads one V0 profile for every release"
    assert result.err == (
        f"Error: --sampler applies only to --engine vllm, whose profile's sampler it sets ({why}): leave it out\n"
    )


def test_the_sampler_needs_an_engine_and_one_of_its_choices(cli):
    alone = cli("estimate", "memory", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--sampler", "pytorch")
    assert alone.code == 2 and "--sampler describes an engine's start-up" in alone.err, alone.err
    wrong = cli(
        "estimate", "memory", "--engine", "vllm", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--sampler", "x"
    )
    assert wrong.code == 2 and wrong.err == f"Error: --sampler takes one of {', '.join(SAMPLERS)}, not 'x'\n", wrong.err


def test_a_log_that_names_its_sampler_is_estimated_with_it():
    """The judged logs run with the sampler their own lines name (startup_cases.LOG_LINES), else the one
    their index entry's `environment` gives, else the default."""
    for case in CASES:
        if case.scenario is None or case.log["engine"] != "vllm" or not case.log.get("v1"):
            continue
        named = startup_cases.named_settings(case.log).get("sampler")
        assert case.scenario.flags.get("sampler") == named, case.name
    assert any(c.scenario and c.scenario.flags.get("sampler") == "flashinfer" for c in CASES)
    assert any(c.scenario and c.scenario.flags.get("sampler") == "pytorch" for c in CASES)


def sampler_input(result: dict) -> tuple[str, str]:
    found = next(i for i in result["inputs"] if i["name"] == "sampler")
    return found["value"], found["from"]


@pytest.mark.parametrize(("since", "sampler"), sampling.SAMPLER_SINCE)
def test_a_release_from_its_first_version_on_takes_its_sampler(cli, since, sampler):
    """--engine-version decides --sampler's default from the release each change is first in: at that
    release and after it, not before (the release before the first change leaves it to --sampler)."""
    first = ".".join(map(str, since))
    assert sampler_input(sampled_at(cli, first)) == (sampler, f"vLLM {first}'s default")
    assert sampler_input(sampled_at(cli, f"v{first}.post1")) == (sampler, f"vLLM v{first}.post1's default")
    earlier = [s for s in sampling.SAMPLER_SINCE if s[0] < since]
    before = f"{since[0]}.{since[1] - 1}.9"
    if earlier:
        assert sampler_input(sampled_at(cli, before))[0] == earlier[-1][1]
    else:
        result = cli("estimate", "memory", *V1_LLAMA, "--engine-version", before)
        assert result.code == 2 and result.out == ""
        assert result.err.startswith(f"Error: vLLM {before}'s profile samples with FlashInfer or with the PyTorch sort")
        assert result.err.endswith("give --sampler flashinfer or --sampler pytorch\n")
        given = sampled_at(cli, before, "--sampler", "flashinfer")
        assert sampler_input(given) == ("flashinfer", "option")


V1_LLAMA = ("--engine", "vllm", "--model", "llama-3.1-8b", "--gpu", "h100-sxm")


def sampled_at(cli, version: str, *more: str) -> dict:
    return run_json(cli, "estimate", "memory", *V1_LLAMA, "--engine-version", version, *more)


def test_without_a_release_the_sampler_is_the_release_reads_and_an_option_wins_over_a_release(cli):
    assert sampler_input(run_json(cli, "estimate", "memory", *V1_LLAMA)) == (
        "triton",
        "vLLM v0.19.0's default (the release read)",
    )
    assert sampler_input(sampled_at(cli, "0.15.1", "--sampler", "triton")) == ("triton", "option")
    release = next(i for i in sampled_at(cli, "0.15.1")["inputs"] if i["name"] == "engine_version")
    assert (release["value"], release["from"]) == ("0.15.1", "option")


@pytest.mark.parametrize("version", ["x", "0.15", "1", "0.15.1.2.3", "0.15.1\x1b[31m", "", "0.15.1 beta"])
def test_a_release_that_is_not_one_is_refused(cli, version):
    result = cli("estimate", "memory", *V1_LLAMA, "--engine-version", version)
    if version == "0.15":  # a release as people shorten it: 0.15 is 0.15.0
        assert result.code == 0, result.err
        return
    assert result.code == 2 and result.out == ""
    assert result.err.startswith("Error: --engine-version takes a release such as 0.15.1 or v0.10.1.1, not ")
    assert "\x1b" not in result.err


@pytest.mark.parametrize("engine", [e for e in ENGINES if e != "vllm"])
def test_a_release_is_refused_for_an_engine_it_does_not_apply_to(cli, engine):
    result = cli("estimate", "memory", "--engine", engine, "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                 "--engine-version", "0.15.1")  # fmt: skip
    assert result.code == 2
    assert result.err.startswith("Error: --engine-version applies only to --engine vllm"), result.err


def test_the_readme_and_the_estimates_page_say_the_counts_the_logs_give():
    """The error on real logs as the front door and docs/estimates.md state it, from the judged logs
    themselves: a log that moves in or out of the target, or a new log, fails here until the pages
    say so."""
    import math
    import re
    import statistics

    repo = Path(__file__).parent.parent
    readme = " ".join((repo / "README.md").read_text(encoding="utf-8").split())
    page = " ".join((repo / "docs" / "estimates.md").read_text(encoding="utf-8").split())
    judged = [j for j in JUDGED.values() if j.error is not None]
    halves = {h: [j for j in judged if j.case.log["held_out"] == h] for h in (False, True)}
    counts = {h: (sum(j.ok for j in half), len(half)) for h, half in halves.items()}
    assert f"on {counts[False][0]} of {counts[False][1]} development start-up logs and {counts[True][0]} of " in readme
    assert f"{counts[True][1]} held-out ones" in readme
    assert f"runs the {len(CASES)} start-up logs of" in page and f"{len(judged)} can be judged" in page
    for held_out, words in ((False, "development half"), (True, "held-out half")):
        errors = sorted(abs(j.error) for j in halves[held_out])
        median, p90 = statistics.median(errors), errors[math.ceil(0.9 * len(errors)) - 1]
        found = re.search(rf"{words} (\d+) of (\d+) .*?median(?: absolute error)? ([\d.]+)%, p90 ([\d.]+)%", page)
        assert found, words
        assert (int(found[1]), int(found[2])) == counts[held_out]
        assert (float(found[3]), float(found[4])) == (round(100 * median, 1), round(100 * p90, 1)), words
    sweep = [j for j in judged if "llm-d-incubation/llm-d-planner" in j.case.log["source"]]
    rest = [j for j in judged if j not in sweep]
    assert f"{len(sweep)} of the {len(judged)} ({sum(j.ok for j in sweep)} within)" in page
    assert f"of the {len(rest)} judged logs from elsewhere, {sum(j.ok for j in rest)} are within" in page


def test_a_release_that_subtracts_its_cuda_graph_estimate_is_named_in_what_is_left_out(cli):
    """From v0.21.0 vLLM takes its measured CUDA-graph estimate out of the pool by default; invmap does not
    size it, and says so for the release given (the generic sentence otherwise)."""
    since = ".".join(map(str, engine_model.GRAPH_ESTIMATE_SINCE))
    later = " ".join(sampled_at(cli, since)["limitations"])
    assert later.startswith(f"vLLM {since} subtracts a measured CUDA-graph estimate from the pool by default")
    assert "which invmap does not size: the pool it logs is smaller by that figure" in later
    for release in ("0.20.9", "0.15.1"):
        earlier = " ".join(sampled_at(cli, release)["limitations"])
        assert earlier.startswith("vLLM v0.19.0, the release read, captures CUDA graphs after the pool is sized")


def test_a_release_before_v1_was_the_default_asks_for_the_v0_engine(cli):
    before = "0.7.3"
    result = cli("estimate", "memory", *V1_LLAMA, "--engine-version", before)
    assert result.code == 2 and result.out == ""
    assert result.err == (
        f"Error: vLLM {before} runs its V0 engine by default (V1 is the default from v0.8.0): give --engine "
        "vllm-v0, or leave --engine-version out and give --sampler for V1 on that release\n"
    )
    first = ".".join(map(str, sampling.V1_DEFAULT_SINCE))
    assert "runs its V0 engine" not in cli("estimate", "memory", *V1_LLAMA, "--engine-version", first).err


GPTQ_LLAMA = str(CONFIGS / "TheBloke--Llama-2-13B-chat-GPTQ")  # a quantized dense Llama


def runner_sampler(cli, model: str, release: str) -> tuple[str, str]:
    return sampler_input(
        run_json(cli, "estimate", "memory", "--engine", "vllm", "--model", model, "--gpu", "h100-sxm",
                 "--max-model-len", "4096", "--engine-version", release)
    )  # fmt: skip


def test_model_runner_v2_takes_the_models_its_release_notes_name(cli):
    """--engine-version puts a dense model on Model Runner V2's greedy profile from the release its notes
    name for its family (Qwen3 0.22.0, Llama and Mistral 0.23.0, every dense model 0.25.0), a quantized
    one from 0.24.0; MoE models stay on the V1 runner."""
    mrv2 = ("greedy", "vLLM {}'s default, Model Runner V2 for this model")
    cases = [
        ("qwen3-8b", "0.21.0", False), ("qwen3-8b", "0.22.0", True),
        ("llama-3.1-8b", "0.22.0", False), ("llama-3.1-8b", "0.23.0", True),
        ("mistral-7b-instruct-v0.1", "0.23.0", True),
        ("qwen2.5-7b-instruct", "0.24.0", False), ("qwen2.5-7b-instruct", "0.25.0", True),
        (GPTQ_LLAMA, "0.23.0", False), (GPTQ_LLAMA, "0.24.0", True),
        ("mixtral-8x7b-instruct-v0.1", "0.25.0", False), ("gpt-oss-20b", "0.25.0", False),
    ]  # fmt: skip
    for model, release, on_v2 in cases:
        found = runner_sampler(cli, model, release)
        if on_v2:
            assert found == (mrv2[0], mrv2[1].format(release)), (model, release)
        else:
            assert found == ("triton", f"vLLM {release}'s default"), (model, release)
    assert [r[0] for r in sampling.MRV2_SINCE] == [(0, 22, 0), (0, 23, 0), (0, 24, 0), (0, 25, 0)]


def test_model_runner_v2_says_it_subtracts_nothing_for_cuda_graphs(cli):
    result = run_json(cli, "estimate", "memory", *V1_LLAMA, "--sampler", "greedy")
    said = " ".join(result["limitations"])
    assert said.startswith("Model Runner V2 estimates its CUDA graphs at 0")
    assert sampling.SAMPLER_PATHS["greedy"].left_out in said
    peak = next(f for f in result["formulas"] if f.startswith("activation peak = "))
    assert "R x V x (2 + 4) (Model Runner V2's greedy dummy run: float32 logits 4)" in peak


def test_a_scenario_giving_the_release_as_a_number_is_refused_as_the_option_is():
    """Through the API (an agent's tool, a script), a release must be text as the log prints it."""
    scenario = startup_cases.core.Scenario(
        "memory", model="llama-3.1-8b", gpu="h100-sxm", flags={"engine": "vllm", "engine_version": 0.15}
    )
    refusal = startup_cases.core.run(scenario).refusal
    assert (refusal.reason, refusal.inputs, refusal.status) == ("bound", ("engine_version",), 2)
    assert refusal.message == "--engine-version takes a release such as 0.15.1 or v0.10.1.1, not 0.15"
