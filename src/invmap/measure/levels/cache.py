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
