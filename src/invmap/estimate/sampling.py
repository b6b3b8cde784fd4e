"""What vLLM V1's profile run holds beside the model's own tensors, read in source: which code answers
its dummy sampling (--sampler, by release), the bytes each path keeps an element, the Triton kernel's
cached buffer, and PyTorch's cuBLAS workspace. Used by `engine` for the activation term."""

from __future__ import annotations

from typing import NamedTuple

from invmap.estimate.checks import FLAGS
from invmap.estimate.config import Model
from invmap.estimate.gpus import Gpu
from invmap.estimate.inputs import From, Inputs
from invmap.estimate.refusals import Refused
from invmap.estimate.weights import Weights, moe_keys
from invmap.quantities import read_version


# The sampler's dummy run (vllm/v1/worker/gpu_model_runner.py:5556-5632 at v0.19.0; the same request at the
# v0.10 line, :2432-2452 at 0fc8fa751a43): top-k V - 1 and top-p 0.9 on R rows of V logits in the model's
# dtype, copied to float32 (vllm/v1/sample/sampler.py:90). Bytes an element beyond the model-dtype logits
# at the sampler's peak, by the code that answers it (--sampler; ENGINES.md, "Sampler path by version"):
# - triton: the float32 probabilities and exponential noise of random_sample after vLLM's Triton
#   top-k/top-p kernel (vllm/v1/sample/ops/topk_topp_sampler.py:112, :334 at v0.19.0), 4 + 4 + 4;
# - flashinfer: FlashInfer's top_k_top_p_sampling_from_logits, "top_k_first": the top-k-masked logits
#   (empty_like) and their softmax (flashinfer/sampling.py:1316-1318 at v0.6.6, :979-981 at v0.2.11),
#   4 + 4 + 4;
# - pytorch: logits.sort in apply_top_k_top_p (topk_topp_sampler.py:195 at 0fc8fa751a43), torch's
#   segmented radix sort for 128 rows or more (aten/src/ATen/native/cuda/SortStable.cu,
#   segmented_sort_pairs): the float32 copy 4, the sorted values 4 and int64 indices 8, torch's int64
#   index input 8 and CUB's third keys and values buffers 4 + 8 (DeviceSegmentedRadixSort::SortPairs
#   without double buffers), 36. Fewer than 128 rows sort through torch's other paths, not read: counted
#   the same.
class SamplerPath(NamedTuple):
    """One code path of the profile's sampler: bytes an element beside the model-dtype logits at its
    peak, what they are (the formula's words), and what the reading leaves out (the limitations')."""

    bytes: int
    words: str
    left_out: str


SAMPLER_PATHS: dict[str, SamplerPath] = {
    "triton": SamplerPath(
        12,
        "vLLM's Triton top-k/top-p kernel: float32 logits, probabilities and noise, 4 + 4 + 4",
        "left out of it is the cached buffer of vLLM's Triton top-k/top-p kernel, min(next power of 2 of "
        "min(SMs, R), SMs) x V x 4 bytes (about 0.06 GiB for a 128k vocabulary on 132 SMs), as invmap's GPU "
        "table gives no SM count for the device.",
    ),
    "flashinfer": SamplerPath(
        12,
        "FlashInfer's sampler: float32 logits, top-k-masked logits and probabilities, 4 + 4 + 4",
        "left out of it is the 1 MiB row-state buffer FlashInfer v0.6.6 keeps for its top-k kernel.",
    ),
    "pytorch": SamplerPath(
        36,
        "the PyTorch sort: float32 logits 4, sorted values 4, int64 indices 8, torch's int64 index input 8, "
        "CUB's third keys and values 4 + 8",
        "torch's sort was read in a stored copy of its source, not at the torch each vLLM release pins, and "
        "a sort of fewer than 128 rows takes other paths, not read (counted as the segmented sort).",
    ),
    # Model Runner V2 (vllm/v1/worker/gpu/, read at EmbeddedLLM/vllm@f7fc0ca9933f, the v0.25 line): its
    # dummy rows are greedy and ask for no top-k or top-p, so the sampler copies the logits to float32
    # (gpu/sample/sampler.py:156-157) and takes an argmax (ENGINES.md, "Model Runner V2, read for issue 42").
    "greedy": SamplerPath(
        4,
        "Model Runner V2's greedy dummy run: float32 logits 4",
        "Model Runner V2 was read at main of 2026-07-08 (the v0.25 line), not at a tag; from #47711 (release "
        "not pinned) it keeps the logits in the model's dtype, R x V x 4 bytes less than counted here.",
    ),
}
# v0.19.0's apply_top_k_top_p runs the Triton kernel for 8 rows or more, the PyTorch sort below
# (topk_topp_sampler.py:251-255).
TRITON_MIN_ROWS = 8
# The Triton kernel's one buffer, kept in a module-level cache once made and alive with the probabilities
# and the noise (apply_top_k_top_p_triton, vllm/v1/sample/ops/topk_topp_triton.py, _TRITON_BUFFER_CACHE):
# logits.new_empty((size, V)) in float32, size = min(next_power_of_2(min(SMs, R)), SMs), SMs the device's
# multiprocessor count (num_compute_units); the GPU's `multiprocessors` figure in data/gpus.toml.
TRITON_BUFFER_BYTES = 4
# PyTorch's cuBLAS workspace (aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize and
# setCublasWorkspace): one a (device, stream), from torch's caching allocator at the first cuBLAS call
# and kept, so the profile's first matmul puts it in the torch peak; cuBLASLt shares it where torch
# unifies the two (the default from pytorch/pytorch#168175), else keeps its own of 1 MiB, left out.
# The default, CUBLAS_WORKSPACE_CONFIG unset: ":4096:2:16:8" (4096 KiB x 2 + 16 KiB x 8) below compute
# capability 9.0, 32 MiB (4096 KiB x 8) on 9.x (pytorch/pytorch#89027, re-landed as #91564 in January
# 2023). On 10.x and 12.x it moved between torch releases (32 MiB from #175344, February 2026), and ROCm's
# hipBLAS default was not read at the torch vLLM pins for it, so there it is left out. By capability // 10:
CUBLAS_WORKSPACE: dict[int, int] = {7: (4096 * 2 + 16 * 8) * 1024, 8: (4096 * 2 + 16 * 8) * 1024, 9: 4096 * 8 * 1024}
# The sampler a vLLM release runs by default, from its first release on (--engine-version; ENGINES.md,
# "Sampler path by version", first releases): #26859 (FlashInfer's sampler opt-in, the PyTorch sort
# otherwise) is first in v0.11.1, by its documentation page; #33538 (the Triton kernel) in v0.17.0, by
# llm-d-planner's version sweep, whose profile drops by the sort's R x V x 24 bytes between v0.16.0 and
# v0.17.0. #40376 turned FlashInfer's sampler back on by default (its first release is not pinned): the
# same 12 bytes an element as the Triton kernel's. Before v0.11.1 the install decides (FlashInfer's
# sampler whenever flashinfer imports, an optional extra then), so no default is taken.
SAMPLER_SINCE: tuple[tuple[tuple[int, int, int], str], ...] = (((0, 11, 1), "pytorch"), ((0, 17, 0), "triton"))
# The releases from which Model Runner V2 runs a model by default, by model_type (None: every dense
# model), as each release's notes say (ENGINES.md, "Which release makes it the default"): Qwen3 dense
# models from v0.22.0 (#39337); Llama and Mistral dense models too from v0.23.0 (#43458), unquantized until
# #44446 (in v0.24.0, by v0.25.0's notes); every dense model from v0.25.0 (#44443). MoE models are left on
# the V1 runner here (the MoE rollouts, #42667 and #45461, are not pinned to a release).
MRV2_SINCE: tuple[tuple[tuple[int, int, int], frozenset[str] | None, bool], ...] = (
    ((0, 22, 0), frozenset({"qwen3"}), False),
    ((0, 23, 0), frozenset({"qwen3", "llama", "mistral"}), False),
    ((0, 24, 0), frozenset({"qwen3", "llama", "mistral"}), True),
    ((0, 25, 0), None, True),
)  # (first release, model types, quantized models too)
# vLLM V1 is the default engine from v0.8.0 ("We have now enabled V1 engine by default", #13726, as the
# v0.8.0 release notes say, quoted in vllm-project/vllm-ascend#557); earlier releases ran V0 unless told.
V1_DEFAULT_SINCE = (0, 8, 0)


def cublas_words(gpu: Gpu | None) -> str:
    """Where the cuBLAS workspace's size comes from, or why it is not counted."""
    if cublas_workspace(gpu):
        shown = gpu.reading("compute_capability").value  # type: ignore[union-attr]
        return f"PyTorch's default for compute capability {shown}"
    if gpu is None:
        return "a device given by --memory has no compute capability"
    if gpu.vendor != "NVIDIA":
        return "ROCm's hipBLAS default was not read at the torch vLLM pins for it"
    if gpu.capability is None:
        return "invmap's table gives no compute capability for the device"
    return "on compute capability 10.x and later PyTorch's default moved between releases"


def cublas_workspace(gpu: Gpu | None) -> int:
    """PyTorch's default cuBLAS workspace for the GPU's compute capability (CUBLAS_WORKSPACE); 0 where
    invmap does not count it (no capability in the table, 10.x and later, an AMD GPU)."""
    capability = gpu.capability if gpu is not None and gpu.vendor == "NVIDIA" else None
    return CUBLAS_WORKSPACE.get(capability // 10, 0) if capability else 0


def pick_sampler(inputs: Inputs, engine: str, model: Model, weights: Weights) -> str:
    """The code that answers vLLM V1's profile sampling: --sampler, else the default of the
    --engine-version given (Model Runner V2's greedy run where MRV2_SINCE puts the model on it, else
    SAMPLER_SINCE), else v0.19.0's; "" for another engine (which has no such choice: both options are
    refused when given)."""
    if engine != "vllm":
        why = "SGLang runs no profile" if engine == "sglang" else "invmap reads one V0 profile for every release"
        for name in ("engine_version", "sampler"):
            if inputs.options.get(name) is not None:
                raise Refused(
                    "clash",
                    f"{FLAGS[name]} applies only to --engine vllm, whose profile's sampler it sets ({why}): leave it out",
                    name,
                )
        return ""
    release = inputs.options.get("engine_version")
    by_release = None
    if release is not None:
        version = read_version(inputs.pick("engine_version"))
        if version < V1_DEFAULT_SINCE:
            raise Refused(
                "clash",
                f"vLLM {release} runs its V0 engine by default (V1 is the default from v0.8.0): give --engine vllm-v0, "
                "or leave --engine-version out and give --sampler for V1 on that release",
                "engine_version",
                "engine",
            )
        by_release = "greedy" if on_mrv2(model, weights, version) else None
        by_release = by_release or next((s for since, s in reversed(SAMPLER_SINCE) if version >= since), None)
        if by_release is None and inputs.options.get("sampler") is None:
            raise Refused(
                "needs",
                f"vLLM {release}'s profile samples with FlashInfer or with the PyTorch sort as its install decides "
                "(its log says 'Using FlashInfer for top-p & top-k sampling' or warns 'Falling back to the "
                "PyTorch-native implementation'): give --sampler flashinfer or --sampler pytorch",
                "sampler",
                "engine_version",
            )
    words = From("invmap", "vLLM v0.19.0's default (the release read)")
    if by_release:
        runner = ", Model Runner V2 for this model" if by_release == "greedy" else ""
        words = From("invmap", f"vLLM {release}'s default{runner}")
    return str(inputs.pick("sampler", (by_release or "triton", words)))


def on_mrv2(model: Model, weights: Weights, version: tuple[int, int, int]) -> bool:
    """Whether the release runs this model on Model Runner V2 by default (MRV2_SINCE): a dense model of
    a listed type (any type from v0.25.0), quantized only from v0.24.0."""
    if moe_keys(model)[0]:
        return False
    quantized = weights.format is not None
    rule = next((r for r in reversed(MRV2_SINCE) if version >= r[0]), None)
    if rule is None:
        return False
    _, types, with_quantized = rule
    return (types is None or model.config.get("model_type") in types) and (with_quantized or not quantized)


def sampler_bytes(sampler: str, rows: int) -> tuple[int, str]:
    """Bytes a sampled element holds at the sampler's peak beyond its model-dtype logit, and what they
    are: the --sampler's; the PyTorch sort's when the Triton kernel is given fewer than 8 rows."""
    if sampler == "triton" and rows < TRITON_MIN_ROWS:
        size, words, _ = SAMPLER_PATHS["pytorch"]
        return size, f"{words} (vLLM sorts fewer than {TRITON_MIN_ROWS} rows rather than run its Triton kernel)"
    return SAMPLER_PATHS[sampler][:2]


def triton_rows(sampler: str, rows: int, gpu: Gpu | None) -> int:
    """The rows of the Triton kernel's cached buffer, min(next power of 2 of min(SMs, R), SMs); 0 when
    the profile does not run the kernel or the GPU's SM count is not known."""
    sms = gpu.multiprocessors if gpu is not None else None
    if sampler != "triton" or rows < TRITON_MIN_ROWS or not sms:
        return 0
    programs = min(sms, rows)
    return min(1 << (programs - 1).bit_length(), sms)


def sampler_left_out(sampler: str, rows: int, gpu: Gpu | None) -> str:
    """What the reading of the profile's sampler leaves out; the Triton kernel's buffer is counted
    where the GPU's SM count is known."""
    if triton_rows(sampler, rows, gpu):
        return (
            "it counts the Triton kernel's cached buffer at the device's "
            f"{gpu.multiprocessors} SMs and leaves nothing of the kernel out."  # type: ignore[union-attr]
        )
    return SAMPLER_PATHS[sampler].left_out
