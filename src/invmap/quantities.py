"""The inputs of the estimates, each declared once: its name, its options (the first is the one
messages name; the others are aliases), unit, kind, bounds, default (with whose default it is: the
field guide's `ie` or invmap's own), help, and the config.json keys read as it. What an estimate
needs besides (`--gpu` or `--memory` for a KV pool) is declared here too, as `Needs`.

Everything else is derived from these: the estimate commands' options and their help (`options.py`),
the input lists and the bound checks of the core (`estimate/checks.py`, for options and for the
config keys bounded as their option is), the defaults an estimate falls back on
(`estimate/inputs.py`), and what the every-command-by-every-format test gives a command that needs
an option. A variant of an input for one estimate (`--parameters` is the active parameters in a
roofline) is the same declaration `_replace`d, keeping its options, kind and bounds.

No typing, no typer, no pydantic: a TAB press reads this module (through `options.py`).
"""

from __future__ import annotations

from collections import namedtuple

# Bounds past which a size is a typo, not a model.
MAX_PARAMETERS = 10**14
MAX_LAYERS = 10**4
MAX_TOKENS = 10**9
MAX_COUNT = 10**9  # sequences, batch, heads, dimensions, experts
MAX_BYTES_PER_ELEMENT = 16
MAX_MEMORY = 10**15  # bytes: a petabyte on one device
MAX_RATE = 1e21  # operations or bytes per second
MAX_AMOUNT = 1e30  # operations or bytes in one modelled step
MAX_WEIGHTS = MAX_PARAMETERS * MAX_BYTES_PER_ELEMENT  # bytes of weights (a safetensors index's total_size)
MAX_ROPE_FACTOR = 1024  # a rope's scaling factor (Gemma 3's linear 8, gpt-oss's YaRN 32, DeepSeek's 40)

KINDS = ("kv", "memory", "roofline")  # the estimates
# Engines `estimate memory --engine` models the start-up of: vLLM's V1 engine (the default since v0.8 and
# the only one later), vLLM's V0 engine (up to v0.7), SGLang's memory pool sizing.
ENGINES: tuple[str, ...] = ("vllm", "vllm-v0", "sglang")
# vLLM's MXFP4 MoE kernels as they shape the expert weights (Mxfp4MoEMethod.create_weights): Triton pads
# the per-GPU intermediate size to a multiple of 64; Marlin (GPUs below compute capability 9.0, or Hopper
# without the triton_kernels package) pads it to 128 and the hidden size to 256.
MXFP4_BACKENDS: tuple[str, ...] = ("triton", "marlin")
# The engine's quantization of an unquantized checkpoint while it loads (vLLM's and SGLang's
# --quantization) that the weights count: fp8, each linear layer's weight at one byte with one scale.
QUANTIZATIONS: tuple[str, ...] = ("fp8",)
# The code vLLM V1 answers its profile's dummy top-k/top-p sampling with, which sizes the sampler's peak
# (tests/fixtures/startup-logs/ENGINES.md, "Sampler path by version"): its Triton kernel (v0.19.0, the
# release read; from #33538, 2026-02-17), FlashInfer's sampler (on the v0.10 line whenever flashinfer
# imports; later with VLLM_USE_FLASHINFER_SAMPLER=1) or the PyTorch sort (the v0.10 line without
# FlashInfer, and the default from #26859, 2025-10-14, to #33538).
# Model Runner V2 (`greedy`, the default for dense models from v0.25.0) samples its profile greedily.
SAMPLERS: tuple[str, ...] = ("triton", "flashinfer", "pytorch", "greedy")


def shown_number(value: object) -> str:
    """A number as a message quotes it: grouped digits, and an integer too long to read as its
    magnitude (`about 1.0e+400`), never hundreds of digits."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float):
        return f"{value:g}"
    digits = str(abs(value))
    if len(digits) > 16:
        return f"{'-' if value < 0 else ''}about {digits[0]}.{digits[1]}e+{len(digits) - 1}"
    return f"{value:,}"


# Token counts as vLLM's `human_readable_int` reads them (vllm/engine/arg_utils.py): a lower-case
# suffix is decimal (k = 10^3), an upper-case one binary (K = 2^10, no decimals); invmap also takes an
# exponent (1.5e5) and grouped digits (131,072).
COUNT_SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def read_count(text: str) -> int | float | None:
    """A count as typed (`128k`, `32K`, `1.5e5`, `131,072`, `8192`) -> its number (a float when it is
    not whole, for the bound check to refuse), or None when it is not a count."""
    import re

    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)([kmgtKMGT]?)\s*", text.replace(",", ""))
    if not found:
        return None
    number, suffix = found.groups()
    if suffix.isupper() and not number.isdigit():
        return None  # vLLM refuses decimals with a binary suffix
    value = float(number) * COUNT_SUFFIXES.get(suffix, 1)
    if value != value or value in (float("inf"),):
        return None
    return int(value) if value.is_integer() else value


VERSION_PATTERN = (
    r"v?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?(?:\.\d{1,4})?(?:\.?(?:post|rc|dev)\d{0,6})?(?:\+[A-Za-z0-9.]{1,40})?"
)


def read_version(text: str) -> tuple[int, int, int] | None:
    """An engine release as its log prints it (`0.15.1`, `v0.10.1.1`, `0.11.1rc1`, `0.10.1+gptoss`) ->
    (major, minor, patch), a pre-release read as its release; None when it is not one."""
    import re

    found = re.fullmatch(VERSION_PATTERN, text.strip())
    if not found:
        return None
    major, minor, patch = found.groups()
    return int(major), int(minor), int(patch or 0)


class Bounds(namedtuple("Bounds", ("low", "high", "integer", "open_low"), defaults=(True, False))):
    """The values an input may take: `low` to `high` (`open_low`: above `low`), integers or finite
    numbers. A value outside is a typo, not a model."""

    __slots__ = ()

    @property
    def fraction(self) -> bool:
        return self.open_low and self.low == 0 and self.high == 1

    def problem(self, value: object, quote=str, bound_of: str = "") -> str | None:
        """What is wrong with `value` ("must be at most 10,000, not 10,001"), or None. `quote` shows a
        value of the wrong kind (`json.dumps` for a file's); `bound_of` names whose bound it is (a
        config key bounded as its option is: " (the bound of --layers)")."""
        if self.integer:
            return self._integer_problem(value, quote, bound_of)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        finite = number and value == value and abs(value) != float("inf")  # type: ignore[operator]
        if self.fraction:
            return None if finite and 0 < value <= 1 else f"must be a fraction in (0, 1], not {quote(value)}"  # type: ignore[operator]
        if not finite or value <= 0:  # type: ignore[operator]
            return f"must be a positive finite number, not {quote(value)}"
        if value < self.low or (self.open_low and value == self.low):  # type: ignore[operator]
            return f"must be at least {self.low:g}{bound_of}, not {shown_number(value)}"
        if value > self.high:  # type: ignore[operator]
            return f"must be at most {self.high:g}{bound_of}, not {shown_number(value)}"
        return None

    def _integer_problem(self, value: object, quote, bound_of: str) -> str | None:
        if not isinstance(value, int) or isinstance(value, bool) or value < self.low:
            kind = "a positive integer" if self.low == 1 else f"an integer of at least {self.low:,}"
            return f"must be {kind}, not {quote(value)}"
        if value > self.high:
            return f"must be at most {self.high:,}{bound_of}, not {shown_number(value)}"
        return None


TOKENS = Bounds(1, MAX_TOKENS)
COUNT = Bounds(1, MAX_COUNT)
LAYERS = Bounds(1, MAX_LAYERS)
ELEMENT = Bounds(1, MAX_BYTES_PER_ELEMENT)
PARAMETERS = Bounds(1, MAX_PARAMETERS)
MEMORY = Bounds(1, MAX_MEMORY)
WEIGHTS = Bounds(1, MAX_WEIGHTS)
RATE = Bounds(1.0, MAX_RATE, integer=False)
AMOUNT = Bounds(1.0, MAX_AMOUNT, integer=False)
FRACTION = Bounds(0.0, 1.0, integer=False, open_low=True)


class Default(namedtuple("Default", ("value", "by", "words", "shown"), defaults=(None, None, None, None))):
    """What an estimate takes when an input is not given: `value` (for a roofline's operations and
    bytes, one a scenario), `by` whom (`ie`: the field guide's, which describe a made-up model,
    device and workload; `invmap`: invmap's own), `words`: how the help says it when the estimate
    first looks elsewhere (the model's config, the GPU's figures); `shown`: the input's `from`
    when not the usual ("default" for the field guide's, "invmap default" for invmap's)."""

    __slots__ = ()

    @property
    def source(self) -> str:
        return self.shown or ("default" if self.by == "ie" else "invmap default")

    def at(self, scenario: str | None) -> object:
        """The value, for one scenario when it is given one a scenario."""
        return self.value.get(scenario) if isinstance(self.value, dict) else self.value

    @property
    def help(self) -> str:
        if self.words:
            return self.words
        made_up = self.by == "ie" and not isinstance(self.value, str)
        shown = f"{self.value:g}" if isinstance(self.value, float) else f"{self.value}"
        return shown + (" (the field guide's made-up model)" if made_up else "")


# `kind`: int, float, tokens (a count as vLLM reads one: 128k = 128,000, 32K = 32,768, or 1.5e5),
# size (a size as typed: 80G or 80GB = 80 x 10^9, 80GiB, or bytes), choice (one of `choices`), version
# (a release as an engine's log prints it, `read_version`), or name (a model or a GPU, looked up by the
# core). `keys`: config.json keys read as this input (bounded as it).
# `phases`: the roofline scenarios an input describes (none: any); given for another it is refused.
NUMERIC_KINDS = ("int", "float", "tokens")  # the kinds whose values have bounds
_FIELDS = ("name", "flags", "unit", "help", "kind", "bounds", "default", "metavar", "choices", "keys", "example")
_FIELDS += ("phases",)


class Quantity(namedtuple("Quantity", _FIELDS, defaults=("int", None, None, "N", (), (), None, ()))):
    """One input of the estimates (see the module's docstring)."""

    __slots__ = ()

    @property
    def flag(self) -> str:
        """The option messages name."""
        return self.flags[0]

    @property
    def help_text(self) -> str:
        """The option's help: what it is, then its default."""
        text = self.help + "."
        return text + (f" Default: {self.default.help}." if self.default is not None else "")


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
SCENARIOS = ("prefill", "decode")  # the field guide's `ie roofline --scenario`


def _guide(value: object, words: str | None = None) -> Default:
    return Default(value, "ie", words)


def _own(value: object, words: str | None = None) -> Default:
    return Default(value, "invmap", words)


MODEL = Quantity(
    "model",
    ("--model", "-m"),
    "",
    "A model: a config.json, the folder holding it, or a shipped name (invmap models)",
    "name",
    metavar="NAME|PATH",
    example="llama-3.1-8b",
)
GPU = Quantity(
    "gpu",
    ("--gpu",),
    "",
    "A GPU from invmap's table (invmap gpus; a name, or the name the device reports): its memory, bandwidth "
    "and peaks, each with its source",
    "name",
    metavar="NAME",
    example="h100-sxm",
)
QUANTITIES: tuple[Quantity, ...] = (
    MODEL,
    GPU,
    Quantity("tokens", ("--tokens",), "tokens", "Tokens per sequence (S)", "tokens", TOKENS, _guide(2048)),
    Quantity("concurrency", ("--concurrency",), "sequences", "Concurrent sequences (B)", "int", COUNT, _guide(8)),
    Quantity("layers", ("--layers",), "layers", "Transformer layers (L)", "int", LAYERS, _guide(24)),
    Quantity("attention_heads", ("--attention-heads",), "heads", "Query heads", "int", COUNT, _guide(32)),
    Quantity(
        "kv_heads",
        ("--kv-heads",),
        "heads",
        "Key-value heads (H_kv; fewer than query heads: GQA)",
        "int",
        COUNT,
        _guide(8),
    ),
    Quantity("head_dim", ("--head-dim",), "elements", "Head dimension (d_h)", "int", COUNT, _guide(128)),
    Quantity(
        "element_bytes",
        ("--element-bytes",),
        "bytes",
        "Bytes per KV element (b_e)",
        "int",
        ELEMENT,
        _guide(2, "from --kv-cache-dtype, else the model's dtype, else 2"),
    ),
    Quantity(
        "kv_cache_dtype",
        ("--kv-cache-dtype",),
        "",
        "vLLM's KV dtype: auto (the config's torch_dtype), " + ", ".join(list(KV_DTYPES)[1:]),
        "choice",
        metavar="DTYPE",
        choices=tuple(KV_DTYPES),
    ),
    Quantity(
        "tensor_parallel",
        ("--tensor-parallel", "--tensor-parallel-size", "-tp", "--tp-size"),
        "GPUs",
        "GPUs the model is split across: per-GPU figures (max(1, H_kv / N) KV heads each)",
        "int",
        Bounds(1, MAX_LAYERS),
        _own(1),
    ),
    Quantity(
        "memory",
        ("--memory",),
        "bytes",
        "Device memory instead of --gpu's: 80GB (x 10^9), 80GiB (x 2^30) or bytes",
        "size",
        MEMORY,
        metavar="SIZE",
        example="80GB",
    ),
    Quantity(
        "gpu_memory_utilization",
        ("--gpu-memory-utilization", "--mem-fraction-static"),
        "fraction",
        "Fraction of device memory the engine may use, as vLLM's option means it (SGLang's "
        "--mem-fraction-static with --engine sglang)",
        "float",
        FRACTION,
        _own(0.9, "0.9 (vLLM's); with --engine sglang, SGLang's default for the GPU and TP size"),
        "FRACTION",
    ),
    Quantity(
        "tokens_per_request",
        ("--tokens-per-request", "--max-model-len", "--context-length"),
        "tokens",
        "Tokens per request for the maximum concurrency (vLLM's --max-model-len, SGLang's --context-length)",
        "tokens",
        TOKENS,
        Default(words="the model's max_position_embeddings, else --sequence-length"),
    ),
    Quantity(
        "block_size",
        ("--block-size",),
        "tokens",
        "Round the KV pool down to blocks of N tokens (with --engine vllm: the engine's block, default 16)",
        "int",
        TOKENS,
    ),
    Quantity(
        "engine",
        ("--engine",),
        "",
        "Model this engine's start-up: vllm (V1), vllm-v0 or sglang; the KV pool, its tokens and the "
        "concurrency as the engine logs them",
        "choice",
        metavar="ENGINE",
        choices=ENGINES,
    ),
    Quantity(
        "mxfp4_backend",
        ("--mxfp4-backend",),
        "",
        "With --engine vllm and an MXFP4 model: the MoE kernel the engine picks (its log names it), which pads "
        "the expert weights: triton (Hopper, Blackwell) or marlin (Ampere, Ada, or no triton_kernels)",
        "choice",
        default=_own(
            "triton",
            "vLLM's for --gpu's compute capability: marlin below 9.0, triton on 9.x; else (10.x, or --memory alone) triton",
        ),
        metavar="KERNEL",
        choices=MXFP4_BACKENDS,
    ),
    Quantity(
        "quantization",
        ("--quantization", "-q"),
        "",
        "With --engine: the engine quantizes an unquantized checkpoint as it loads it: fp8 (vLLM's and "
        "SGLang's online FP8: each linear layer's weight at one byte with one scale; embeddings, the output "
        "head, norms and routers stay at the model's dtype)",
        "choice",
        metavar="METHOD",
        choices=QUANTIZATIONS,
    ),
    Quantity(
        "engine_version",
        ("--engine-version",),
        "",
        'With --engine vllm: the release, as its log prints it ("vLLM API server version 0.15.1"), which '
        "decides --sampler's default: pytorch from 0.11.1 to 0.16.x, triton from 0.17.0, greedy where Model "
        "Runner V2 runs the model (dense models from 0.25.0); before 0.11.1 the install decides, so give --sampler",
        "version",
        metavar="X.Y.Z",
        example="0.15.1",
    ),
    Quantity(
        "sampler",
        ("--sampler",),
        "",
        "With --engine vllm: the code that answers the profile's dummy sampling, which sizes its "
        "peak: triton (vLLM's kernel, from 0.17.0), flashinfer (the log says \"Using FlashInfer for top-p & "
        'top-k sampling"), pytorch (its sort: the log warns "Falling back to the PyTorch-native '
        'implementation"; the default of 0.11.1 to 0.16.x) or greedy (Model Runner V2: the log says "Using V2 '
        'Model Runner")',
        "choice",
        default=Default(words="--engine-version's, else triton (vLLM v0.19.0's, the release read)"),
        metavar="SAMPLER",
        choices=SAMPLERS,
    ),
    Quantity(
        "pipeline_parallel",
        ("--pipeline-parallel", "--pipeline-parallel-size", "-pp", "--pp-size"),
        "GPUs",
        "With --engine: pipeline stages the layers are split across (the engine sizes each stage's pool)",
        "int",
        Bounds(1, MAX_LAYERS),
        _own(1),
    ),
    Quantity(
        "parameters",
        ("--parameters",),
        "parameters",
        "Parameters (P)",
        "int",
        PARAMETERS,
        _guide(1_000_000_000, "counted from the model, else 10^9"),
    ),
    Quantity(
        "weight_bytes",
        ("--weight-bytes",),
        "bytes",
        "Bytes per weight (b_w)",
        "int",
        ELEMENT,
        _guide(2, "the model's dtype, else 2"),
    ),
    Quantity("hidden_size", ("--hidden-size",), "elements", "Hidden size (H)", "int", COUNT, _guide(4096)),
    Quantity(
        "batch_size",
        ("--batch-size",),
        "sequences",
        "Sequences in the activation working set (B)",
        "int",
        COUNT,
        _guide(4),
    ),
    Quantity(
        "sequence_length", ("--sequence-length",), "tokens", "Tokens per sequence (S)", "tokens", TOKENS, _guide(512)
    ),
    Quantity(
        "activation_bytes",
        ("--activation-bytes",),
        "bytes",
        "Bytes per activation element (b_a)",
        "int",
        ELEMENT,
        _guide(2),
    ),
    Quantity(
        "activation_tensors",
        ("--activation-tensors",),
        "tensors",
        "Activation tensors modelled (a)",
        "int",
        Bounds(1, 10**3),
        _guide(2),
    ),
    Quantity(
        "scenario",
        ("--scenario",),
        "",
        "prefill or decode",
        "choice",
        default=Default("prefill", "ie", shown="default scenario"),
        metavar="PHASE",
        choices=SCENARIOS,
    ),
    Quantity(
        "operations",
        ("--operations",),
        "operations",
        "Operations in the modelled step (O)",
        "float",
        AMOUNT,
        _guide({"prefill": 1_000_000_000.0, "decode": 20_000_000.0}, "the scenario's"),
        "O",
    ),
    Quantity(
        "bytes_moved",
        ("--bytes-moved",),
        "bytes",
        "Bytes moved in the step (D)",
        "float",
        AMOUNT,
        _guide({"prefill": 200_000_000.0, "decode": 50_000_000.0}, "the scenario's"),
        "D",
    ),
    Quantity(
        "peak_operations_per_second",
        ("--peak-operations-per-second", "--peak"),
        "operations per second",
        "Compute ceiling (P_peak)",
        "float",
        RATE,
        _guide(2_000_000_000_000.0, "--gpu's dense BF16 peak, else 2e12"),
        "FLOP/S",
    ),
    Quantity(
        "bandwidth_bytes_per_second",
        ("--bandwidth-bytes-per-second", "--bandwidth"),
        "bytes per second",
        "Memory-bandwidth ceiling (BW)",
        "float",
        RATE,
        _guide(1_000_000_000_000.0, "--gpu's, else 1e12"),
        "B/S",
    ),
    Quantity(
        "efficiency",
        ("--efficiency",),
        "fraction",
        "Derate the peak and the bandwidth: the fraction of them a step reaches, in (0, 1]",
        "float",
        FRACTION,
        Default(1.0, "invmap", shown="invmap default (no derating)"),
        "F",
    ),
    Quantity(
        "prompt_tokens",
        ("--prompt-tokens",),
        "tokens",
        "With --model, prefill: prompt tokens (P)",
        "int",
        TOKENS,
        _own(2048),
    ),
    Quantity(
        "context_tokens",
        ("--context-tokens",),
        "tokens",
        "With --model, decode: context per sequence (C)",
        "int",
        TOKENS,
        _own(2048),
    ),
)


# vLLM V1's batch budget when `vllm serve` is not given one (`EngineArgs.get_batch_defaults` in
# vllm/engine/arg_utils.py, v0.19.0): (max_num_batched_tokens, max_num_seqs) for a device of at least
# 70 GiB whose name does not contain "a100" (H100, H200, MI300X, B200), and for every other GPU.
VLLM_SERVE_BATCH_LARGE = (8192, 1024)
VLLM_SERVE_BATCH_OTHER = (2048, 256)
VLLM_LARGE_DEVICE_BYTES = 70 * 2**30


def vllm_serve_batch(memory_bytes: int | None, device_name: str) -> tuple[int, int]:
    """`vllm serve`'s default (max_num_batched_tokens, max_num_seqs) on a device; max_num_seqs is
    capped at max_num_batched_tokens as vLLM caps it."""
    large = memory_bytes is not None and memory_bytes >= VLLM_LARGE_DEVICE_BYTES and "a100" not in device_name.lower()
    tokens, seqs = VLLM_SERVE_BATCH_LARGE if large else VLLM_SERVE_BATCH_OTHER
    return tokens, min(seqs, tokens)


# The roofline's inputs `simulate batching --model --gpu` passes on to time its steps.
ENGINE_ROOFS = ("peak_operations_per_second", "bandwidth_bytes_per_second", "efficiency", "parameters")

ENGINE_BUDGET: tuple[Quantity, ...] = (
    Quantity(
        "max_num_batched_tokens",
        ("--max-num-batched-tokens",),
        "tokens",
        "Tokens one engine step computes at most (prefill and decode together), as vLLM's option means it",
        "int",
        TOKENS,
        Default(
            words="vLLM V1's `vllm serve` default for --gpu: 8192 on a device of 70 GiB or more that is not an A100, "
            "else 2048"
        ),
    ),
    Quantity(
        "max_num_seqs",
        ("--max-num-seqs",),
        "sequences",
        "Requests running at once, as vLLM's option means it",
        "int",
        COUNT,
        Default(
            words="vLLM V1's `vllm serve` default for --gpu: 1024 on a device of 70 GiB or more that is not an A100, "
            "else 256"
        ),
    ),
)


# Every input by name: the estimates' and the engine budget (one declaration each: `estimate memory
# --engine` profiles the budget `simulate batching` steps with).
INPUTS: dict[str, Quantity] = {q.name: q for q in (*QUANTITIES, *ENGINE_BUDGET)}


def choice_completion(q: Quantity) -> str:
    """The completion name of an input with fixed choices: `input:NAME`, a namespace of its own, since an
    input's name may be an index kind too (`--engine` of `reports` completes the reports' engines, of
    `estimate` its declared choices)."""
    return f"input:{q.name}"


def _config_keys() -> dict[str, Quantity]:
    """Every config.json key an estimate reads as a number, with its bounds: the keys read as an
    input (`num_hidden_layers` as --layers) and the ones no option gives."""
    keys = {"num_hidden_layers": "layers", "num_attention_heads": "attention_heads", "hidden_size": "hidden_size"}
    keys.update({"num_key_value_heads": "kv_heads", "head_dim": "head_dim"})
    keys.update({"num_global_key_value_heads": "kv_heads", "global_head_dim": "head_dim"})
    keys["max_position_embeddings"] = "tokens_per_request"
    out = {key: INPUTS[name] for key, name in keys.items()}
    own = {
        "vocab_size": ("tokens", COUNT),
        "intermediate_size": ("elements", COUNT),
        "ffn_dim": ("elements", COUNT),
        "word_embed_proj_dim": ("elements", COUNT),
        "kv_lora_rank": ("elements", COUNT),
        "qk_rope_head_dim": ("elements", COUNT),
        "qk_nope_head_dim": ("elements", COUNT),
        "v_head_dim": ("elements", COUNT),
        "sliding_window": ("tokens", TOKENS),
        "sliding_window_pattern": ("layers", LAYERS),
        "_sliding_window_pattern": ("layers", LAYERS),
        "num_local_experts": ("experts", COUNT),
        "num_experts_per_tok": ("experts", COUNT),
        "num_experts": ("experts", COUNT),
        "n_routed_experts": ("experts", COUNT),
        "moe_intermediate_size": ("elements", COUNT),
        "shared_expert_intermediate_size": ("elements", COUNT),
        "q_lora_rank": ("elements", COUNT),
        "hidden_size_per_layer_input": ("elements", COUNT),
        "num_kv_shared_layers": ("layers", LAYERS),
        "vocab_size_per_layer_input": ("tokens", COUNT),
        "patch_size": ("elements", COUNT),  # a vision encoder's
        "position_embedding_size": ("elements", COUNT),
        "image_size": ("elements", COUNT),  # pixels a side
        "num_channels": ("elements", COUNT),
        "metadata.total_size": ("bytes", WEIGHTS),  # model.safetensors.index.json
    }
    out.update({key: Quantity(key, (), unit, key, "int", bounds) for key, (unit, bounds) in own.items()})
    return out


CONFIG_KEYS: dict[str, Quantity] = _config_keys()


# The field guide's memory model's inputs, which an engine's start-up does not read (the profile's
# batch and the counted weights stand in for them).
_GUIDE_MEMORY = (
    "parameters",
    "weight_bytes",
    "hidden_size",
    "batch_size",
    "sequence_length",
    "activation_bytes",
    "activation_tensors",
)
_KV_SHAPE = ("layers", "attention_heads", "kv_heads", "head_dim", "element_bytes", "kv_cache_dtype", "tensor_parallel")
_I = INPUTS
# The inputs of `estimate memory` that describe an engine's start-up: meaningless without --engine.
_ENGINE_ONLY = (
    "pipeline_parallel",
    "max_num_batched_tokens",
    "max_num_seqs",
    "quantization",
    "mxfp4_backend",
    "engine_version",
    "sampler",
)
ESTIMATES: dict[str, tuple[Quantity, ...]] = {
    "kv": tuple(_I[n] for n in ("model", "tokens", "concurrency", *_KV_SHAPE)),
    "memory": tuple(
        _I[n]
        for n in (
            "model",
            "gpu",
            "memory",
            "gpu_memory_utilization",
            "tokens_per_request",
            "block_size",
            "engine",
            *_ENGINE_ONLY,
            *_GUIDE_MEMORY,
            *_KV_SHAPE,
        )
    ),
    "roofline": (
        _I["model"],
        _I["gpu"],
        _I["scenario"],
        _I["operations"],
        _I["bytes_moved"],
        _I["peak_operations_per_second"],
        _I["bandwidth_bytes_per_second"],
        _I["efficiency"],
        _I["parameters"]._replace(
            unit="parameters (active per token)",
            help="Active parameters per token",
            default=Default(words="counted from the model"),
        ),
        _I["weight_bytes"],
        _I["prompt_tokens"]._replace(phases=("prefill",)),
        _I["batch_size"]._replace(
            help="With --model, decode: sequences in the batch (B)", default=_own(8), phases=("decode",)
        ),
        _I["context_tokens"]._replace(phases=("decode",)),
        _I["element_bytes"]._replace(help="Bytes per KV element", default=Default(words="the model's dtype")),
        _I["kv_cache_dtype"],
    ),
}
# `estimate fit`: the engine's start-up over tensor-parallel sizes, for C requests of T tokens.
ESTIMATES["fit"] = (
    _I["model"],
    _I["gpu"],
    _I["memory"],
    _I["concurrency"]._replace(
        unit="requests",
        help="Requests the deployment must hold at once, each of --max-model-len tokens",
        default=_own(1),
    ),
    _I["tokens_per_request"],
    _I["engine"]._replace(default=Default("vllm", "invmap", shown="invmap default (vLLM V1)")),
    _I["gpu_memory_utilization"],
    *(_I[n] for n in _ENGINE_ONLY),
    _I["kv_cache_dtype"],
    _I["block_size"],
)
FIT_TENSOR_PARALLEL = (1, 2, 4, 8)  # the tensor-parallel sizes `estimate fit` tries: the GPUs of one node


class Needs(namedtuple("Needs", ("given", "one_of", "message"))):
    """When one of the inputs `given` is given (none: always), one of `one_of` must be too; else the
    estimate refuses with `message` ({flag}: the first input given, by its option)."""

    __slots__ = ()

    def broken(self, present: set[str] | frozenset[str]) -> str | None:
        """The message when `present` (the inputs given, by name) breaks this need, else None."""
        if any(name in present for name in self.one_of):
            return None
        first = next((name for name in self.given if name in present), None)
        if self.given and first is None:
            return None
        return self.message.format(flag=INPUTS[first].flag if first else "")


_PHASE = ("prompt_tokens", "context_tokens", "batch_size", "parameters", "weight_bytes", "element_bytes")
NEEDS: dict[str, tuple[Needs, ...]] = {
    "kv": (),
    "memory": (
        Needs(
            ("gpu_memory_utilization", "tokens_per_request", "block_size", *_KV_SHAPE[1:]),
            ("gpu", "memory"),
            "{flag} needs a device: give --gpu or --memory (the KV pool is sized on it)",
        ),
        Needs(
            _ENGINE_ONLY,
            ("engine",),
            "{flag} describes an engine's start-up: give --engine vllm, vllm-v0 or sglang",
        ),
    ),
    "fit": (
        Needs((), ("model",), "estimate fit needs a --model (its config sizes every term)"),
        Needs((), ("gpu", "memory"), "estimate fit needs a device: give --gpu or --memory"),
    ),
    "roofline": (
        Needs(
            (
                "prompt_tokens",
                "context_tokens",
                "batch_size",
                "parameters",
                "weight_bytes",
                "element_bytes",
                "kv_cache_dtype",
            ),
            ("model",),
            "{flag} needs a --model (or give --operations and --bytes-moved)",
        ),
    ),
}


class Clash(namedtuple("Clash", ("given", "with_all", "message"))):
    """When every input of `with_all` is given, none of `given` applies: the estimate refuses it
    with `message` ({flag}: the first given, by its option) rather than ignore it."""

    __slots__ = ()

    def broken(self, present: set[str] | frozenset[str]) -> str | None:
        if not all(name in present for name in self.with_all):
            return None
        first = next((name for name in self.given if name in present), None)
        return None if first is None else self.message.format(flag=INPUTS[first].flag)


CLASHES: dict[str, tuple[Clash, ...]] = {
    "kv": (),
    "fit": (),
    "memory": (
        Clash(
            _GUIDE_MEMORY,
            ("engine",),
            "{flag} does not apply with --engine (the engine's start-up counts the weights from the config and "
            "profiles --max-num-batched-tokens and --max-num-seqs)",
        ),
    ),
    "roofline": (
        Clash(
            (*_PHASE, "kv_cache_dtype"),
            ("operations", "bytes_moved"),
            "{flag} does not apply when --operations and --bytes-moved give the step (it describes a model's phase)",
        ),
    ),
}


def inputs_of(kind: str) -> tuple[Quantity, ...]:
    """The inputs estimate `kind` takes, in the order its help lists them."""
    return ESTIMATES[kind]


def flags_of(kind: str) -> tuple[str, ...]:
    """The names of the inputs an estimate takes as flags (its model and GPU are the scenario's own)."""
    return tuple(q.name for q in ESTIMATES[kind] if q.kind != "name")


def json_schema(kind: str) -> dict:
    """The JSON Schema of estimate `kind`'s inputs as a scenario takes them (a tool's input schema):
    each input's type, bounds, choices, help, and its default when it is one value."""
    properties: dict[str, dict] = {}
    for x in ESTIMATES[kind]:
        p: dict = {"description": x.help_text}
        if x.kind in NUMERIC_KINDS:
            p["type"] = "integer" if x.kind == "int" else "number" if x.kind == "float" else ["integer", "string"]
            p["exclusiveMinimum" if x.bounds.open_low else "minimum"] = x.bounds.low
            p["maximum"] = x.bounds.high
        elif x.kind == "size":
            p["type"] = ["string", "integer"]  # 80GB, 80GiB, or bytes
        elif x.kind == "version":
            p["type"], p["pattern"] = "string", f"^{VERSION_PATTERN}$"
        else:
            p["type"] = "string"
            if x.choices:
                p["enum"] = list(x.choices)
        if x.default is not None and x.default.by is not None and not isinstance(x.default.value, dict):
            p["default"] = x.default.value
        properties[x.name] = p
    return {"type": "object", "properties": properties, "additionalProperties": False}
