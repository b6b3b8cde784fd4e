"""The metrics rules' tests: each reads a `View` (one scrape, or the window between two) and returns a
`Finding`, `Missing` or None. None fires on an absent or zero signal, or divides by a number it has
not checked."""

from __future__ import annotations

from typing import Any

from invmap.measure.findings import Finding, Missing, Rule, past
from invmap.measure.wording import count, ms, quantile_json, quantile_text, secs


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
            strength=0.5 + 0.5 * past(kv.value, rule.t("kv_usage"), 1.0),
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
        times = f"{p99.value / p50.value:.0f}x" if p50.value > 0 else "many times"
        least = "at least " if p99.above else ""
        return Finding(
            f"{quantile_text('ITL p99', p99)} is {least}{times} its median {secs(p50.value)} "
            f"(>= {rule.t('ratio'):g}x) while {count(prompts.value)} prompt tokens were prefilled {view.span()}",
            {"itl_p99": quantile_json(p99), "itl_p50": quantile_json(p50), "prompt_tokens": round(prompts.value)},
            strength=past(p99.value / p50.value if p50.value > 0 else 100.0, rule.t("ratio"), 4 * rule.t("ratio")),
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
            strength=past(per_prefill / per_decode, rule.t("ratio"), 4 * rule.t("ratio")),
        )
    return None


NO_BOUND = "the model's size and the GPU's memory bandwidth (--model, and --gpu or --bandwidth)"


def near_bound(
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


def multiplexed(view: Any, rule: Rule) -> Finding | Missing | None:
    """Tenants queueing on one engine: LoRA adapters waiting for slots, or several models' queues."""
    waiting = view.gauge("waiting")
    found = _adapters_waiting(view, rule) or _adapter_slots_full(view, waiting)
    if found is not None:
        return found
    if waiting is None:
        return Missing("a requests-waiting metric")
    return _model_queues(view, rule)


def _adapters_waiting(view: Any, rule: Rule) -> Finding | None:
    lora = view.info("lora_info")
    if lora is None:
        return None
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
    return None


def _adapter_slots_full(view: Any, waiting: Any) -> Finding | None:
    pool = view.gauge("lora_pool_use")
    if pool is not None and waiting is not None and pool.value >= 1.0 and waiting.value >= 1:
        return Finding(
            f"LoRA adapter slots full ({pool.value:.2f}) with {count(waiting.value)} requests waiting",
            {"lora_pool_use": round(pool.value, 4), "waiting": round(waiting.value)},
            strength=0.5,
            momentary=True,
        )
    return None


def _model_queues(view: Any, rule: Rule) -> Finding | None:
    from invmap.measure.names import BY_KEY

    label = BY_KEY[view.engine].model_label if view.engine else "model_name"
    queues = view.gauge_by("waiting", label)
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
                strength=past(latency.value / mean_ttft_ms, rule.t("share"), 1.0),
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
            strength=past(most / least if least > 0 else 10.0, rule.t("ratio"), 4 * rule.t("ratio")),
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
                strength=past(rule.t("rate") - rate, 0.0, rule.t("rate")),
            )
        return None
    gauge = view.gauge("spec_accept_rate")
    if gauge is None or gauge.value <= 0:
        return Missing("speculative-decoding counters (speculative decoding on)")
    if gauge.value < rule.t("rate"):
        return Finding(
            f"speculative acceptance {gauge.value:.2f} over recent batches (< {rule.t('rate'):.2f})",
            {"acceptance_rate": round(gauge.value, 4)},
            strength=past(rule.t("rate") - gauge.value, 0.0, rule.t("rate")),
            momentary=True,
        )
    return None
