"""L3 (cache management): the KV cache full and requests preempted, or preempted though the gauge
read lower."""

from __future__ import annotations

from typing import Any

from invmap.measure.findings import Finding, Missing, Rule, past
from invmap.measure.wording import count


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


def prefix_cache_cold(view: Any, rule: Rule) -> Finding | Missing | None:
    """Few prompt tokens found in the prefix cache: a weak lead (the scrape cannot say whether the
    prompts share prefixes at all)."""
    queried, hits = view.counter("prefix_queries"), view.counter("prefix_hits")
    caveat = "; whether the prompts share prefixes is not in the scrape, so this matters only if they do"
    if queried is not None and hits is not None:
        if queried.value < rule.t("queried"):
            return Missing(f"at least {count(rule.t('queried'))} prompt tokens looked up in the prefix cache")
        rate = hits.value / queried.value
        if rate < rule.t("rate"):
            return Finding(
                f"prefix cache hit rate {rate:.1%} (< {rule.t('rate'):.0%}): {count(hits.value)} of "
                f"{count(queried.value)} prompt tokens found {view.span()}{caveat}",
                {"hit_rate": round(rate, 4), "queried_tokens": round(queried.value)},
                strength=0.1,
            )
        return None
    gauge = view.gauge("cache_hit_rate")
    if gauge is None:
        return Missing("prefix-cache counters (queries and hits) or a hit-rate gauge")
    running = view.gauge("running")
    if running is None or running.value <= 0:
        return Missing("requests running beside the cache's hit-rate gauge (an idle engine's rate says nothing)")
    if gauge.value < rule.t("rate"):
        return Finding(
            f"prefix cache hit rate {gauge.value:.1%} over recent requests (< {rule.t('rate'):.0%}){caveat}",
            {"hit_rate": round(gauge.value, 4)},
            strength=0.1,
            momentary=True,
        )
    return None
