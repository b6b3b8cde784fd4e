"""L5 (cluster architecture): KV transfers between prefill and decode servers failing or slow, and
data-parallel ranks doing very unequal work."""

from __future__ import annotations

from typing import Any

from invmap.measure.findings import Finding, Missing, Rule, past
from invmap.measure.wording import count, ms, times


def kv_transfer(view: Any, rule: Rule) -> Finding | Missing | None:
    failed = view.counter("kv_transfer_failures")
    gauge = view.gauge("kv_transfer_ms")
    timed = view.hist("kv_transfer_time")
    latency = gauge.value if gauge is not None else None
    if timed is not None and timed[0].mean is not None:
        latency = timed[0].mean * 1000  # the mean of a transfer, where it is a histogram
    if failed is None and latency is None:
        return Missing("KV-transfer metrics (a disaggregated prefill/decode deployment exposes them)")
    if failed is not None and failed.value >= rule.t("failures"):
        return Finding(
            f"{count(failed.value)} KV transfers between prefill and decode servers failed {view.span()}",
            {"kv_transfer_failures": round(failed.value)},
            strength=min(1.0, failed.value / 10),
        )
    ttft = view.hist("ttft")
    if latency is not None and latency > 0 and ttft is not None and ttft[0].count > 0:
        mean_ttft_ms = ttft[0].total / ttft[0].count * 1000
        if mean_ttft_ms > 0 and latency >= rule.t("share") * mean_ttft_ms:
            return Finding(
                f"KV transfer latency {ms(latency)} is {latency / mean_ttft_ms:.2f} of mean TTFT "
                f"{ms(mean_ttft_ms)} (>= {rule.t('share'):.2f})",
                {"kv_transfer_ms": round(latency, 3), "ttft_mean_ms": round(mean_ttft_ms, 3)},
                strength=past(latency / mean_ttft_ms, rule.t("share"), 1.0),
                momentary=timed is None,
            )
    return None


# Gauges read per rank (signal, what it is called, the threshold naming the least that counts).
RANK_GAUGES = (
    ("gen_throughput", "generation throughput", "rate"),
    ("running", "running requests", "requests"),
    ("waiting", "queued requests", "requests"),
    ("kv_usage", "KV usage", "usage"),
)


def rank_imbalance(view: Any, rule: Rule) -> Finding | Missing | None:
    """Ranks doing unequal work: generated tokens (a counter) first, else a gauge read per rank
    (SGLang's gen_throughput, running and queued requests, token usage)."""
    from invmap.measure.names import BY_KEY

    label = BY_KEY[view.engine].rank_label if view.engine else None
    if label is None:
        return Missing("per-rank token counters (vLLM's `engine` or SGLang's `dp_rank` label)")
    ranks = view.counter_by("generation_tokens", label)
    if len(ranks) >= 2:
        found = _imbalance(ranks, rule.t("tokens"), rule.t("ratio"))
        if found is not None:
            return _rank_finding(view, rule, label, found, "generated", "tokens", "tokens_by_rank")
    seen = len(ranks) >= 2
    for key, what, least in RANK_GAUGES:
        by_rank = view.gauge_by(key, label)
        if len(by_rank) < 2:
            continue
        seen = True
        found = _imbalance(by_rank, rule.t(least), rule.t("ratio"))
        if found is not None:
            return _rank_finding(view, rule, label, found, f"read {what} of", "", f"{key}_by_rank", momentary=True)
    return None if seen else Missing(f"two or more data-parallel ranks (`{label}` label)")


def _imbalance(ranks: dict[str, float], least: float, ratio: float) -> tuple[dict[str, float], str, str] | None:
    top = max(ranks, key=lambda r: ranks[r])
    low = min(ranks, key=lambda r: ranks[r])
    if ranks[top] >= least and ranks[top] >= ratio * ranks[low]:
        return ranks, top, low
    return None


def _rank_finding(view: Any, rule: Rule, label: str, found: Any, verb: str, unit: str, key: str,
                  momentary: bool = False) -> Finding:  # fmt: skip
    ranks, top, low = found
    most, least = ranks[top], ranks[low]
    ratio = (
        (f"{most / least:.1f}x" if most / least < 1e6 else times(most / least))
        if least > 0
        else "while the other had none"
    )
    shown = count if unit else _gauge_text
    when = view.span() if not momentary else "at the scrape"
    spread = ", ".join(
        f"{label} {r}: {_gauge_text(v)}" for r, v in sorted(ranks.items(), key=lambda kv: _rank_key(kv[0]))
    )
    return Finding(
        f"data-parallel ranks {verb} {shown(most)} ({label} {top}) to {shown(least)} ({label} {low})"
        f"{' ' + unit if unit else ''} {when}: "
        f"{ratio} (>= {rule.t('ratio'):g}x)" + (f" ({spread})" if momentary else ""),
        {key: {r: round(v, 4) for r, v in sorted(ranks.items())}},
        strength=past(most / least if least > 0 else 10.0, rule.t("ratio"), 4 * rule.t("ratio")),
        momentary=momentary,
    )


def _gauge_text(value: float) -> str:
    return count(value) if value >= 10 or float(value).is_integer() else f"{value:.2f}"


def _rank_key(rank: str) -> tuple[int, str]:
    return (int(rank), "") if rank.isdigit() else (10**9, rank)
