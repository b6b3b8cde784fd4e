"""RL (runtime levers): speculative decoding accepting too few draft tokens, from a scrape's counters
or gauge, or a benchmark's acceptance rate."""

from __future__ import annotations

from typing import Any

from invmap.measure.findings import Finding, Missing, Rule, past, stat
from invmap.measure.wording import count


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


def bench_spec_acceptance(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    rate = stat(run, "spec_acceptance")
    if rate is None:
        return Missing("a speculative acceptance rate (vllm bench serve reports it when speculative decoding is on)")
    if rate < rule.t("rate"):
        return Finding(
            f"speculative acceptance {rate:.2f} (< {rule.t('rate'):.2f}) over the benchmark",
            {"acceptance_rate": round(rate, 4)},
            strength=past(rule.t("rate") - rate, 0.0, rule.t("rate")),
        )
    return None
