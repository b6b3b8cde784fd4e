"""L5 (cluster architecture): KV transfers between prefill and decode servers failing or slow, and
data-parallel ranks doing very unequal work."""

from __future__ import annotations

from typing import Any

from invmap.measure.findings import Finding, Missing, Rule, past
from invmap.measure.wording import count, ms, times


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
        ratio = (
            (f"{most / least:.1f}x" if most / least < 1e6 else times(most / least))
            if least > 0
            else ("while the other generated nothing")
        )
        return Finding(
            f"data-parallel ranks generated {count(most)} ({label} {top}) to {count(least)} ({label} {low}) tokens "
            f"{view.span()}: {ratio} (>= {rule.t('ratio'):g}x)",
            {"tokens_by_rank": {r: round(v) for r, v in sorted(ranks.items())}},
            strength=past(most / least if least > 0 else 10.0, rule.t("ratio"), 4 * rule.t("ratio")),
        )
    return None
