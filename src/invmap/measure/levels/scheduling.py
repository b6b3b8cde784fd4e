"""L2 (phase scheduling): requests queueing while the KV cache has room, queue time as the larger
part of TTFT, token gaps with a long tail while prompts are prefilled; and a benchmark's TTFT spread and
ITL tail."""

from __future__ import annotations

from typing import Any

from invmap.measure.findings import Finding, Missing, Rule, past, stat
from invmap.measure.wording import count, ms, quantile_json, quantile_text, secs, times


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
            strength=past(share, rule.t("share"), 1.0),
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
        ratio = times(p99.value / p50.value) if p50.value > 0 else "many times"
        least = "at least " if p99.above else ""
        return Finding(
            f"{quantile_text('ITL p99', p99)} is {least}{ratio} its median {secs(p50.value)} "
            f"(>= {rule.t('ratio'):g}x) while {count(prompts.value)} prompt tokens were prefilled {view.span()}",
            {"itl_p99": quantile_json(p99), "itl_p50": quantile_json(p50), "prompt_tokens": round(prompts.value)},
            strength=past(p99.value / p50.value if p50.value > 0 else 100.0, rule.t("ratio"), 4 * rule.t("ratio")),
        )
    return None


def bench_ttft_spread(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    low, median = stat(run, "ttft_min"), stat(run, "ttft_median")
    tpot_median, tpot_p99 = stat(run, "tpot_median"), stat(run, "tpot_p99")
    if median is None:
        return Missing("the TTFT median")
    if low is None:
        return Missing("the TTFT minimum (vllm bench serve writes each request's TTFT with --save-detailed)")
    if tpot_median is None or tpot_p99 is None:
        return Missing("the TPOT median and p99")
    if low > 0 and median >= rule.t("ratio") * low and tpot_median > 0 and tpot_p99 <= rule.t("flat") * tpot_median:
        return Finding(
            f"TTFT median {ms(median)} is {times(median / low)} its minimum {ms(low)} (>= {rule.t('ratio'):g}x) "
            f"while TPOT stays flat (p99 {ms(tpot_p99)}, {tpot_p99 / tpot_median:.2f}x its median, "
            f"<= {rule.t('flat'):g}x): requests wait before their first token",
            {"ttft_median_ms": median, "ttft_min_ms": low, "tpot_median_ms": tpot_median, "tpot_p99_ms": tpot_p99},
            strength=past(median / low, rule.t("ratio"), 4 * rule.t("ratio")),
        )
    return None


def bench_itl_tail(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    median, p99 = stat(run, "itl_median"), stat(run, "itl_p99")
    if median is None or p99 is None:
        return Missing("the ITL median and p99 (per-token gaps, not per-request averages)")
    if median > 0 and p99 >= rule.t("ratio") * median:
        tpot_median, tpot_p99 = stat(run, "tpot_median"), stat(run, "tpot_p99")
        shared = tpot_median is not None and tpot_p99 is not None and 0 < tpot_p99 <= FLAT_TPOT * tpot_median
        return Finding(
            f"ITL p99 {ms(p99)} is {times(p99 / median)} its median {ms(median)} (>= {rule.t('ratio'):g}x): "
            "decode steps stall, as they do behind other requests' prefills"
            + (
                f"; TPOT stays flat (p99 {ms(tpot_p99)}, {tpot_p99 / tpot_median:.2f}x its median), so every request "  # type: ignore[operator]
                "saw the same stalls, as a burst of prompts at a benchmark's start makes"
                if shared
                else ""
            ),
            {"itl_p99_ms": p99, "itl_median_ms": median},
            strength=0.2 if shared else past(p99 / median, rule.t("ratio"), 4 * rule.t("ratio")),
        )
    return None


FLAT_TPOT = 1.5  # TPOT p99 within this of its median: each request's average per-token time is alike


def bench_queue_share(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    median, duration = stat(run, "ttft_median"), stat(run, "duration")
    served = stat(run, "request_throughput")
    if median is None or duration is None or duration <= 0:
        return Missing("the TTFT median and the run's duration")
    unbounded = bool(run.get("unbounded"))
    rate = stat(run, "request_rate")
    if not unbounded and (rate is None or served is None):
        return Missing("the request rate sent and completed")
    offered = unbounded or (
        served is not None and rate is not None and served > 0 and rate >= rule.t("offered") * served
    )
    share = median / 1000 / duration
    least = rule.t("share") if unbounded else rule.t("sustained")  # a burst vs a rate the server cannot keep
    if offered and share >= least:
        sent = "all at once" if unbounded else f"at {rate:g} req/s against {served:g} req/s completed"
        lead = "; sent all at once, any server queues most of them, so this is a lead, not a verdict"
        return Finding(
            f"the median request waited {ms(median)} for its first token, {share:.0%} of the {duration:g} s run "
            f"(>= {least:.0%}), with requests sent {sent}: they queue for a place in the batch"
            + (lead if unbounded else ""),
            {"ttft_median_ms": median, "duration_s": duration, "share": round(share, 4)},
            strength=0.2 if unbounded else past(share, least, 0.75),
        )
    return None


def bench_first_token_backlog(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    """Requests waiting for a first token, by Little's law (completed rate x mean TTFT, the median
    where no mean is printed): tens of them queue for the batch (a lead), unless the rate offered was
    one the server kept up with."""
    served = stat(run, "request_throughput")
    ttft = stat(run, "ttft_mean")
    which = "mean"
    if ttft is None:
        ttft, which = stat(run, "ttft_median"), "median"
    if served is None or ttft is None:
        return Missing("the completed request rate and the mean (or median) TTFT")
    rate = stat(run, "request_rate")
    if rate is not None and not run.get("unbounded") and rate < rule.t("offered") * served:
        return None  # a rate the server keeps up with: long first tokens are prefills, not a backlog
    waiting = served * ttft / 1000  # Little's law: arrivals a second x seconds each waits
    if waiting >= rule.t("waiting"):
        return Finding(
            f"{served:g} req/s completed x TTFT {which} {ms(ttft)} = {waiting:.0f} requests waiting for a first "
            f"token on average (Little's law, >= {rule.t('waiting'):g}): they queue for a place in the batch; "
            "a lead, since a burst the benchmark sends on purpose queues the same way",
            {"request_throughput": served, f"ttft_{which}_ms": ttft, "waiting": round(waiting, 1)},
            strength=0.2,
        )
    return None
