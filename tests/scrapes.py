"""Scrapes built the way the engines write them, from their documented names.

vLLM, SGLang and trtllm-serve register their metrics with prometheus_client, so their scrapes are
made here by prometheus_client itself (`generate_latest`): histograms as `_bucket`/`_sum`/`_count`,
counters with `_total`, a `_created` gauge per series, the engines' own labels (`model_name`,
`engine`; SGLang's `engine_type`, `tp_rank`, `dp_rank`) and bucket bounds (vLLM's from
vllm/v1/metrics/loggers.py, SGLang's from python/sglang/srt/metrics/collector.py). TGI (Rust's
metrics exporter), llama.cpp's server and Triton write their own text; those are written out here
in the shapes their documentation and scrapes show.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

VLLM_TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
             80.0, 160.0, 640.0, 2560.0]  # fmt: skip
VLLM_ITL = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0]
VLLM_REQUEST = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
                960.0, 1920.0, 7680.0]  # fmt: skip
VLLM_TOKENS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000]
SGLANG_TTFT = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400]
SGLANG_ITL = [0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200,
              0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000]  # fmt: skip
SGLANG_QUEUE = [0.0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500]

BUCKETS = {
    "vllm:time_to_first_token_seconds": VLLM_TTFT,
    "vllm:inter_token_latency_seconds": VLLM_ITL,
    "vllm:time_per_output_token_seconds": VLLM_ITL,
    "vllm:request_time_per_output_token_seconds": VLLM_ITL,
    "vllm:request_prompt_tokens": VLLM_TOKENS,
    "vllm:request_generation_tokens": VLLM_TOKENS,
    "sglang:time_to_first_token_seconds": SGLANG_TTFT,
    "sglang:inter_token_latency_seconds": SGLANG_ITL,
    "sglang:queue_time_seconds": SGLANG_QUEUE,
}


class Registry:
    """An engine's metrics, registered as the engine does: `counter("vllm:num_preemptions", 48)`."""

    def __init__(self, **labels: str) -> None:
        self.registry = CollectorRegistry()
        self.labels = labels
        self.metrics: dict[str, object] = {}

    def _metric(self, cls: type, name: str, labels: dict[str, str], **kw: object) -> object:
        every = {**self.labels, **labels}
        if name not in self.metrics:
            self.metrics[name] = cls(name, f"{name} (help)", list(every), registry=self.registry, **kw)
        metric = self.metrics[name]
        return metric.labels(**every) if every else metric  # type: ignore[attr-defined]

    def gauge(self, name: str, value: float, **labels: str) -> Registry:
        self._metric(Gauge, name, labels).set(value)  # type: ignore[attr-defined]
        return self

    def counter(self, name: str, value: float, **labels: str) -> Registry:
        self._metric(Counter, name, labels).inc(value)  # type: ignore[attr-defined]
        return self

    def histogram(
        self, name: str, observations: list[float], buckets: list[float] | None = None, **labels: str
    ) -> Registry:
        bounds = buckets or BUCKETS.get(name) or VLLM_REQUEST
        series = self._metric(Histogram, name, labels, buckets=bounds)
        for value in observations:
            series.observe(value)  # type: ignore[attr-defined]
        return self

    def text(self) -> str:
        return generate_latest(self.registry).decode()


def vllm(model: str = "meta-llama/Llama-3.1-8B-Instruct", engine: str = "0") -> Registry:
    return Registry(model_name=model, engine=engine)


def sglang(dp_rank: str = "0") -> Registry:
    return Registry(model_name="Qwen/Qwen2.5-7B-Instruct", engine_type="unified", tp_rank="0", pp_rank="0",
                    dp_rank=dp_rank)  # fmt: skip


def trtllm() -> Registry:
    return Registry(model_name="nemotron-nano-3", engine_type="trtllm")


def tgi(queue: int, batch: int, requests: int, success: int) -> str:
    """TGI's /metrics (the Rust metrics exporter: counters without `_total`, histograms with buckets)."""
    return (
        f"# TYPE tgi_queue_size gauge\ntgi_queue_size {queue}\n"
        f"# TYPE tgi_batch_current_size gauge\ntgi_batch_current_size {batch}\n"
        f"# TYPE tgi_request_count counter\ntgi_request_count {requests}\n"
        f"# TYPE tgi_request_success counter\ntgi_request_success {success}\n"
        "# TYPE tgi_request_queue_duration histogram\n"
        'tgi_request_queue_duration_bucket{le="0.1"} 3\ntgi_request_queue_duration_bucket{le="1"} 9\n'
        f'tgi_request_queue_duration_bucket{{le="+Inf"}} {success}\n'
        f"tgi_request_queue_duration_sum 4.5\ntgi_request_queue_duration_count {success}\n"
    )


def llamacpp(
    prompt_tokens: int, prompt_seconds: float, predicted: int, predicted_seconds: float, deferred: int = 0
) -> str:
    """llama.cpp server's /metrics (its own writer: HELP and TYPE lines, no labels)."""
    rows = [
        ("prompt_tokens_total", "counter", prompt_tokens),
        ("prompt_seconds_total", "counter", prompt_seconds),
        ("tokens_predicted_total", "counter", predicted),
        ("tokens_predicted_seconds_total", "counter", predicted_seconds),
        ("n_decode_total", "counter", predicted),
        ("n_busy_slots_per_decode", "gauge", 1.0),
        ("requests_processing", "gauge", 1),
        ("requests_deferred", "gauge", deferred),
    ]
    return "".join(
        f"# HELP llamacpp:{n} {n.replace('_', ' ')}.\n# TYPE llamacpp:{n} {kind}\nllamacpp:{n} {value}\n"
        for n, kind, value in rows
    )


def triton(waiting: int, active: int, fraction: float) -> str:
    """The TensorRT-LLM backend's gauges in Triton's /metrics (labels `model`, `version`)."""
    lines = ["# HELP nv_trt_llm_request_metrics TRT LLM request metrics", "# TYPE nv_trt_llm_request_metrics gauge"]
    for kind, value in (("context", 1), ("scheduled", active), ("max", 512), ("active", active), ("waiting", waiting)):
        lines.append(f'nv_trt_llm_request_metrics{{model="tensorrt_llm",request_type="{kind}",version="1"}} {value}')
    lines += ["# HELP nv_trt_llm_kv_cache_block_metrics TRT LLM KV cache block metrics",
              "# TYPE nv_trt_llm_kv_cache_block_metrics gauge"]  # fmt: skip
    for kind, value in (("tokens_per", 64), ("used", 100), ("free", 6139), ("max", 6239), ("fraction", fraction)):
        lines.append(
            f'nv_trt_llm_kv_cache_block_metrics{{kv_cache_block_type="{kind}",model="tensorrt_llm",version="1"}} {value}'
        )
    lines += ["# HELP nv_inference_request_success Number of successful inference requests",
              "# TYPE nv_inference_request_success counter",
              'nv_inference_request_success{model="tensorrt_llm",version="1"} 120']  # fmt: skip
    return "\n".join(lines) + "\n"
