"""The rules that point from numbers to a level, declared as data beside the levels.

A rule names the signals it reads, the level (or levels) it points to, a sentence saying why, its
weight (1.0 where the engine counts the mechanism itself, such as a preemption or a failed KV
transfer; 0.9 where a latency's shape implies it; 0.8 for a gauge read at one moment), and each
threshold with its rationale: an engine's documentation, a level's own symptom in the catalog
(`[layers]`), or "our judgement" where neither fixes a number. Its `test` reads a `View` (a scrape)
or a benchmark run and returns what it saw: a `Finding` (the numbers that fired it), `Missing` (the
signal it needs is absent) or None (it looked and nothing is wrong). A rule never fires on an absent
or zero signal, and no test divides by a number it has not checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

JUDGEMENT = "our judgement"


class Threshold(NamedTuple):
    name: str
    value: float
    rationale: str


@dataclass(frozen=True)
class Finding:
    text: str
    signals: dict[str, Any]
    strength: float = 0.5  # 0 at the threshold .. 1 far past it
    momentary: bool = False  # read from gauges: true at the moment of the scrape
    levels: tuple[str, ...] | None = None  # when a rule's test picks among its levels


@dataclass(frozen=True)
class Missing:
    needs: str


@dataclass(frozen=True)
class Rule:
    id: str
    levels: tuple[str, ...]
    kind: str  # metrics | bench
    signals: tuple[str, ...]
    why: str
    thresholds: tuple[Threshold, ...]
    test: Callable[..., Finding | Missing | None] = field(repr=False)
    weight: float = 0.9  # 1.0: the engine reports the mechanism itself (a preemption, a failed transfer)

    def t(self, name: str) -> float:
        return next(th.value for th in self.thresholds if th.name == name)


# --- text helpers ------------------------------------------------------------------------------


def secs(value: float) -> str:
    """0.062 -> `62 ms`, 1.84 -> `1.84 s`."""
    if value < 1:
        ms = value * 1000
        return f"{ms:.3g} ms" if ms < 100 else f"{ms:.0f} ms"
    return f"{value:.3g} s"


def ms(value: float) -> str:
    return secs(value / 1000)


def count(value: float) -> str:
    return f"{round(value):,}"


def quantile_text(label: str, quantile: Any, unit: Callable[[float], str] = secs) -> str:
    if quantile.above:
        return f"{label} above {unit(quantile.value)} (the last finite bucket)"
    return f"{label} {unit(quantile.value)} (between {unit(quantile.lower)} and {unit(quantile.upper)})"


def _q(quantile: Any) -> dict[str, Any]:
    return {
        "value": round(quantile.value, 6),
        "lower": round(quantile.lower, 6),
        "upper": None if quantile.upper is None else round(quantile.upper, 6),
        "above_last_bucket": quantile.above,
    }


def _past(value: float, threshold: float, full: float) -> float:
    """How far `value` is past `threshold` toward `full` (0..1)."""
    if full == threshold:
        return 1.0
    return max(0.0, min(1.0, (value - threshold) / (full - threshold)))


# --- metrics rules -----------------------------------------------------------------------------


def _pressure_word(view: Any) -> str:
    return "retractions" if view.engine == "sglang" else "preemptions"


def kv_full_preempting(view: Any, rule: Rule) -> Finding | Missing | None:
    kv = view.gauge("kv_usage", both=True)
    pre = view.counter("preemptions")
    if kv is None:
        return Missing("a KV usage metric")
    if pre is None:
        return Missing("a preemption (retraction) counter")
    if kv.value >= rule.t("kv_usage") and pre.value >= rule.t("preemptions"):
        return Finding(
            f"kv usage {kv.value:.2f} (>= {rule.t('kv_usage'):.2f}) and {count(pre.value)} "
            f"{_pressure_word(view)} {view.span()}",
            {"kv_usage": round(kv.value, 4), "preemptions": round(pre.value), "window_s": view.seconds},
            strength=0.5 + 0.5 * _past(kv.value, rule.t("kv_usage"), 1.0),
        )
    return None


def preempting(view: Any, rule: Rule) -> Finding | Missing | None:
    pre = view.counter("preemptions")
    if pre is None:
        return Missing("a preemption (retraction) counter")
    kv = view.gauge("kv_usage", both=True)
    if pre.value >= rule.t("preemptions") and (kv is None or kv.value < rule.t("kv_usage")):
        reads = f"kv usage reads {kv.value:.2f}" if kv else "no KV usage metric"
        return Finding(
            f"{count(pre.value)} {_pressure_word(view)} {view.span()} while {reads}: the engine evicts running "
            "requests only when KV blocks run out, so the cache filled between readings",
            {"preemptions": round(pre.value), "kv_usage": None if kv is None else round(kv.value, 4)},
            strength=0.3,
        )
    return None


def waiting_with_room(view: Any, rule: Rule) -> Finding | Missing | None:
    waiting = view.gauge("waiting", least=True)  # with two scrapes: a queue at both, not a passing one
    kv = view.gauge("kv_usage")
    if waiting is None:
        return Missing("a requests-waiting metric")
    if kv is None:
        return Missing("a KV usage metric")
    queue = view.hist("queue")
    mean = queue[0].mean if queue else None
    if mean is not None and mean < rule.t("queue_s"):
        return None  # requests wait for the next engine step, not in a queue
    if waiting.value >= rule.t("waiting") and kv.value < rule.t("kv_usage"):
        queued = f", mean queue time {secs(mean)}" if mean is not None else ""
        return Finding(
            f"{count(waiting.value)} requests waiting while kv usage is {kv.value:.2f} (< {rule.t('kv_usage'):.2f})"
            f"{queued}: memory is not what holds them back, the scheduler's batch limits are",
            {"waiting": round(waiting.value), "kv_usage": round(kv.value, 4), "queue_mean_s": mean},
            strength=min(1.0, waiting.value / 20),
            momentary=True,
        )
    return None


def queue_in_ttft(view: Any, rule: Rule) -> Finding | Missing | None:
    queue, ttft = view.hist("queue"), view.hist("ttft")
    if ttft is None:
        return Missing("a TTFT histogram")
    if queue is None:
        return Missing("a queue-time histogram")
    q, t = queue[0], ttft[0]
    if q.count <= 0 or t.count <= 0:
        return Missing(f"finished requests (none {view.span()})")
    mean_q, mean_t = q.total / q.count, t.total / t.count
    if mean_t > 0 and mean_q >= rule.t("share") * mean_t:
        share = mean_q / mean_t
        kv, pre = view.gauge("kv_usage", both=True), view.counter("preemptions")
        full = kv is not None and pre is not None and kv.value >= 0.90 and pre.value >= 1
        return Finding(
            f"queue time is {share:.2f} of TTFT (mean {secs(mean_q)} of {secs(mean_t)}, >= {rule.t('share'):.2f}) "
            f"over {count(t.count)} requests {view.span()}"
            + (": with the KV cache full and requests preempted, they wait for KV blocks" if full else ""),
            {"queue_mean_s": round(mean_q, 6), "ttft_mean_s": round(mean_t, 6), "requests": round(t.count)},
            strength=_past(share, rule.t("share"), 1.0),
            levels=("L3",) if full else None,
        )
    return None


def itl_tail_with_prefill(view: Any, rule: Rule) -> Finding | Missing | None:
    itl = view.hist("itl")
    if itl is None:
        return Missing("an inter-token latency histogram")
    hist = itl[0]
    if hist.count < rule.t("observations"):
        return Missing(
            f"at least {count(rule.t('observations'))} inter-token gaps {view.span()} (there are {count(hist.count)})"
        )
    prompts = view.counter("prompt_tokens")
    if prompts is None:
        return Missing("a prompt-token counter")
    p50, p99 = hist.quantile(0.5), hist.quantile(0.99)
    if p50 is None or p99 is None or p50.above:
        return None
    if prompts.value > 0 and p99.value >= rule.t("ratio") * p50.value and p99.value > 0:
        times = f"{p99.value / p50.value:.0f}x" if p50.value > 0 else "many times"
        least = "at least " if p99.above else ""
        return Finding(
            f"{quantile_text('ITL p99', p99)} is {least}{times} its median {secs(p50.value)} "
            f"(>= {rule.t('ratio'):g}x) while {count(prompts.value)} prompt tokens were prefilled {view.span()}",
            {"itl_p99": _q(p99), "itl_p50": _q(p50), "prompt_tokens": round(prompts.value)},
            strength=_past(p99.value / p50.value if p50.value > 0 else 100.0, rule.t("ratio"), 4 * rule.t("ratio")),
        )
    return None


def prefill_slower_than_decode(view: Any, rule: Rule) -> Finding | Missing | None:
    pre_s = view.counter("prefill_seconds")
    dec_s = view.counter("decode_seconds")
    if pre_s is not None and dec_s is not None:
        prompt, generated = view.counter("prompt_tokens"), view.counter("generation_tokens")
        pre_t = prompt.value if prompt else 0.0
        dec_t = generated.value if generated else 0.0
        pre_time, dec_time = pre_s.value, dec_s.value
    else:
        ptime, dtime = view.hist("prefill_time"), view.hist("decode_time")
        if ptime is None or dtime is None:
            return Missing("prefill- and decode-time metrics")
        plen, glen = view.hist("prompt_len"), view.hist("gen_len")
        if plen is not None and glen is not None:
            pre_t, dec_t = plen[0].total, glen[0].total
            if plen[0].count > 0 and pre_t / plen[0].count < rule.t("prompt"):
                return None  # a short prompt is one forward step, as a decode is: per token they compare badly
        else:
            prompt, generated = view.counter("prompt_tokens"), view.counter("generation_tokens")
            if prompt is None or generated is None:
                return Missing("prompt and output token counts")
            pre_t, dec_t = prompt.value, generated.value
        pre_time, dec_time = ptime[0].total, dtime[0].total
    if pre_t < rule.t("tokens") or dec_t < rule.t("tokens") or dec_time <= 0:
        return Missing(f"at least {count(rule.t('tokens'))} prompt and output tokens {view.span()}")
    per_prefill, per_decode = pre_time / pre_t, dec_time / dec_t
    if per_prefill >= rule.t("ratio") * per_decode:
        return Finding(
            f"prefill takes {secs(per_prefill)} per prompt token, decode {secs(per_decode)} per output token "
            f"(prefill >= {rule.t('ratio'):g}x decode per token) {view.span()}",
            {"prefill_s_per_token": round(per_prefill, 9), "decode_s_per_token": round(per_decode, 9)},
            strength=_past(per_prefill / per_decode, rule.t("ratio"), 4 * rule.t("ratio")),
        )
    return None


NO_BOUND = "the model's size and the GPU's memory bandwidth (--model, and --gpu or --bandwidth)"


def _near_bound(
    measured: float, batch: int, context: int, guessed: bool, bound: Any, rule: Rule, where: str
) -> Finding | Missing | None:
    floor = bound.seconds(batch, context)
    if measured < rule.t("faster") * floor:
        return Missing(
            f"a --model and bandwidth that match the deployment: decode at {secs(measured)} per token is faster than "
            f"the {secs(floor)} bound for {bound.model.display} at {bound.rate()} (quantized weights, or speculative "
            "decoding?)"
        )
    if measured <= rule.t("bound") * floor:
        said = " (invmap's default)" if guessed else ""
        return Finding(
            f"decode takes {secs(measured)} per token{where}, within {rule.t('bound'):g}x of the {secs(floor)} a step "
            f"needs to read {bound.model.display}'s weights and the KV of {batch:,} requests of {context:,} tokens{said} "
            f"at {bound.rate()}: decode is memory-bandwidth bound",
            {"decode_s_per_token": round(measured, 6), "bound_s": round(floor, 6), "batch": batch, "context": context},
            strength=_past(rule.t("bound") * floor - measured, 0.0, (rule.t("bound") - 1) * floor or floor),
        )
    return None


def decode_near_bandwidth(view: Any, rule: Rule) -> Finding | Missing | None:
    bound = getattr(view, "bound", None)
    if bound is None:
        return Missing(NO_BOUND)
    found = view.hist("tpot") or view.hist("itl")
    if found is None or found[0].count <= 0:
        return Missing(f"a TPOT or inter-token histogram with requests {view.span()}")
    hist, metric = found
    measured = hist.mean  # exact (sum / count), where a percentile is only as fine as the buckets
    if measured is None or measured <= 0:
        return None
    running = view.gauge("running")
    batch = max(1, round(running.value)) if running else 1
    plen, glen = view.hist("prompt_len"), view.hist("gen_len")
    guessed = not (plen and glen and plen[0].count > 0 and glen[0].count > 0)
    context = 2048 if guessed else round(plen[0].total / plen[0].count + glen[0].total / glen[0].count / 2)
    return _near_bound(
        measured, batch, context, guessed, bound, rule, f" ({'TPOT' if 'output_token' in metric else 'ITL'} mean)"
    )


def multiplexed(view: Any, rule: Rule) -> Finding | Missing | None:
    lora = view.info("lora_info")
    if lora is not None:
        running = [a for a in lora.get("running_lora_adapters", "").split(",") if a]
        waiting = [a for a in lora.get("waiting_lora_adapters", "").split(",") if a]
        if len(set(running) | set(waiting)) >= rule.t("tenants") and waiting:
            limit = f" (max_lora {lora['max_lora']})" if lora.get("max_lora") else ""
            return Finding(
                f"LoRA adapters {', '.join(running) or 'none'} running and {', '.join(waiting)} waiting{limit}: "
                "adapters queue for slots on one engine",
                {"running_adapters": running, "waiting_adapters": waiting},
                strength=min(1.0, len(waiting) / 4),
                momentary=True,
            )
    pool = view.gauge("lora_pool_use")
    waiting_now = view.gauge("waiting")
    if pool is not None and waiting_now is not None and pool.value >= 1.0 and waiting_now.value >= 1:
        return Finding(
            f"LoRA adapter slots full ({pool.value:.2f}) with {count(waiting_now.value)} requests waiting",
            {"lora_pool_use": round(pool.value, 4), "waiting": round(waiting_now.value)},
            strength=0.5,
            momentary=True,
        )
    from invmap.measure.names import BY_KEY

    label = BY_KEY[view.engine].model_label if view.engine else "model_name"
    queues = view.gauge_by("waiting", label)
    if waiting_now is None:
        return Missing("a requests-waiting metric")
    if len(queues) >= rule.t("tenants") and any(v >= 1 for v in queues.values()):
        shown = ", ".join(f"{m}: {count(v)} waiting" for m, v in sorted(queues.items()))
        return Finding(
            f"{len(queues)} models share one engine, each with its own queue ({shown})",
            {"waiting_by_model": {m: round(v) for m, v in sorted(queues.items())}},
            strength=0.5,
            momentary=True,
        )
    return None


def kv_transfer(view: Any, rule: Rule) -> Finding | Missing | None:
    failed = view.counter("kv_transfer_failures")
    latency = view.gauge("kv_transfer_ms")
    if failed is None and latency is None:
        return Missing("KV-transfer metrics (a disaggregated prefill/decode deployment exposes them)")
    if failed is not None and failed.value >= rule.t("failures"):
        return Finding(
            f"{count(failed.value)} KV transfers between prefill and decode servers failed {view.span()}",
            {"kv_transfer_failures": round(failed.value)},
            strength=min(1.0, failed.value / 10),
        )
    ttft = view.hist("ttft")
    if latency is not None and latency.value > 0 and ttft is not None and ttft[0].count > 0:
        mean_ttft_ms = ttft[0].total / ttft[0].count * 1000
        if mean_ttft_ms > 0 and latency.value >= rule.t("share") * mean_ttft_ms:
            return Finding(
                f"KV transfer latency {ms(latency.value)} is {latency.value / mean_ttft_ms:.2f} of mean TTFT "
                f"{ms(mean_ttft_ms)} (>= {rule.t('share'):.2f})",
                {"kv_transfer_ms": round(latency.value, 3), "ttft_mean_ms": round(mean_ttft_ms, 3)},
                strength=_past(latency.value / mean_ttft_ms, rule.t("share"), 1.0),
                momentary=True,
            )
    return None


def rank_imbalance(view: Any, rule: Rule) -> Finding | Missing | None:
    from invmap.measure.names import BY_KEY

    label = BY_KEY[view.engine].rank_label if view.engine else None
    if label is None:
        return Missing("per-rank token counters (vLLM's `engine` or SGLang's `dp_rank` label)")
    ranks = view.counter_by("generation_tokens", label)
    if len(ranks) < 2:
        return Missing(f"two or more data-parallel ranks (`{label}` label)")
    top = max(ranks, key=lambda r: ranks[r])
    low = min(ranks, key=lambda r: ranks[r])
    most, least = ranks[top], ranks[low]
    if most >= rule.t("tokens") and most >= rule.t("ratio") * least:
        times = f"{most / least:.1f}x" if least > 0 else "while the other generated nothing"
        return Finding(
            f"data-parallel ranks generated {count(most)} ({label} {top}) to {count(least)} ({label} {low}) tokens "
            f"{view.span()}: {times} (>= {rule.t('ratio'):g}x)",
            {"tokens_by_rank": {r: round(v) for r, v in sorted(ranks.items())}},
            strength=_past(most / least if least > 0 else 10.0, rule.t("ratio"), 4 * rule.t("ratio")),
        )
    return None


def spec_acceptance(view: Any, rule: Rule) -> Finding | Missing | None:
    draft, accepted = view.counter("spec_draft_tokens"), view.counter("spec_accepted_tokens")
    if draft is not None and accepted is not None:
        if draft.value < rule.t("drafts"):
            return Missing(f"at least {count(rule.t('drafts'))} draft tokens {view.span()} (speculative decoding on)")
        rate = accepted.value / draft.value
        if rate < rule.t("rate"):
            return Finding(
                f"speculative acceptance {rate:.2f} (< {rule.t('rate'):.2f}): {count(accepted.value)} of "
                f"{count(draft.value)} draft tokens accepted {view.span()}",
                {"acceptance_rate": round(rate, 4), "draft_tokens": round(draft.value)},
                strength=_past(rule.t("rate") - rate, 0.0, rule.t("rate")),
            )
        return None
    gauge = view.gauge("spec_accept_rate")
    if gauge is None or gauge.value <= 0:
        return Missing("speculative-decoding counters (speculative decoding on)")
    if gauge.value < rule.t("rate"):
        return Finding(
            f"speculative acceptance {gauge.value:.2f} over recent batches (< {rule.t('rate'):.2f})",
            {"acceptance_rate": round(gauge.value, 4)},
            strength=_past(rule.t("rate") - gauge.value, 0.0, rule.t("rate")),
            momentary=True,
        )
    return None


# --- benchmark rules ---------------------------------------------------------------------------


def _stat(run: dict[str, Any], name: str) -> float | None:
    value = run.get(name)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None


def bench_ttft_spread(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    low, median = _stat(run, "ttft_min"), _stat(run, "ttft_median")
    tpot_median, tpot_p99 = _stat(run, "tpot_median"), _stat(run, "tpot_p99")
    if median is None:
        return Missing("the TTFT median")
    if low is None:
        return Missing("the TTFT minimum (vllm bench serve writes each request's TTFT with --save-detailed)")
    if tpot_median is None or tpot_p99 is None:
        return Missing("the TPOT median and p99")
    if low > 0 and median >= rule.t("ratio") * low and tpot_median > 0 and tpot_p99 <= rule.t("flat") * tpot_median:
        return Finding(
            f"TTFT median {ms(median)} is {median / low:.0f}x its minimum {ms(low)} (>= {rule.t('ratio'):g}x) "
            f"while TPOT stays flat (p99 {ms(tpot_p99)}, {tpot_p99 / tpot_median:.2f}x its median, "
            f"<= {rule.t('flat'):g}x): requests wait before their first token",
            {"ttft_median_ms": median, "ttft_min_ms": low, "tpot_median_ms": tpot_median, "tpot_p99_ms": tpot_p99},
            strength=_past(median / low, rule.t("ratio"), 4 * rule.t("ratio")),
        )
    return None


def bench_itl_tail(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    median, p99 = _stat(run, "itl_median"), _stat(run, "itl_p99")
    if median is None or p99 is None:
        return Missing("the ITL median and p99 (per-token gaps, not per-request averages)")
    if median > 0 and p99 >= rule.t("ratio") * median:
        return Finding(
            f"ITL p99 {ms(p99)} is {p99 / median:.0f}x its median {ms(median)} (>= {rule.t('ratio'):g}x): "
            "decode steps stall, as they do behind other requests' prefills",
            {"itl_p99_ms": p99, "itl_median_ms": median},
            strength=_past(p99 / median, rule.t("ratio"), 4 * rule.t("ratio")),
        )
    return None


def bench_single_stream(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    concurrency, bound = _stat(run, "max_concurrency"), "max"
    if concurrency is None and _stat(run, "peak_concurrency") is not None:
        concurrency, bound = _stat(run, "peak_concurrency"), "peak"  # never more than one in flight
    mean_concurrency = _stat(run, "concurrency")
    median, p99 = _stat(run, "tpot_median"), _stat(run, "tpot_p99")
    if concurrency is None and mean_concurrency is None:
        return Missing("the concurrency")
    if median is None or p99 is None:
        return Missing("the TPOT median and p99")
    single = (concurrency is not None and concurrency <= 1) or (
        concurrency is None and mean_concurrency is not None and mean_concurrency <= rule.t("one")
    )
    if single and median > 0 and p99 <= rule.t("spread") * median:
        said = f"{bound} concurrency 1" if concurrency is not None else f"mean concurrency {mean_concurrency:.2f}"
        return Finding(
            f"one request at a time ({said}) and TPOT p99 {ms(p99)} within {rule.t('spread'):g}x its median "
            f"{ms(median)}: no batching or queueing, so the time is the per-token cost itself",
            {
                "max_concurrency": concurrency,
                "concurrency": mean_concurrency,
                "tpot_median_ms": median,
                "tpot_p99_ms": p99,
            },
            strength=0.5,
        )
    return None


def bench_overload(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    completed, failed = _stat(run, "completed"), _stat(run, "failed")
    if completed is None or failed is None:
        return Missing("completed and failed request counts")
    total = completed + failed
    unbounded = run.get("unbounded")
    if unbounded is None:
        return Missing("the request rate")
    if total > 0 and failed >= rule.t("failed") * total and unbounded:
        return Finding(
            f"{count(failed)} of {count(total)} requests failed ({failed / total:.1%}, >= {rule.t('failed'):.0%}) "
            "with requests sent as fast as possible: the server was driven past what it can admit",
            {"failed": round(failed), "requests": round(total)},
            strength=_past(failed / total, rule.t("failed"), 0.5),
        )
    return None


def bench_decode_near_bandwidth(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    bound = run.get("_bound")
    if bound is None:
        return Missing(NO_BOUND)
    median = _stat(run, "tpot_median")
    if median is None or median <= 0:
        return Missing("the TPOT median")
    batch = _stat(run, "max_concurrency") or _stat(run, "concurrency") or 1
    completed, inputs, outputs = _stat(run, "completed"), _stat(run, "input_tokens"), _stat(run, "output_tokens")
    guessed = not (completed and inputs and outputs)
    context = 2048 if guessed else round(inputs / completed + outputs / completed / 2)
    return _near_bound(median / 1000, max(1, round(batch)), context, guessed, bound, rule, " (TPOT median)")


def bench_spec_acceptance(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    rate = _stat(run, "spec_acceptance")
    if rate is None:
        return Missing("a speculative acceptance rate (vllm bench serve reports it when speculative decoding is on)")
    if rate < rule.t("rate"):
        return Finding(
            f"speculative acceptance {rate:.2f} (< {rule.t('rate'):.2f}) over the benchmark",
            {"acceptance_rate": round(rate, 4)},
            strength=_past(rule.t("rate") - rate, 0.0, rule.t("rate")),
        )
    return None


# --- the declaration ---------------------------------------------------------------------------

L3_PREEMPT = (
    "L3 symptom: 'requests are preempted or swapped out because the KV cache is full'; vLLM preempts and "
    "SGLang retracts a running request only when KV blocks run out"
)

RULES: tuple[Rule, ...] = (
    Rule(
        "kv-full-preempting",
        ("L3",),
        "metrics",
        ("kv_usage", "preemptions"),
        "The KV cache is nearly full and the engine is evicting running requests to make room: capacity is lost "
        "to KV management.",
        (
            Threshold("kv_usage", 0.90, JUDGEMENT + ": at 0.90 a few long requests' blocks are all that is left"),
            Threshold("preemptions", 1, L3_PREEMPT),
        ),
        kv_full_preempting,
        weight=1.0,
    ),
    Rule(
        "preempting",
        ("L3",),
        "metrics",
        ("preemptions",),
        "Requests were evicted for lack of KV blocks although the usage gauge, read at the scrape, is lower.",
        (Threshold("preemptions", 1, L3_PREEMPT), Threshold("kv_usage", 0.90, "the rule above covers a full cache")),
        preempting,
        weight=0.8,
    ),
    Rule(
        "waiting-with-room",
        ("L2",),
        "metrics",
        ("waiting", "kv_usage"),
        "Requests queue while most of the KV cache is free: batch size is limited by the scheduler "
        "(max running requests, token budget), not by memory.",
        (
            Threshold("waiting", 1, "L2 symptom: 'queueing delay grows with load while the GPU has room'"),
            Threshold("kv_usage", 0.50, JUDGEMENT + ": with half the KV pool free, memory does not hold requests back"),
            Threshold("queue_s", 0.1, JUDGEMENT + ": a mean wait under 0.1 s is the next engine step, not a queue"),
        ),
        waiting_with_room,
        weight=0.8,
    ),
    Rule(
        "queue-in-ttft",
        ("L2",),
        "metrics",
        ("queue", "ttft"),
        "Most of the time to first token is spent waiting to be scheduled, not computing the prefill (with the KV "
        "cache full and requests preempted, the wait is for KV blocks: L3).",
        (
            Threshold(
                "share",
                0.50,
                JUDGEMENT + " ('the largest part'); vLLM's TTFT includes queueing (L2 metric: 'queue time')",
            ),
        ),
        queue_in_ttft,
    ),
    Rule(
        "itl-tail-with-prefill",
        ("L2",),
        "metrics",
        ("itl", "prompt_tokens"),
        "Token gaps have a long tail while prompts are being prefilled: decodes stall behind prefills in the same "
        "batches.",
        (
            Threshold(
                "ratio",
                5,
                "L2 symptom: 'inter-token latency spikes while other requests are in prefill'; 5x is " + JUDGEMENT,
            ),
            Threshold("observations", 100, JUDGEMENT + ": a p99 of fewer than 100 gaps is the maximum"),
        ),
        itl_tail_with_prefill,
    ),
    Rule(
        "prefill-slower-than-decode",
        ("L1",),
        "metrics",
        ("prefill_time", "decode_time", "prompt_len", "gen_len"),
        "A prompt's tokens are processed in one batched pass, so per token prefill should cost a fraction of a "
        "decode step; when it does not, the prefill (attention) kernels are suspect.",
        (
            Threshold(
                "ratio",
                1.0,
                "L1 symptom: 'attention kernel time grows steeply with sequence length'; 1x is " + JUDGEMENT,
            ),
            Threshold("tokens", 100, JUDGEMENT + ": fewer tokens make a per-token time noise"),
            Threshold("prompt", 128, JUDGEMENT + ": a prompt shorter than this (on average) is one forward step"),
        ),
        prefill_slower_than_decode,
    ),
    Rule(
        "decode-near-bandwidth",
        ("L1",),
        "metrics",
        ("tpot",),
        "Per-token decode time near the time to read the weights and KV once from memory means decode is "
        "memory-bandwidth bound (L1 symptom: 'decode steps are memory-bandwidth bound').",
        (
            Threshold("bound", 1.2, JUDGEMENT + ": within 1.2x of the bandwidth bound"),
            Threshold("faster", 0.8, JUDGEMENT + ": well under the bound, the model or bandwidth given is not the one"),
        ),
        decode_near_bandwidth,
    ),
    Rule(
        "multiplexed",
        ("L4",),
        "metrics",
        ("lora_info", "lora_pool_use", "waiting"),
        "Several adapters or models share one engine and queue separately: capacity is divided between them.",
        (Threshold("tenants", 2, "L4 symptom: 'a burst for one model starves the others sharing its GPU'"),),
        multiplexed,
        weight=0.8,
    ),
    Rule(
        "kv-transfer",
        ("L5",),
        "metrics",
        ("kv_transfer_failures", "kv_transfer_ms", "ttft"),
        "The KV hand-off between prefill and decode servers fails or takes a large part of the first token's time.",
        (
            Threshold("failures", 1, "L5 symptom: 'KV transfers fail or time out between instances'"),
            Threshold(
                "share",
                0.25,
                "L5 symptom: 'first-token delay includes a long network wait after prefill finishes'; 0.25 is "
                + JUDGEMENT,
            ),
        ),
        kv_transfer,
        weight=1.0,
    ),
    Rule(
        "rank-imbalance",
        ("L5",),
        "metrics",
        ("generation_tokens",),
        "Data-parallel ranks do very unequal work: placement or routing leaves some ranks idle.",
        (
            Threshold("ratio", 2.0, JUDGEMENT + ": one rank doing twice another's work"),
            Threshold("tokens", 1000, JUDGEMENT + ": enough tokens that the split is not chance"),
        ),
        rank_imbalance,
    ),
    Rule(
        "spec-acceptance",
        ("RL",),
        "metrics",
        ("spec_draft_tokens", "spec_accepted_tokens", "spec_accept_rate"),
        "Speculative decoding accepts too few draft tokens to pay for drafting and verifying them.",
        (
            Threshold(
                "rate",
                0.50,
                "symptom in the map: 'speculative decoding's acceptance rate is too low to pay for verification'; "
                "0.5 is " + JUDGEMENT,
            ),
            Threshold("drafts", 100, JUDGEMENT + ": fewer draft tokens make a rate noise"),
        ),
        spec_acceptance,
        weight=1.0,
    ),
    Rule(
        "bench-ttft-spread",
        ("L2",),
        "bench",
        ("ttft_min", "ttft_median", "tpot_median", "tpot_p99"),
        "First tokens take many times the fastest one while per-token time stays flat: requests queue.",
        (
            Threshold("ratio", 5, "L2 symptom: 'bursts of arrivals make first tokens slow'; 5x is " + JUDGEMENT),
            Threshold("flat", 1.5, JUDGEMENT + ": TPOT p99 within 1.5x its median is flat"),
        ),
        bench_ttft_spread,
    ),
    Rule(
        "bench-itl-tail",
        ("L2",),
        "bench",
        ("itl_median", "itl_p99"),
        "Per-token gaps have a long tail: decode steps stall behind prefills (prefill/decode interference).",
        (Threshold("ratio", 5, "L2 symptom: 'tail TTFT or TPOT far above the median'; 5x is " + JUDGEMENT),),
        bench_itl_tail,
    ),
    Rule(
        "bench-single-stream",
        ("L1",),
        "bench",
        ("max_concurrency", "concurrency", "tpot_median", "tpot_p99"),
        "With one request at a time and no spread, per-token time is the kernels' own cost.",
        (
            Threshold("spread", 1.2, JUDGEMENT + ": p99 within 1.2x the median is no spread"),
            Threshold("one", 1.05, JUDGEMENT + ": a mean concurrency up to 1.05 is one request at a time"),
        ),
        bench_single_stream,
    ),
    Rule(
        "bench-overload",
        ("L2", "L6"),
        "bench",
        ("completed", "failed", "request_rate"),
        "Many requests fail at an unbounded request rate: admission and scheduling (L2) and the controller that "
        "should shed or scale (L6) are overrun.",
        (Threshold("failed", 0.05, JUDGEMENT + ": 5% failed requests is not noise"),),
        bench_overload,
    ),
    Rule(
        "bench-decode-near-bandwidth",
        ("L1",),
        "bench",
        ("tpot_median", "max_concurrency", "input_tokens", "output_tokens"),
        "Per-token decode time near the time to read the weights and KV once from memory means decode is "
        "memory-bandwidth bound (L1 symptom: 'decode steps are memory-bandwidth bound').",
        (
            Threshold("bound", 1.2, JUDGEMENT + ": within 1.2x of the bandwidth bound"),
            Threshold("faster", 0.8, JUDGEMENT + ": well under the bound, the model or bandwidth given is not the one"),
        ),
        bench_decode_near_bandwidth,
    ),
    Rule(
        "bench-spec-acceptance",
        ("RL",),
        "bench",
        ("spec_acceptance",),
        "Speculative decoding accepts too few draft tokens to pay for drafting and verifying them.",
        (
            Threshold(
                "rate",
                0.50,
                "symptom in the map: 'speculative decoding's acceptance rate is too low to pay for verification'; "
                "0.5 is " + JUDGEMENT,
            ),
        ),
        bench_spec_acceptance,
        weight=1.0,
    ),
)
BY_ID = {r.id: r for r in RULES}
