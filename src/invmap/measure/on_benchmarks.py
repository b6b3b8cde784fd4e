"""The benchmark rules' tests: each reads one run of a benchmark's results (latencies in
milliseconds) and returns a `Finding`, `Missing` or None."""

from __future__ import annotations

import math
from typing import Any

from invmap.measure.findings import Finding, Missing, Rule, past
from invmap.measure.on_scrapes import NO_BOUND, near_bound
from invmap.measure.wording import count, ms


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
            strength=past(median / low, rule.t("ratio"), 4 * rule.t("ratio")),
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
            strength=past(p99 / median, rule.t("ratio"), 4 * rule.t("ratio")),
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
            strength=past(failed / total, rule.t("failed"), 0.5),
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
    return near_bound(median / 1000, max(1, round(batch)), context, guessed, bound, rule, " (TPOT median)")


def bench_spec_acceptance(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    rate = _stat(run, "spec_acceptance")
    if rate is None:
        return Missing("a speculative acceptance rate (vllm bench serve reports it when speculative decoding is on)")
    if rate < rule.t("rate"):
        return Finding(
            f"speculative acceptance {rate:.2f} (< {rule.t('rate'):.2f}) over the benchmark",
            {"acceptance_rate": round(rate, 4)},
            strength=past(rule.t("rate") - rate, 0.0, rule.t("rate")),
        )
    return None
