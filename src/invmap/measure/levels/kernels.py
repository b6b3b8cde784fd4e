"""L1 (kernel optimization): prefill slower per token than decode, decode at the memory-bandwidth
bound (a scrape's TPOT or a benchmark's), one request at a time with no spread."""

from __future__ import annotations

from typing import Any

from invmap.measure.findings import Finding, Missing, Rule, past, stat
from invmap.measure.wording import count, ms, secs

NO_BOUND = "the model's size and the GPU's memory bandwidth (--model, and --gpu or --bandwidth)"


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
            strength=past(per_prefill / per_decode, rule.t("ratio"), 4 * rule.t("ratio")),
        )
    return None


def _requests(batch: int, context: int) -> str:
    """`1 request of 2,048 tokens`, `4 requests of 1,100 tokens`."""
    return f"{batch:,} request{'s' if batch != 1 else ''} of {context:,} token{'s' if context != 1 else ''}"


def near_bound(
    measured: float, batch: int, context: int, guessed: bool, bound: Any, rule: Rule, where: str
) -> Finding | Missing | None:
    floor = bound.seconds(batch, context)
    if floor is None:
        return Missing(f"a batch and context the roofline takes (the measurements give {_requests(batch, context)})")
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
            f"needs to read {bound.model.display}'s weights and the KV of {_requests(batch, context)}{said} "
            f"at {bound.rate()}: decode is memory-bandwidth bound",
            {"decode_s_per_token": round(measured, 6), "bound_s": round(floor, 6), "batch": batch, "context": context},
            strength=past(rule.t("bound") * floor - measured, 0.0, (rule.t("bound") - 1) * floor or floor),
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
    return near_bound(
        measured, batch, context, guessed, bound, rule, f" ({'TPOT' if 'output_token' in metric else 'ITL'} mean)"
    )


def bench_single_stream(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    concurrency, bound = stat(run, "max_concurrency"), "max"
    if concurrency is None and stat(run, "peak_concurrency") is not None:
        concurrency, bound = stat(run, "peak_concurrency"), "peak"  # never more than one in flight
    mean_concurrency = stat(run, "concurrency")
    median, p99 = stat(run, "tpot_median"), stat(run, "tpot_p99")
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
            strength=0.2,  # where the time goes, not that anything is wrong: one such finding is medium at most
        )
    return None


def bench_decode_near_bandwidth(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    bound = run.get("_bound")
    if bound is None:
        return Missing(NO_BOUND)
    median = stat(run, "tpot_median")
    if median is None or median <= 0:
        return Missing("the TPOT median")
    batch = stat(run, "max_concurrency") or stat(run, "concurrency") or 1
    completed, inputs, outputs = stat(run, "completed"), stat(run, "input_tokens"), stat(run, "output_tokens")
    guessed = not (completed and inputs and outputs)
    context = 2048 if guessed else round(inputs / completed + outputs / completed / 2)
    return near_bound(median / 1000, max(1, round(batch)), context, guessed, bound, rule, " (TPOT median)")
