"""The one declaration of which engine metric means which common signal.

Each `Signal` (requests waiting, KV usage, TTFT, ...) lists, per engine, the metric names that carry
it: the current name first, then older names (renames) the engine exposed before, each with the
place its name and meaning were read (`doc`) and, for a rename, when it changed (`note`). Readers of
a scrape look names up here only; nothing else in invmap spells a metric name.

Names are written as the engine exposes them. Counters are matched with or without their `_total`
suffix (prometheus_client's parser adds it to a counter whose TYPE line lacks it, as TGI's do);
`sglang_` (some routers re-export SGLang so) is read as `sglang:`; `trtllm:` (an older Dynamo
re-export) as `trtllm_`; and trtllm-serve's unprefixed names (TensorRT-LLM 1.1, as Dynamo documents
them) as `trtllm_` when the series carries the `engine_type` label trtllm-serve sets.
"""

from __future__ import annotations

from typing import NamedTuple

# Where each name was read (the stored public copies of the engines' own code and docs).
VLLM = "vllm-project/vllm: vllm/v1/metrics/loggers.py (PrometheusStatLogger)"
VLLM_SPEC = "vllm-project/vllm: vllm/v1/spec_decode/metrics.py (SpecDecodingProm)"
SGLANG = "sgl-project/sglang: python/sglang/srt/metrics/collector.py"
TGI = "huggingface/text-generation-inference: docs/source/reference/metrics.md"
LLAMACPP = "ggml-org/llama.cpp: tools/server/README.md (GET /metrics, Available metrics)"
TRTLLM = "NVIDIA/TensorRT-LLM: tensorrt_llm/metrics/collector.py (MetricsCollector)"
TRITON = (
    "kubernetes-sigs/gateway-api-inference-extension: Triton TensorRT-LLM metric flags "
    "(nv_trt_llm_request_metrics, nv_trt_llm_kv_cache_block_metrics), as a Triton scrape shows them"
)


class Engine(NamedTuple):
    key: str
    title: str
    prefixes: tuple[str, ...]
    rank_label: str | None = None  # the label that tells data-parallel ranks apart
    model_label: str = "model_name"


ENGINES: tuple[Engine, ...] = (
    Engine("vllm", "vLLM", ("vllm:",), rank_label="engine"),  # V1: `engine` is the DP engine index
    Engine("sglang", "SGLang", ("sglang:",), rank_label="dp_rank"),
    Engine("tgi", "TGI", ("tgi_",)),
    Engine("llamacpp", "llama.cpp server", ("llamacpp:",)),
    Engine("triton", "TensorRT-LLM (Triton)", ("nv_trt_llm_", "nv_inference_"), model_label="model"),
    Engine("trtllm", "trtllm-serve", ("trtllm_",)),
)
BY_KEY = {e.key: e for e in ENGINES}

# trtllm-serve's names before it prefixed them (TensorRT-LLM 1.1.0rc5, as Dynamo documents them).
TRTLLM_BARE = frozenset(
    (
        "request_success",
        "e2e_request_latency_seconds",
        "time_to_first_token_seconds",
        "time_per_output_token_seconds",
        "request_queue_time_seconds",
    )
)
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


class Name(NamedTuple):
    """One engine's metric for a signal: `labels` it must carry (`request_type=waiting`), `scale` to
    the signal's unit, `note` for a renamed or retired name, `doc` where it was read; `over`, the
    labels of the series it is divided by (a share read from two gauges)."""

    engine: str
    metric: str
    doc: str
    labels: tuple[tuple[str, str], ...] = ()
    scale: float = 1.0
    note: str = ""
    over: tuple[tuple[str, str], ...] = ()  # a gauge read as a share: these series / the `over` series


class Signal(NamedTuple):
    """A signal common to engines: `kind` gauge | counter | histogram | info; `unit`; how one
    engine's series combine (`sum` across ranks and models, or `max`: the fullest one matters);
    for a histogram, whether its percentiles are read (`quantiles`: else only its sum and count, and
    its bucket lines are skipped unparsed, which is most of a scrape)."""

    key: str
    kind: str
    unit: str
    meaning: str
    names: tuple[Name, ...]
    combine: str = "sum"
    quantiles: bool = False


def _n(engine: str, metric: str, doc: str, **kw: object) -> Name:
    return Name(engine, metric, doc, **kw)  # type: ignore[arg-type]


SIGNALS: tuple[Signal, ...] = (
    Signal(
        "running",
        "gauge",
        "requests",
        "requests in the running batch",
        (
            _n("vllm", "vllm:num_requests_running", VLLM),
            _n("sglang", "sglang:num_running_reqs", SGLANG),
            _n("tgi", "tgi_batch_current_size", TGI),
            _n("llamacpp", "llamacpp:requests_processing", LLAMACPP),
            _n("triton", "nv_trt_llm_request_metrics", TRITON, labels=(("request_type", "active"),)),
            _n("trtllm", "trtllm_num_requests_running", TRTLLM),
        ),
    ),
    Signal(
        "waiting",
        "gauge",
        "requests",
        "requests queued, not yet scheduled",
        (
            _n("vllm", "vllm:num_requests_waiting", VLLM),
            _n("sglang", "sglang:num_queue_reqs", SGLANG),
            _n("tgi", "tgi_queue_size", TGI),
            _n("llamacpp", "llamacpp:requests_deferred", LLAMACPP),
            _n("triton", "nv_trt_llm_request_metrics", TRITON, labels=(("request_type", "waiting"),)),
            _n("trtllm", "trtllm_num_requests_waiting", TRTLLM),
        ),
    ),
    Signal(
        "kv_usage",
        "gauge",
        "fraction",
        "used fraction of the KV cache (0 to 1)",
        (
            _n("vllm", "vllm:kv_cache_usage_perc", VLLM),
            _n("vllm", "vllm:gpu_cache_usage_perc", VLLM, note="old name: renamed kv_cache_usage_perc in 0.9.2"),
            _n("sglang", "sglang:token_usage", SGLANG, note="counts non-evictable tokens only"),
            _n("triton", "nv_trt_llm_kv_cache_block_metrics", TRITON, labels=(("kv_cache_block_type", "fraction"),)),
            _n(
                "triton",
                "nv_trt_llm_kv_cache_block_metrics",
                TRITON,
                labels=(("kv_cache_block_type", "used"),),
                over=(("kv_cache_block_type", "max"),),
                note="used / max blocks, where the backend has no `fraction` yet",
            ),
            _n("trtllm", "trtllm_kv_cache_utilization", TRTLLM),
        ),
        combine="max",
    ),
    Signal(
        "preemptions",
        "counter",
        "requests",
        "running requests evicted for lack of KV (vLLM preemptions, SGLang retractions)",
        (
            _n("vllm", "vllm:num_preemptions_total", VLLM),
            _n("sglang", "sglang:num_retracted_requests_total", SGLANG),
        ),
    ),
    Signal(
        "prefix_queries",
        "counter",
        "tokens",
        "prompt tokens looked up in the prefix cache",
        (
            _n("vllm", "vllm:prefix_cache_queries_total", VLLM),
            _n(
                "vllm",
                "vllm:gpu_prefix_cache_queries_total",
                VLLM,
                note="old name: renamed prefix_cache_queries in 0.9.2",
            ),
        ),
    ),
    Signal(
        "prefix_hits",
        "counter",
        "tokens",
        "prompt tokens found in the prefix cache",
        (
            _n("vllm", "vllm:prefix_cache_hits_total", VLLM),
            _n("vllm", "vllm:gpu_prefix_cache_hits_total", VLLM, note="old name: renamed prefix_cache_hits in 0.9.2"),
        ),
    ),
    Signal(
        "prompt_tokens",
        "counter",
        "tokens",
        "prompt (prefill) tokens processed",
        (
            _n("vllm", "vllm:prompt_tokens_total", VLLM),
            _n("sglang", "sglang:prompt_tokens_total", SGLANG),
            _n("llamacpp", "llamacpp:prompt_tokens_total", LLAMACPP),
            _n("trtllm", "trtllm_prompt_tokens_total", TRTLLM),
        ),
    ),
    Signal(
        "generation_tokens",
        "counter",
        "tokens",
        "tokens generated",
        (
            _n("vllm", "vllm:generation_tokens_total", VLLM),
            _n("sglang", "sglang:generation_tokens_total", SGLANG),
            _n("llamacpp", "llamacpp:tokens_predicted_total", LLAMACPP),
            _n("trtllm", "trtllm_generation_tokens_total", TRTLLM),
        ),
    ),
    Signal(
        "prefill_seconds",
        "counter",
        "s",
        "time spent processing prompts",
        (_n("llamacpp", "llamacpp:prompt_seconds_total", LLAMACPP),),
    ),
    Signal(
        "decode_seconds",
        "counter",
        "s",
        "time spent generating tokens",
        (_n("llamacpp", "llamacpp:tokens_predicted_seconds_total", LLAMACPP),),
    ),
    Signal(
        "finished",
        "counter",
        "requests",
        "requests finished",
        (
            _n("vllm", "vllm:request_success_total", VLLM),
            _n("sglang", "sglang:num_requests_total", SGLANG),
            _n("tgi", "tgi_request_success", TGI),
            _n("trtllm", "trtllm_request_success_total", TRTLLM),
        ),
    ),
    Signal(
        "kv_transfer_failures",
        "counter",
        "requests",
        "requests whose KV hand-off between prefill and decode servers failed (transfer or bootstrap)",
        (
            _n("sglang", "sglang:num_transfer_failed_reqs_total", SGLANG),
            _n("sglang", "sglang:num_bootstrap_failed_reqs_total", SGLANG),
        ),
    ),
    Signal(
        "kv_transfer_ms",
        "gauge",
        "ms",
        "latency of the last KV transfers from prefill to decode servers",
        (_n("sglang", "sglang:kv_transfer_latency_ms", SGLANG),),
        combine="max",
    ),
    Signal(
        "spec_draft_tokens",
        "counter",
        "tokens",
        "draft tokens proposed by speculative decoding",
        (
            _n("vllm", "vllm:spec_decode_num_draft_tokens_total", VLLM_SPEC),
            _n("llamacpp", "llamacpp:spec_decode_num_draft_tokens_total", LLAMACPP),
            _n("trtllm", "trtllm_spec_decode_num_draft_tokens_total", TRTLLM),
        ),
    ),
    Signal(
        "spec_accepted_tokens",
        "counter",
        "tokens",
        "draft tokens the target model accepted",
        (
            _n("vllm", "vllm:spec_decode_num_accepted_tokens_total", VLLM_SPEC),
            _n("llamacpp", "llamacpp:spec_decode_num_accepted_tokens_total", LLAMACPP),
            _n("trtllm", "trtllm_spec_decode_num_accepted_tokens_total", TRTLLM),
        ),
    ),
    Signal(
        "spec_accept_rate",
        "gauge",
        "fraction",
        "speculative acceptance rate over recent batches (accepted / draft tokens)",
        (_n("sglang", "sglang:spec_accept_rate", SGLANG),),
        combine="max",
    ),
    Signal(
        "lora_pool_use",
        "gauge",
        "fraction",
        "used fraction of the LoRA adapter slots",
        (_n("sglang", "sglang:lora_pool_utilization", SGLANG),),
        combine="max",
    ),
    Signal(
        "lora_info",
        "info",
        "",
        "running and waiting LoRA adapters (labels; the value is a timestamp)",
        (_n("vllm", "vllm:lora_requests_info", VLLM),),
    ),
    Signal(
        "ttft",
        "histogram",
        "s",
        "time to first token (queueing included)",
        (
            _n("vllm", "vllm:time_to_first_token_seconds", VLLM),
            _n("sglang", "sglang:time_to_first_token_seconds", SGLANG),
            _n("trtllm", "trtllm_time_to_first_token_seconds", TRTLLM),
        ),
        quantiles=True,
    ),
    Signal(
        "itl",
        "histogram",
        "s",
        "gap between successive output tokens",
        (
            _n("vllm", "vllm:inter_token_latency_seconds", VLLM),
            _n(
                "vllm",
                "vllm:time_per_output_token_seconds",
                VLLM,
                note="old name of the inter-token histogram: deprecated in 0.11, removed in 0.13",
            ),
            _n("sglang", "sglang:inter_token_latency_seconds", SGLANG),
            _n("sglang", "sglang:time_per_output_token_seconds", SGLANG, note="old name, gone since ~0.4.5"),
        ),
        quantiles=True,
    ),
    Signal(
        "tpot",
        "histogram",
        "s",
        "per-request time per output token after the first",
        (
            _n("vllm", "vllm:request_time_per_output_token_seconds", VLLM),
            _n("tgi", "tgi_request_mean_time_per_token_duration", TGI),
            _n("trtllm", "trtllm_time_per_output_token_seconds", TRTLLM),
        ),
        quantiles=True,
    ),
    Signal(
        "e2e",
        "histogram",
        "s",
        "end-to-end request latency",
        (
            _n("vllm", "vllm:e2e_request_latency_seconds", VLLM),
            _n("sglang", "sglang:e2e_request_latency_seconds", SGLANG),
            _n("tgi", "tgi_request_duration", TGI),
            _n("trtllm", "trtllm_e2e_request_latency_seconds", TRTLLM),
        ),
    ),
    Signal(
        "queue",
        "histogram",
        "s",
        "time a request waited before it was scheduled",
        (
            _n("vllm", "vllm:request_queue_time_seconds", VLLM),
            _n("sglang", "sglang:queue_time_seconds", SGLANG),
            _n("tgi", "tgi_request_queue_duration", TGI),
            _n("trtllm", "trtllm_request_queue_time_seconds", TRTLLM),
        ),
    ),
    Signal(
        "prefill_time",
        "histogram",
        "s",
        "time a request spent in prefill",
        (
            _n("vllm", "vllm:request_prefill_time_seconds", VLLM),
            _n("trtllm", "trtllm_request_prefill_time_seconds", TRTLLM),
        ),
    ),
    Signal(
        "decode_time",
        "histogram",
        "s",
        "time a request spent in decode",
        (
            _n("vllm", "vllm:request_decode_time_seconds", VLLM),
            _n("trtllm", "trtllm_request_decode_time_seconds", TRTLLM),
        ),
    ),
    Signal(
        "prompt_len",
        "histogram",
        "tokens",
        "prompt length per request",
        (
            _n("vllm", "vllm:request_prompt_tokens", VLLM),
            _n("sglang", "sglang:prompt_tokens_histogram", SGLANG),
            _n("tgi", "tgi_request_input_length", TGI),
        ),
    ),
    Signal(
        "gen_len",
        "histogram",
        "tokens",
        "output length per request",
        (
            _n("vllm", "vllm:request_generation_tokens", VLLM),
            _n("sglang", "sglang:generation_tokens_histogram", SGLANG),
            _n("tgi", "tgi_request_generated_tokens", TGI),
        ),
    ),
)
BY_SIGNAL = {s.key: s for s in SIGNALS}


def key(name: str) -> str:
    """The name a metric is matched by: a counter's `_total` dropped, so `tgi_request_count` and
    `vllm:num_preemptions_total` match however the scrape spelt them."""
    return name[:-6] if name.endswith("_total") else name


# canonical name (key) -> the signals and names that read it
WANTED: dict[str, list[tuple[Signal, Name]]] = {}
for _signal in SIGNALS:
    for _name in _signal.names:
        WANTED.setdefault(key(_name.metric), []).append((_signal, _name))
del _signal, _name
HISTOGRAMS = frozenset(key(n.metric) for s in SIGNALS if s.kind == "histogram" for n in s.names)
QUANTILED = frozenset(key(n.metric) for s in SIGNALS if s.quantiles for n in s.names)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:")


def canonical(name: str, has_engine_type: bool) -> str:
    """A scraped sample name as the declaration spells it (see the module's docstring)."""
    if name.startswith("sglang_"):
        return "sglang:" + name[len("sglang_") :]
    if name.startswith("trtllm:"):
        return "trtllm_" + name[len("trtllm:") :]
    if has_engine_type and not name.startswith(("sglang", "vllm", "trtllm")):
        base = name
        for suffix in HISTOGRAM_SUFFIXES:
            if name.endswith(suffix) and key(name[: -len(suffix)]) in TRTLLM_BARE:
                base = name[: -len(suffix)]
                break
        if key(base) in TRTLLM_BARE:
            return "trtllm_" + name
    return name


def engine_of(name: str) -> str | None:
    """The engine whose prefix a (canonical) sample name carries."""
    for engine in ENGINES:
        if name.startswith(engine.prefixes):
            return engine.key
    return None


def wanted(name: str) -> bool:
    """Whether invmap reads this (canonical) sample name: a declared metric, or a declared
    histogram's `_bucket`, `_sum` or `_count`."""
    if key(name) in WANTED:
        return True
    for suffix in HISTOGRAM_SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in HISTOGRAMS:
            return True
    return False


def sample_name(line: str) -> str | None:
    """The metric name a sample line starts with, if it is a well-formed one (else None: the line goes
    to the parser, which says what is wrong with it)."""
    end = len(line)
    for stop in ("{", " ", "\t"):
        at = line.find(stop)
        if 0 <= at < end:
            end = at
    name = line[:end]
    if not name or name[0].isdigit() or not _NAME_CHARS.issuperset(name):
        return None
    return name


def needed(name: str) -> bool:
    """Whether a sample of this (scraped) name is parsed at all: what `wanted` keeps, less the bucket
    lines of histograms whose percentiles invmap does not read. trtllm-serve's unprefixed names are
    parsed whatever they carry (the `engine_type` label decides, and only the parser reads labels)."""
    if key(name) in TRTLLM_BARE or any(
        name.endswith(s) and key(name[: -len(s)]) in TRTLLM_BARE for s in HISTOGRAM_SUFFIXES
    ):
        return True
    name = canonical(name, False)
    if name.endswith("_bucket") and name[: -len("_bucket")] in HISTOGRAMS:
        return name[: -len("_bucket")] in QUANTILED
    return wanted(name)
