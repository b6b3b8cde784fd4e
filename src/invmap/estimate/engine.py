"""`estimate memory --engine vllm|vllm-v0|sglang`: the engine's start-up, term by term, as its code
computes it (tests/fixtures/startup-logs/ENGINES.md cites each line read in the engines' source):
the weights each GPU holds, the activation peak of vLLM's profiling run, the non-torch memory, then
the KV pool at the utilization fraction, in blocks, its tokens, the maximum concurrency for
--max-model-len and the engine's refusal when one request does not fit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from invmap.estimate.checks import FLAGS
from invmap.estimate.config import Model, optional_int
from invmap.estimate.encoders import encoder_sentences
from invmap.estimate.gpus import Gpu
from invmap.estimate.inputs import MODEL, From, Inputs, gpu_part, model_part
from invmap.estimate.kvshape import KvShape, kv_shape
from invmap.estimate.layout import Layout, layout_of
from invmap.estimate.refusals import Refused, RefusedFile
from invmap.estimate.result import Estimate, Said, estimate_result
from invmap.estimate.sampling import (
    TRITON_BUFFER_BYTES,
    cublas_words,
    cublas_workspace,
    pick_sampler,
    sampler_bytes,
    sampler_left_out,
    triton_rows,
)
from invmap.estimate.tensors import rounding, unlisted
from invmap.estimate.units import human_bytes, parse_size
from invmap.estimate.weights import Weights, count, moe_keys, rope_caches, round_up, vllm_mxfp4_experts
from invmap.quantities import INPUTS, read_version, vllm_serve_batch

GIB = 2**30
MIB = 2**20
# vLLM v0.19.0's profile (tests/fixtures/startup-logs/ENGINES.md, "Non-torch memory"): its non-torch
# term is measured (device use minus torch's reservation, from the snapshot taken after NCCL starts
# to after the profile), so only the buffers whose size the source declares are counted here. The one
# such buffer created after the snapshot is the FlashInfer all-reduce + RMSNorm fusion workspace,
# switched on for TP > 1 without PP or DP on compute capability 9.0 and 10.x
# (vllm/config/vllm.py:116-135). Its largest message, in MB, by capability and TP size
# (vllm/compilation/passes/fusion/allreduce_rms_fusion.py:54-69):
FI_FUSION_MAX_MB: dict[int, dict[int, float]] = {
    90: {2: 64, 4: 2, 8: 0.5},
    100: {2: 64, 4: 32, 8: 1},
    103: {2: 64, 4: 64, 8: 2},
}
# vLLM's MXFP4 MoE kernel by the GPU (get_mxfp4_backend; ENGINES.md, "MXFP4 expert weights"): Triton
# needs compute capability 9.0 to 10.x (and triton_kernels, torch 2.8 or later), else Marlin, which
# pads the experts more. As `Gpu.capability`: Marlin below 90. invmap picks the kernel only below 100:
# on 10.x vLLM may take a FlashInfer kernel instead (not read), so there the option's declared
# default stands.
MXFP4_MARLIN_BELOW = 90
MXFP4_READ_BELOW = 100
# The GPU's compute capability is its `compute_capability` figure in data/gpus.toml (sourced there);
# a GPU without one, or a device given only by --memory, gets no workspace.
# FlashInfer's SymmDeviceMemory raises when CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED is 0
# (flashinfer/comm/mnnvl.py:929-939 at v0.6.6), and vLLM v0.19.0 then runs without the workspace, warning
# that "This is expected on GPUs without NVSwitch (e.g., NVLink bridge-only or PCIe topologies)"
# (vllm/distributed/device_communicators/flashinfer_all_reduce.py:63-76); on 4 x H100 PCIe the attribute
# is 0 (HazyResearch/ThunderKittens#149). A GPU whose link in invmap's table is PCIe gets no workspace.
# FlashInfer v0.6.6 (the version vLLM v0.19.0 pins, requirements/cuda.txt) sizes the workspace in
# flashinfer/comm/trtllm_ar.py:574-599 and allocates each of its three buffers with a 2 KiB signal pad
# (flashinfer/comm/mnnvl.py:58, :1131-1133).
FI_BARRIER_FLAGS = 256  # BarrierFlagCount (trtllm_ar.py:503)
FI_MAX_COMM = 2147483647 & ~((1 << 21) - 1)  # MAX_COMM_SIZE (trtllm_ar.py:505)
FI_ALIGN = 1 << 21  # each buffer rounded up to 2 MiB (trtllm_ar.py:599)
FI_SIGNAL_PAD = 2048  # SIGNAL_PAD_SIZE (mnnvl.py:58)
# Each buffer then becomes a SymmDeviceMemory whose size FlashInfer rounds up to the driver's
# allocation granularity and then to its multicast granularity, both RECOMMENDED, even with
# enable_multicast=False (mnnvl.py:1111-1149), and allocates with cuMemCreate (:1159): one physical
# allocation per buffer on each GPU. The driver reports both values at run time; the only stored
# statement of them for a GPU of invmap's table is a measurement on 8 x H100 80GB HBM3 with NVSwitch,
# driver 570.211.01: "MINIMUM 2 MiB, RECOMMENDED 512 MiB; cuMemGetAllocationGranularity(RECOMMENDED)
# is 2 MiB" (gabrieldemarmiesse/torch-mojo-backend@31de5a4754b4b85c0cc026e955035619305c002d,
# agents_docs/mojo_collectives_nvls_results.md, section 1). (allocation, multicast) in bytes, by GPU:
DRIVER_GRANULARITY: dict[str, tuple[int, int]] = {"h100-sxm": (2 * MIB, 512 * MIB)}


# What torch's caching allocator holds for the weights beyond their bytes (estimate/allocator.py): vLLM's
# "Model loading took" reads memory_allocated, the blocks handed out; SGLang's weights are the free memory
# they take, the segments reserved. By whether the engine reads segments:
ROUNDING_WORDS = {
    False: "the blocks torch's caching allocator hands out whole, where a tensor would leave 1 MiB or less",
    True: "the segments torch's caching allocator reserves, rounded up to 2 MiB",
}
# The first release that subtracts its measured CUDA-graph estimate from the pool by default, as vLLM's own
# start-up line says: "CUDA graph memory profiling is enabled (default since v0.21.0)" (ENGINES.md,
# "CUDA-graph memory in newer V1"). invmap does not size the estimate; its limitations name the release.
GRAPH_ESTIMATE_SINCE = (0, 21, 0)
# vLLM v0.19.0's MoE layers without quantized experts run the TRITON backend on CUDA
# (vllm/model_executor/layers/fused_moe/oracle/unquantized.py:71-186, logged "Using TRITON backend for
# Unquantized MoE") as a modular kernel whose buffers come from the worker's WorkspaceManager
# (modular_kernel.py:1009-1070, vllm/v1/worker/workspace.py:90-192, made at init_device,
# gpu_worker.py:291-293): one allocation, grown to the largest request and then kept, so the forward's
# MoE workspace is still held while the sampler's dummy run follows. TritonExperts.workspace_shapes
# (fused_moe.py:1976-1991): workspace13 max(M x k x max(N/2, K), M x K) and workspace2
# M x k x max(N, K) in the activation dtype, N = w13's rows per GPU (2 x I/TP), K = hidden; each view
# rounded up to 256 bytes (workspace.py:102). M is the whole profile batch: no chunking at v0.19.0
# (modular_kernel.py:1189-1199 passes M_full as the chunk).
MOE_WORKSPACE_ALIGN = 256
# vLLM V0's profile keeps invmap's earlier reading, the forward's tensors plus R x V logits in the
# model's dtype and two float32 copies (logits and probabilities). V0's sampler was read since
# (ENGINES.md, "V0's sampler in the profile"): its sort holds R x V x (b + 36) from v0.6.2, under a
# measurement that changed at v0.6.4; the V0 logs do not support one term for every release, so the
# earlier reading stays and the estimate says so.
V0_SAMPLER_FLOAT_COPIES = 2


@dataclass
class Setup:
    """The settings of one start-up: engine, parallelism, the device and the profile's batch."""

    engine: str
    experts: int | None  # one MoE layer's experts per GPU as vLLM pads them (MXFP4), else None
    kernel: str  # the MXFP4 MoE kernel that padding is vLLM's for ("" when none)
    sampler: str  # the code answering vLLM V1's profile sampling (--sampler; "" for another engine)
    tp: int
    pp: int
    memory: int
    utilization: float
    batched_tokens: int
    seqs: int
    block: int
    max_model_len: int
    compute_bytes: int
    gpu: Gpu | None  # the GPU of invmap's table (its capability, link, vendor), None for a device given by --memory
    moe_workspace: int = 0  # vLLM V1's fused-MoE workspace, held from the forward through the sampler run
    moe_words: str = ""  # how it was sized, or why it is not counted ("" for a dense model)
    cublas: int = 0  # PyTorch's cuBLAS workspace, taken by the profile's first matmul (0: not counted)
    unlisted: str = ""  # why the weights' tensors are not listed for the allocator's rounding ("": they are)
    release: str = ""  # --engine-version as given ("" when not)
    rope: list[tuple[int, int]] = field(default_factory=list)  # the RoPE caches (rows, columns), on every stage

    @property
    def sampled(self) -> int:
        """R, the rows the sampler's dummy run samples: one a sequence, at most one a token."""
        return min(self.batched_tokens, self.seqs)

    @property
    def triton_rows(self) -> int:
        """The rows of the Triton kernel's cached buffer (0: not counted)."""
        return triton_rows(self.sampler, self.sampled, self.gpu)


@dataclass
class Stage:
    """One pipeline stage's GPU: its layers, weights, activation peak and non-torch memory."""

    layers: range
    weights: int  # the allocator's rounding included
    rounding: int  # what torch's caching allocator holds for the weights beyond their bytes
    activation: int
    non_torch: int
    non_torch_words: str
    windows: list[int | None]


def engine_estimate(options: dict[str, Any], model: Model | None, gpu: Gpu | None) -> Estimate:
    """The engine's start-up for `options["engine"]` on `gpu` (or --memory), for a --model."""
    if model is None:
        raise Refused("needs", "--engine needs a --model (its config sizes every term)", "engine", "model")
    inputs = Inputs(options, "memory")
    layout = layout_of(model)
    tp = options.get("tensor_parallel") or INPUTS["tensor_parallel"].default.value  # before the KV heads split
    _check_heads(layout, tp, options["engine"])
    shape, tp_lines, notes = kv_shape(inputs, model, layout)
    weights = count(model, inputs.pick("quantization"))
    setup = _setup(inputs, model, layout, gpu, shape, weights)
    _check_pages(setup, shape, model)
    stages = [_stage(setup, model, layout, weights, s) for s in _stage_layers(layout.layers, setup.pp)]
    pool = _pool(setup, shape, stages)
    formulas = [*_formulas(setup, weights, stages, pool), *tp_lines]
    results, units = _results(setup, pool)
    fits, verdict = _verdict(setup, pool)
    said = Said(formulas, _assumptions(setup, model, weights, gpu, options), _limitations(setup), list(notes))
    # The profile's batch; SGLang profiles none, so its workload is empty.
    workload = {} if setup.engine == "sglang" else {"batch_size": setup.seqs, "sequence_length": setup.batched_tokens}
    return estimate_result(
        "memory", inputs, model, gpu, results, units, said, workload, {"fits": fits, "verdict": verdict}
    )


# --- the settings ------------------------------------------------------------------------------


def _check_heads(layout: Layout, tp: int, engine: str) -> None:
    """The engine's first refusal of a tensor-parallel size, before the KV heads are split: vLLM checks
    the query heads (`ModelConfig.verify_with_parallel_config`); SGLang's attention layers assert it
    (`LlamaAttention.__init__`, sgl-project/sglang@00239548:python/sglang/srt/models/llama.py)."""
    if layout.attention_heads % tp == 0:
        return
    heads = layout.attention_heads
    if engine == "sglang":
        message = (
            f"SGLang's attention layer asserts total_num_heads % tp_size == 0: {heads} query heads do not "
            f"divide among {tp} GPUs (the server stops with an AssertionError)"
        )
    else:
        message = (
            f"Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp}). "
            "(vLLM's refusal)"
        )
    raise Refused("heads_split", message, "tensor_parallel")


def _setup(inputs: Inputs, model: Model, layout: Layout, gpu: Gpu | None, shape: KvShape, weights: Weights) -> Setup:
    engine = inputs.options["engine"]
    inputs.add("engine", engine, "", From("option", "option"))
    tp = shape.tensor_parallel
    pp = inputs.pick("pipeline_parallel")
    if pp > layout.layers:
        raise Refused(
            "stages",
            f"--pipeline-parallel {pp} exceeds the model's {layout.layers} layers",
            "pipeline_parallel",
        )
    memory = _device_memory(inputs, gpu)
    util = inputs.pick("gpu_memory_utilization", _default_fraction(engine, memory, tp * pp))
    max_len = inputs.pick("tokens_per_request", (layout.max_positions, model_part("max_position_embeddings")))
    if max_len is None:
        raise Refused(
            "needs",
            "--engine needs --max-model-len (the config names no max_position_embeddings)",
            "tokens_per_request",
        )
    batched, seqs = _batch(inputs, engine, memory, gpu, max_len)
    default_block = 1 if engine == "sglang" else 64 if layout.kind == "latent" else 16
    block = inputs.options.get("block_size") or default_block
    inputs.add(
        "block_size",
        block,
        "tokens",
        From("option", "option") if inputs.options.get("block_size") else From("invmap", f"{engine}'s default"),
    )
    experts, kernel = _padded_experts(inputs, model, weights, engine, tp, gpu)
    sampler = pick_sampler(inputs, engine, model, weights)
    workspace, workspace_words = _moe_workspace(model, weights, engine, tp, batched, layout.dtype_bytes or 2)
    rope = rope_caches(model.config, model.where)
    cublas = cublas_workspace(gpu) if engine == "vllm" else 0
    why = unlisted(model, weights)
    return Setup(
        engine,
        experts,
        kernel,
        sampler,
        tp,
        pp,
        memory,
        util,
        batched,
        seqs,
        block,
        max_len,
        layout.dtype_bytes or 2,
        gpu,
        workspace,
        workspace_words,
        cublas,
        why,
        str(inputs.options.get("engine_version") or ""),
        rope,
    )


def _moe_workspace(model: Model, weights: Weights, engine: str, tp: int, tokens: int, b: int) -> tuple[int, str]:
    """vLLM V1's (v0.19.0) fused-MoE workspace for the profile's `tokens`, when its experts are not
    quantized (the TRITON backend's TritonExperts); 0 and why not otherwise, "" for a dense model."""
    c, where = model.config, model.where
    k, moe_inter = moe_keys(model)
    if not k:
        return 0, ""
    if engine != "vllm":
        return 0, "no MoE workspace (vLLM V1's WorkspaceManager only)"
    fmt = weights.experts_stored_as
    if fmt is not None:
        return 0, f"no MoE workspace counted ({fmt.name} experts run another MoE backend, not read)"
    hidden = optional_int(c, "hidden_size", where) or 0
    inter = (moe_inter or optional_int(c, "intermediate_size", where) or 0) // tp
    n = 2 * inter
    w13 = max(tokens * k * max(n // 2, hidden), tokens * hidden) * b
    w2 = tokens * k * max(n, hidden) * b
    total = sum(-(-size // MOE_WORKSPACE_ALIGN) * MOE_WORKSPACE_ALIGN for size in (w13, w2))
    words = (
        f"MoE workspace (vLLM's TritonExperts, held from the forward through the sampler run) = "
        f"max(T x k x max(N/2, H), T x H) x b + T x k x max(N, H) x b, each rounded up to 256 B; "
        f"T {tokens:,}, k {k}, N = 2 x I/TP = {n:,}, H {hidden:,}, b {b} = {total:,} B ({human_bytes(total)})"
    )
    return total, words


def _padded_experts(
    inputs: Inputs, model: Model, weights: Weights, engine: str, tp: int, gpu: Gpu | None
) -> tuple[int | None, str]:
    """vLLM's MXFP4 experts, padded as the MoE kernel --mxfp4-backend names needs them (None for any
    other model or engine: the experts are counted as the config gives them). Without the option, the
    kernel vLLM picks for the GPU's compute capability (MXFP4_MARLIN_BELOW), else Triton."""
    fmt = weights.format
    if engine == "sglang" or fmt is None or fmt.name != "mxfp4" or "experts" not in fmt.covers:
        if inputs.options.get("mxfp4_backend") is not None:
            why = "the SGLang estimate has no such choice" if engine == "sglang" else f"{model.name} has none"
            raise Refused(
                "clash",
                f"--mxfp4-backend applies only to vLLM with a model whose experts are MXFP4 ({why}): leave it out",
                "mxfp4_backend",
            )
        return None, ""
    capability = gpu.capability if gpu is not None else None
    default = None
    if capability is not None and capability < MXFP4_READ_BELOW:
        shown = gpu.reading("compute_capability").value  # type: ignore[union-attr]
        if capability < MXFP4_MARLIN_BELOW:
            words = f"vLLM's choice for compute capability {shown} (its Triton kernel needs 9.0 or later)"
            default = ("marlin", From("invmap", words))
        else:
            words = f"vLLM's choice for compute capability {shown} (with triton_kernels and torch 2.8 or later)"
            default = ("triton", From("invmap", words))
    kernel = inputs.pick("mxfp4_backend", *([default] if default else []))
    return vllm_mxfp4_experts(model, tp, kernel), kernel


def _device_memory(inputs: Inputs, gpu: Gpu | None) -> int:
    """The total the device reports (what the engine multiplies): --memory, else the GPU table's
    reported total; a GPU without one is refused rather than guessed."""
    given = inputs.options.get("memory")
    if given is not None:
        value = parse_size(str(given))
        inputs.add("memory", value, "bytes", From("option", "option"))
        return value
    if gpu is None:
        raise Refused(
            "needs", "--engine needs a device: give --gpu or --memory (the total the device reports)", "gpu", "memory"
        )
    if gpu.memory_reported_bytes is None:
        raise Refused(
            "gpu_figure",
            f"invmap's table has no total {gpu.display} reports to CUDA (what the engine multiplies by its "
            "utilization; the datasheet's figure is larger): give --memory with the total your engine logs "
            "or torch.cuda.mem_get_info() gives, for example 79.15GiB",
            "memory",
            "gpu",
        )
    reported = gpu.reading("memory_reported")
    inputs.add("memory", gpu.memory_reported_bytes, "bytes", gpu_part(f"{reported.shown()} as the device reports it"))
    return gpu.memory_reported_bytes


def _default_fraction(engine: str, memory: int, parallel: int) -> tuple[float | None, From]:
    """vLLM's 0.9; SGLang v0.5.2's mem_fraction_static for the GPU's capacity and TP x PP
    (python/sglang/srt/server_args.py:452-498)."""
    if engine != "sglang":
        return 0.9, From("invmap", "vLLM's default")
    mib = memory / 2**20
    if mib < 35 * 1024:
        reserved = (2.8 + parallel / 10) * 1024
    elif mib < 90 * 1024:
        reserved = (9.5 + parallel / 2) * 1024
    elif mib < 160 * 1024:
        reserved = (12 + parallel / 2) * 1024
    else:
        reserved = 32 * 1024
    return round((mib - reserved) / mib, 3), From("invmap", "SGLang v0.5.2's default for this memory and TP x PP")


def _batch(inputs: Inputs, engine: str, memory: int, gpu: Gpu | None, max_len: int) -> tuple[int, int]:
    """The profile's batch (tokens, sequences): the options, else the engine's defaults. SGLang runs no
    profile (its pool is --mem-fraction-static of the free memory less the weights), so the batch is
    not an input there and either option is refused rather than ignored."""
    tokens, seqs = _batch_defaults(engine, memory, gpu, max_len)
    if engine == "sglang":
        for name in ("max_num_batched_tokens", "max_num_seqs"):
            if inputs.options.get(name) is not None:
                raise Refused(
                    "clash",
                    f"{FLAGS[name]} does not apply with --engine sglang: SGLang sizes its KV pool from "
                    "--mem-fraction-static without a profile run, so the batch does not change it; leave it out",
                    name,
                    "engine",
                )
        return tokens[0], min(seqs[0], tokens[0])
    batched = inputs.pick("max_num_batched_tokens", tokens)
    return batched, min(inputs.pick("max_num_seqs", seqs), batched)


def _batch_defaults(
    engine: str, memory: int, gpu: Gpu | None, max_len: int
) -> tuple[tuple[int, From], tuple[int, From]]:
    """The profile's batch when not given: vLLM V1 `vllm serve` defaults by device (8192 tokens and
    1024 sequences on 70 GiB or more unless an A100, else 2048 and 256); V0: chunked prefill above
    32,768 tokens (2,048 tokens), else max(max_model_len, 2048), and 256 sequences."""
    if engine == "vllm":
        tokens, seqs = vllm_serve_batch(memory, gpu.display if gpu is not None else "")
        words = From("invmap", "vLLM V1's `vllm serve` default for this device")
        return (tokens, words), (seqs, words)
    words = From("invmap", "vLLM V0's default")
    tokens = 2048 if max_len > 32768 else max(max_len, 2048)
    return (tokens, words), (256, words)


def _stage_layers(layers: int, pp: int) -> list[range]:
    """vLLM's split of the layers over pipeline stages: layers // pp each, the remainder one more on
    each stage but the last (vllm/distributed/utils.py get_pp_indices)."""
    sizes = [layers // pp] * pp
    for i in range(layers % pp):
        sizes[i] += 1
    out, start = [], 0
    for size in sizes:
        out.append(range(start, start + size))
        start += size
    return out


# --- each stage's terms --------------------------------------------------------------------------


def _stage(setup: Setup, model: Model, layout: Layout, weights: Weights, layers: range) -> Stage:
    first, last = layers.start == 0, layers.stop == layout.layers
    tied = bool(model.config.get("tie_word_embeddings"))
    rope = _rope_sizes(setup)
    extra = (
        0 if setup.unlisted else rounding(model, weights, setup.tp, layers, first, last, rope, setup.engine == "sglang")
    )
    held = weights.per_gpu_bytes(setup.tp, layers, first, last, tied, setup.experts) + sum(rope) + extra
    activation = _activation(setup, model, last)
    non_torch, words = _non_torch(setup, model)
    kv_end = layout.layers - layout.kv_shared  # the layers after it keep no KV of their own
    windows = [layout.windows[i] for i in layers if i < kv_end]
    if not windows:
        raise Refused(
            "stages",
            f"--pipeline-parallel {setup.pp} gives a stage only layers that share earlier layers' KV "
            f"(layers {layers.start}-{layers.stop - 1}; num_kv_shared_layers {layout.kv_shared}): it would hold no KV cache",
            "pipeline_parallel",
        )
    return Stage(layers, held, extra, activation, non_torch, words, windows)


def _check_pages(setup: Setup, shape: KvShape, model: Model) -> None:
    """vLLM V1's refusal where layers' pages cannot be made one size by a larger block
    (`unify_kv_cache_spec_page_size`: the largest page must be a multiple of every other)."""
    sizes = sorted({shape.layer_token(w) for w in shape.windows})
    if setup.engine == "vllm" and any(sizes[-1] % b for b in sizes):
        raise RefusedFile(
            "config",
            model.where,
            "The page size of the layer is not divisible by the maximum page size. Cannot unify by adjusting "
            f"block_size. (vLLM's refusal: its layers keep {' and '.join(f'{b:,}' for b in sizes)} B of KV a token)",
            "global_head_dim",
        )


def _rope_sizes(setup: Setup) -> list[int]:
    """Each RoPE cache's bytes on one GPU (whole on each: the buffers are not split by TP)."""
    return [rows * columns * setup.compute_bytes for rows, columns in setup.rope]


def _non_torch(setup: Setup, model: Model) -> tuple[int, str]:
    """The non-torch buffers vLLM V1 (v0.19.0) creates after its start snapshot whose size its source
    declares: the FlashInfer all-reduce fusion workspace, when the fusion is on (else 0, and why).
    Each of its three buffers is rounded up to 2 MiB plus a 2 KiB signal pad; FlashInfer then rounds
    each allocation to the driver's allocation and multicast granularity, counted where a stored
    source states them for the GPU (DRIVER_GRANULARITY), else left out."""
    if setup.engine != "vllm":
        return 0, "nothing the source sizes (the engine measures it)"
    gpu = setup.gpu
    capability = gpu.capability if gpu is not None else None
    shown = gpu.reading("compute_capability").value if gpu is not None else None  # "9.0"
    sizes = FI_FUSION_MAX_MB.get(capability or 0, {})
    why = _no_fusion(setup, capability, shown, sizes)
    if why:
        return 0, f"no FlashInfer all-reduce fusion workspace ({why})"
    c, where = model.config, model.where
    hidden = optional_int(c, "hidden_size", where) or 0
    b = setup.compute_bytes
    max_bytes = int(sizes[setup.tp] * MIB)
    tokens = min(max_bytes // (hidden * b), setup.batched_tokens) if hidden else 0
    buffer = setup.tp * tokens * hidden * 2
    flags = setup.tp * FI_BARRIER_FLAGS * 4
    lamport = 3 * min(setup.tp * tokens * hidden * (4 if b == 4 else 2), FI_MAX_COMM)
    padded = [round_up(size, FI_ALIGN) + FI_SIGNAL_PAD for size in (buffer, flags, lamport)]
    rounding = "each rounded up to 2 MiB + 2 KiB"
    granularity = DRIVER_GRANULARITY.get(gpu.name) if gpu is not None else None
    if granularity is not None:
        allocation, multicast = granularity
        padded = [round_up(round_up(size, allocation), multicast) for size in padded]
        rounding += (
            f", then to the driver's allocation granularity ({human_bytes(allocation)}) and multicast granularity "
            f"({human_bytes(multicast)}) for this GPU"
        )
    words = (
        f"FlashInfer all-reduce fusion workspace, compute capability {shown}, "
        f"TP {setup.tp}: "
        f"N = min({sizes[setup.tp]:g} MiB / (H {hidden:,} x {b} B), T {setup.batched_tokens:,}) = {tokens:,} tokens; "
        f"buffer TP x N x H x 2, flags TP x {FI_BARRIER_FLAGS} x 4, Lamport 3 x TP x N x H x 2, {rounding}"
    )
    return sum(padded), words


def _no_fusion(setup: Setup, capability: int | None, shown: object, sizes: dict[int, float]) -> str:
    """Why vLLM v0.19.0 creates no FlashInfer fusion workspace for this start-up ("" when it does)."""
    gpu = setup.gpu
    if setup.tp == 1:
        return "one GPU"
    if setup.pp > 1:
        return "pipeline parallelism"
    if gpu is not None and gpu.vendor == "AMD":
        return "an AMD GPU: vLLM turns the fusion on only on CUDA"
    if capability is None:
        return "invmap's table gives no compute capability for the device"
    if capability not in FI_FUSION_MAX_MB:
        return f"compute capability {shown}: vLLM turns it on for 9.0 and 10.x"
    if setup.tp not in sizes:
        return f"TP {setup.tp} is not one the fusion supports"
    if gpu is not None and gpu.reading("interconnect").value == "PCIe":
        return (
            "GPUs linked by PCIe have no multicast, so FlashInfer refuses the workspace and vLLM warns: "
            "'expected on GPUs without NVSwitch'"
        )
    return ""


def _activation(setup: Setup, model: Model, last: bool) -> int:
    """vLLM's profiling run (profile_run, vllm/v1/worker/gpu_model_runner.py:5721-5792 at v0.19.0):
    the forward pass of `max_num_batched_tokens` tokens, then, on the last stage, the sampler's dummy
    run while the forward's output is still held; the torch peak is the larger of the two phases.
    The forward's peak is invmap's reading of its largest tensors (the hidden and residual states
    and the largest MLP intermediates: gate-up and activation outputs, or the fused-MoE caches of
    top-k experts), not read in the model's code. The sampler phase is as the source sizes it: the
    forward's hidden states (T x H) and the R rows it samples (`hidden_states[logit_indices]` and
    their `rand_like`, :5553, :5569), then R x V logits in the model's dtype and three float32
    copies of them, R = min(T, max_num_seqs) (:5286). SGLang runs no profile."""
    if setup.engine == "sglang":
        return 0
    c, where, b, tokens = model.config, model.where, setup.compute_bytes, setup.batched_tokens
    hidden = optional_int(c, "hidden_size", where) or 0
    forward = 2 * tokens * hidden * b
    experts_used, moe_inter = moe_keys(model)
    inter = optional_int(c, "intermediate_size", where) or 0
    if setup.moe_workspace:
        forward += setup.moe_workspace
    elif experts_used:
        n = (moe_inter or inter) // setup.tp
        forward += tokens * experts_used * (3 * n + hidden) * b
    else:
        forward += tokens * 3 * (inter // setup.tp) * b
    if not last:
        return setup.cublas + forward
    if setup.engine == "vllm-v0":
        vocab = optional_int(c, "vocab_size", where) or 0
        return forward + setup.seqs * vocab * (b + 4 * V0_SAMPLER_FLOAT_COPIES)
    return setup.cublas + max(forward, setup.moe_workspace + _sampler_phase(setup, model))


def _sampler_phase(setup: Setup, model: Model) -> int:
    c, where, b = model.config, model.where, setup.compute_bytes
    hidden = optional_int(c, "hidden_size", where) or 0
    vocab = optional_int(c, "vocab_size", where) or 0
    rows = setup.sampled
    buffer = setup.triton_rows * vocab * TRITON_BUFFER_BYTES
    return (
        (setup.batched_tokens + 2 * rows) * hidden * b
        + rows * vocab * (b + sampler_bytes(setup.sampler, setup.sampled)[0])
        + buffer
    )


# --- the pool -------------------------------------------------------------------------------------


@dataclass
class Pool:
    """The pool of the stage with the fewest blocks (the engine takes the minimum over workers)."""

    stage: Stage
    budget: int
    available: int
    paging: Paging
    blocks: int
    tokens: int
    per_request: int  # bytes of KV one request of max_model_len needs
    blocks_per_request: int
    concurrency: float
    longest: int  # the largest max_model_len one request fits in


def _pool(setup: Setup, shape: KvShape, stages: list[Stage]) -> Pool:
    pools = [_stage_pool(setup, shape, s) for s in stages]
    return min(pools, key=lambda p: (p.tokens, p.available))


def _stage_pool(setup: Setup, shape: KvShape, stage: Stage) -> Pool:
    budget = int(setup.memory * setup.utilization)
    if setup.engine == "sglang":
        available = budget - stage.weights  # rest = free x fraction - weights (model_runner.py)
    else:
        available = budget - stage.weights - stage.activation - stage.non_torch
    paging = Paging(setup, shape, stage.windows)
    if setup.engine == "vllm":
        group, groups = _groups(stage.windows)
        blocks = max(available, 0) // paging.page // group
        tokens = blocks // groups * min(paging.blocks)
        per_request_blocks = -(-paging.request_pages(setup.max_model_len) // group)
        concurrency = blocks / per_request_blocks if per_request_blocks else 0.0
    else:
        blocks = max(available, 0) // (setup.block * paging.per_token)
        tokens = blocks * setup.block
        per_request_blocks = -(-setup.max_model_len // setup.block)
        concurrency = tokens / setup.max_model_len
    per_request = paging.request_bytes(setup.max_model_len)
    longest = _longest(setup, paging, available, tokens)
    return Pool(stage, budget, available, paging, blocks, tokens, per_request, per_request_blocks, concurrency, longest)


class Paging:
    """How one stage's layers page their KV (vLLM V1, kv_cache_utils.py): each layer's bytes per token,
    and the page every layer is given, that of the largest (`unify_kv_cache_spec_page_size`: a layer
    with a smaller page takes a block size larger by the ratio, so that its page is as large)."""

    def __init__(self, setup: Setup, shape: KvShape, windows: list[int | None]) -> None:
        self.setup, self.windows = setup, windows
        self.bytes = [shape.layer_token(w) for w in windows]
        self.per_token = sum(self.bytes)
        self.page = setup.block * max(self.bytes)
        self.blocks = [self.page // b for b in self.bytes]  # each layer's block size in tokens

    def layer_pages(self, i: int, length: int) -> int:
        """Pages layer `i` needs for one request of `length` (kv_cache_interface.py max_memory_usage_bytes):
        full attention cdiv(length, block); a sliding window cdiv(min(W - 1 + max_num_batched_tokens,
        length), block) + 1."""
        block, window = self.blocks[i], self.windows[i]
        if window is None or self.setup.engine != "vllm":
            return -(-length // block)
        return -(-min(window - 1 + self.setup.batched_tokens, length) // block) + 1

    def request_pages(self, length: int) -> int:
        return sum(self.layer_pages(i, length) for i in range(len(self.windows)))

    def request_bytes(self, length: int) -> int:
        """The KV one request of `length` needs: SGLang's tokens x bytes; vLLM's pages."""
        if self.setup.engine == "sglang":
            return length * self.per_token
        return self.request_pages(length) * self.page


def _groups(windows: list[int | None]) -> tuple[int, int]:
    """vLLM V1's KV cache groups: layers of each attention type in groups of the smallest type's count
    (one group for a uniform model); returns (layers per group, number of groups)."""
    counts: dict[int | None, int] = {}
    for w in windows:
        counts[w] = counts.get(w, 0) + 1
    size = min(counts.values())
    return size, sum(-(-n // size) for n in counts.values())


def _longest(setup: Setup, paging: Paging, available: int, tokens: int) -> int:
    """The largest max_model_len one request fits in: V1's binary search over the request's memory
    (kv_cache_utils.py estimate_max_model_len); V0 and SGLang: the pool's tokens."""
    if setup.engine != "vllm":
        return min(tokens, setup.max_model_len) if tokens < setup.max_model_len else setup.max_model_len
    low, high = 0, setup.max_model_len
    while low < high:
        mid = (low + high + 1) // 2
        if paging.request_bytes(mid) <= available:
            low = mid
        else:
            high = mid - 1
    return low


# --- what is said --------------------------------------------------------------------------------


def _results(setup: Setup, pool: Pool) -> tuple[dict[str, Any], dict[str, str]]:
    s = pool.stage
    results = {
        "memory_bytes": setup.memory,
        "budget_bytes": pool.budget,
        "weights_bytes": s.weights,
        "activation_bytes": s.activation,
        "non_torch_bytes": s.non_torch,
        "kv_available_bytes": pool.available,
        "kv_bytes_per_token": pool.paging.per_token,
        "kv_blocks": pool.blocks,
        "kv_pool_tokens": pool.tokens,
        "max_concurrency": round(pool.concurrency, 2),
        "longest_request_tokens": pool.longest,
    }
    units = dict.fromkeys(results, "bytes")
    units.update(
        kv_blocks=f"blocks of {setup.block} token{'s' if setup.block != 1 else ''}",
        kv_pool_tokens="tokens",
        max_concurrency=f"requests of {setup.max_model_len:,} tokens",
        longest_request_tokens="tokens",
    )
    return results, units


def _verdict(setup: Setup, pool: Pool) -> tuple[bool, str]:
    """The engine's own words: the pool it logs, or its refusal."""
    if pool.available <= 0:
        if setup.engine == "sglang":
            return False, "Not enough memory. Please try to increase --mem-fraction-static. (SGLang's refusal)"
        return False, (
            "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
            "the engine. (vLLM's refusal)"
        )
    if setup.engine == "vllm" and pool.per_request > pool.available:
        return False, (
            f"To serve at least one request with the models's max seq len ({setup.max_model_len}), "
            f"({pool.per_request / GIB:.2f} GiB KV cache is needed, which is larger than the available KV cache "
            f"memory ({pool.available / GIB:.2f} GiB). Based on the available memory, the estimated maximum model "
            f"length is {pool.longest}. (vLLM's refusal)"
        )
    if setup.engine == "vllm-v0" and pool.tokens < setup.max_model_len:
        return False, (
            f"The model's max seq len ({setup.max_model_len}) is larger than the maximum number of tokens that can "
            f"be stored in KV cache ({pool.tokens}). (vLLM's refusal)"
        )
    if setup.engine == "sglang":
        return True, f"KV Cache is allocated. #tokens: {pool.tokens} ({human_bytes(pool.available)} of K and V)"
    return True, (
        f"Available KV cache memory: {pool.available / GIB:.2f} GiB; GPU KV cache size: {pool.tokens:,} tokens; "
        f"Maximum concurrency for {setup.max_model_len:,} tokens per request: {pool.concurrency:.2f}x"
    )


def _formulas(setup: Setup, weights: Weights, stages: list[Stage], pool: Pool) -> list[str]:
    s, b = pool.stage, setup.compute_bytes
    lines = [
        f"budget = memory x utilization = {setup.memory:,} x {setup.utilization:g} = {pool.budget:,} B "
        f"({human_bytes(pool.budget)})",
        f"weights (per GPU) = counted parameters {weights.parameters:,}, "
        + (f"{weights.format.name} linear modules at {weights.format.bytes_per_weight:g} B, " if weights.format else "")
        + (
            f"routed experts as {weights.expert_format.name} at {weights.expert_format.bytes_per_weight:g} B, "
            if weights.expert_format
            else ""
        )
        + f"the rest at {weights.dtype_bytes} B, / TP {setup.tp}"
        + (
            f" (each MoE layer's experts as vLLM's {setup.kernel} MXFP4 kernel pads them: {setup.experts:,} B)"
            if setup.experts is not None
            else ""
        )
        + (f", layers {s.layers.start}-{s.layers.stop - 1} of {len(stages)} stages" if setup.pp > 1 else "")
        + (
            f", + RoPE caches {' + '.join(f'{r:,} x {c}' for r, c in setup.rope)} x {setup.compute_bytes} B "
            f"({human_bytes(sum(_rope_sizes(setup)))})"
            if setup.rope
            else ""
        )
        + (
            f", + allocator rounding {s.rounding:,} B ({ROUNDING_WORDS[setup.engine == 'sglang']})"
            if s.rounding
            else ""
        )
        + f" = {s.weights:,} B ({human_bytes(s.weights)})",
    ]
    if setup.engine != "sglang":
        held = "W + " if setup.moe_workspace else ""
        forward = (
            "2 x T x H x b + W (the MoE workspace)"
            if setup.moe_workspace
            else "2 x T x H x b + MLP intermediates (T x 3 x I/TP x b, or T x k x (3 x I_e/TP + H) x b)"
        )
        if setup.engine == "vllm-v0":
            shape = f"{forward} + sampler R x V x ({b} + 4 x {V0_SAMPLER_FLOAT_COPIES})"
        else:
            size, words = sampler_bytes(setup.sampler, setup.sampled)
            shape = (
                f"max(forward, sampler): forward = {forward}; sampler (last stage) = {held}(T + 2R) x H x b + "
                f"R x V x ({b} + {size}) ({words})"
                + (
                    f" + S x V x {TRITON_BUFFER_BYTES} (the Triton kernel's cached buffer, S = min(next power of 2 "
                    f"of min(SMs {setup.gpu.multiprocessors}, R), SMs) = {setup.triton_rows})"  # type: ignore[union-attr]
                    if setup.triton_rows
                    else ""
                )
            )
            if setup.cublas:
                shape = f"cuBLAS workspace {setup.cublas:,} B ({cublas_words(setup.gpu)}) + {shape}"
        if setup.moe_words:
            lines.append(setup.moe_words)
        lines.append(
            f"activation peak = {shape}, T = {setup.batched_tokens:,}, R = {setup.seqs if setup.engine == 'vllm-v0' else setup.sampled:,} "
            f"= {s.activation:,} B ({human_bytes(s.activation)})"
        )
        lines.append(f"non-torch = {s.non_torch_words} = {s.non_torch:,} B ({human_bytes(s.non_torch)})")
        lines.append(
            f"available KV = budget - weights - activation - non-torch = {pool.budget:,} - {s.weights:,} - "
            f"{s.activation:,} - {s.non_torch:,} = {pool.available:,} B ({human_bytes(pool.available)})"
        )
    else:
        lines.append(
            f"rest (K + V) = memory x mem_fraction_static - weights = {pool.budget:,} - {s.weights:,} = "
            f"{pool.available:,} B ({human_bytes(pool.available)})"
        )
    lines.append(_pool_formula(setup, pool))
    lines.append(
        f"max concurrency = blocks / blocks per request of {setup.max_model_len:,} tokens = {pool.concurrency:.2f}x"
        + ("" if setup.engine != "sglang" else " (SGLang logs no concurrency: tokens / context length)")
    )
    return lines


def _pool_formula(setup: Setup, pool: Pool) -> str:
    """The pool in blocks and tokens; with layers of two sizes, each size's bytes and block."""
    paging = pool.paging
    sizes = sorted(set(zip(paging.bytes, paging.blocks, strict=True)), reverse=True)
    if len(sizes) == 1:
        return (
            f"KV per layer and token = {paging.bytes[0]:,} B; pool = {pool.blocks:,} blocks of {setup.block} token{'s' if setup.block != 1 else ''} "
            f"= {pool.tokens:,} tokens (floor(available / (block x per-layer bytes x layers)))"
        )
    if setup.engine != "vllm":
        each = "; ".join(f"{paging.bytes.count(b)} layers of {b:,} B a token" for b, _ in sizes)
        return (
            f"KV per token = {paging.per_token:,} B ({each}); pool = {pool.blocks:,} blocks of {setup.block} token{'s' if setup.block != 1 else ''} "
            f"= {pool.tokens:,} tokens (floor(available / (block x KV per token)))"
        )
    each = "; ".join(
        f"{paging.bytes.count(b)} layers of {b:,} B a token in blocks of {block} tokens" for b, block in sizes
    )
    return (
        f"KV per token = {paging.per_token:,} B ({each}: one page of {paging.page:,} B, as vLLM unifies the page "
        f"size); pool = {pool.blocks:,} blocks = {pool.tokens:,} tokens (blocks / groups x the smallest block)"
    )


def _assumptions(setup: Setup, model: Model, weights: Weights, gpu: Gpu | None, options: dict[str, Any]) -> list[str]:
    said = [
        f"Weights are counted from the config's keys ({weights.parameters:,} parameters), "
        + (f"linear modules as {weights.format.words}; " if weights.format else "")
        + (f"routed experts as {weights.expert_format.words}; " if weights.expert_format else "")
        + "embeddings, norms and routers at the model's dtype; split evenly over the tensor-parallel GPUs "
        "except norms and routers.",
    ]
    said += encoder_sentences(model)
    if setup.engine == "vllm":
        said.append(
            "Non-torch memory counts only buffers whose size vLLM's source declares (v0.19.0: the FlashInfer "
            "all-reduce fusion workspace under TP). Left out, as vLLM measures it rather than sizing it: whatever "
            "else is allocated outside torch while loading and profiling (communication buffers, "
            "attention-backend workspaces, CUDA modules, its CUDA-graph estimate's graphs) and, on a GPU without a "
            "stated driver granularity, the workspace's rounding to it; vLLM's DEBUG line 'non-torch forward increase "
            "memory' prints the measured total. The CUDA context and NCCL's start-up are in its start snapshot, "
            "outside the pool arithmetic."
        )
    elif setup.engine == "vllm-v0":
        said.append(
            "Non-torch memory is left out (0): vLLM V0 measures it (NCCL and cuBLAS buffers; in v0.6.4 everything "
            "on the device outside torch) and no source line sizes it."
        )
    else:
        said.append(
            "SGLang's total is the free memory after its CUDA context and NCCL start; invmap takes the device's "
            "reported total, a little more"
            + (
                ", and more under tensor parallelism (one TP 4 log's pool implies 2.2 GiB less free memory than "
                "the device's total, tests/fixtures/startup-logs/ENGINES.md), so the pool is likely smaller."
                if setup.tp > 1
                else "."
            )
        )
    return said


def _limitations(setup: Setup) -> list[str]:
    graphs = (
        "CUDA graphs are captured after the pool is sized (vLLM V0; SGLang keeps them in 1 - mem_fraction_static), "
        "so they are not subtracted"
    )
    if setup.engine == "vllm" and setup.sampler == "greedy":
        graphs = (
            "Model Runner V2 estimates its CUDA graphs at 0 (profile_cudagraph_memory, at the v0.25 line) and "
            "captures them after the pool is sized, so nothing is subtracted for them"
        )
    elif setup.engine == "vllm":
        release = read_version(setup.release) if setup.release else None
        graphs = (
            f"vLLM {setup.release} subtracts a measured CUDA-graph estimate from the pool by default (since "
            "v0.21.0, not with --enforce-eager; its log: 'Estimated CUDA graph memory: ... GiB total'; "
            "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 turns it off), which invmap does not size: the pool it logs "
            "is smaller by that figure"
            if release is not None and release >= GRAPH_ESTIMATE_SINCE
            else "vLLM v0.19.0, the release read, captures CUDA graphs after the pool is sized and subtracts nothing "
            "for them; from v0.21.0 vLLM subtracts a measured estimate by default (its log: 'Estimated CUDA graph "
            "memory: ... GiB total'; VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 turns it off), which invmap does "
            "not size, so on those releases the pool is smaller by that figure"
        )
    out = [
        f"{graphs}; a multimodal encoder's profile, LoRA, speculative decoding and other processes on the device are "
        "left out."
    ]
    if setup.engine != "sglang":
        out.append(
            "The forward pass's activation peak is invmap's reading of its largest tensors, not the model code's "
            "allocations; "
            + (
                "V0's sampler term is invmap's reading too (the source's, read since, depends on the release)."
                if setup.engine == "vllm-v0"
                else f"the sampler phase is read in source; {sampler_left_out(setup.sampler, setup.sampled, setup.gpu)}"
            )
        )
    if setup.unlisted:
        out.append(
            "The weights leave out what PyTorch's caching allocator holds beyond their bytes (whole blocks where a "
            "tensor would leave 1 MiB or less of its segment; SGLang: the segments, rounded up to 2 MiB), as "
            f"invmap lists this model's tensors only in total: {setup.unlisted}."
        )
    if setup.engine == "vllm" and not setup.cublas:
        out.append(
            "PyTorch's cuBLAS workspace, which the profile's first matmul takes (32 MiB on an H100), is left out: "
            f"{cublas_words(setup.gpu)}."
        )
    return out


__all__ = ["engine_estimate", "MODEL"]
