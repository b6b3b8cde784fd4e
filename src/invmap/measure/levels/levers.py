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
        drafts = view.counter("spec_drafts")
        length = 1 + accepted.value / drafts.value if drafts is not None and drafts.value > 0 else None
        if rate < rule.t("rate") and (length is None or length < rule.t("length")):
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
    length = view.gauge("spec_accept_length")
    if gauge.value < rule.t("rate") and (length is None or length.value < rule.t("length")):
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
    length = stat(run, "spec_length")
    if rate < rule.t("rate") and (length is None or length < rule.t("length")):
        yields = f", {length:.2f} tokens a step (< {rule.t('length'):g})" if length is not None else ""
        return Finding(
            f"speculative acceptance {rate:.2f} (< {rule.t('rate'):.2f}) over the benchmark{yields}",
            {"acceptance_rate": round(rate, 4), "acceptance_length": length},
            strength=past(rule.t("rate") - rate, 0.0, rule.t("rate")),
        )
    return None


def spec_position(view: Any, rule: Rule) -> Finding | Missing | None:
    """Per-position acceptance (accepted at position k / drafts): a position almost never accepted."""
    by_position = view.counter_by("spec_accepted_by_position", "position")
    drafts = view.counter("spec_drafts")
    if not by_position or drafts is None:
        return Missing("per-position speculative counters and the number of drafts (speculative decoding on)")
    if drafts.value < rule.t("drafts"):
        return Missing(f"at least {count(rule.t('drafts'))} speculative drafts {view.span()}")
    rates = {p: v / drafts.value for p, v in by_position.items()}
    return _positions(rates, rule, f" over {count(drafts.value)} drafts {view.span()}")


def bench_spec_position(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    rates = {k.removeprefix("spec_position_"): v for k, v in run.items() if k.startswith("spec_position_")}
    rates = {p: v for p, v in rates.items() if isinstance(v, float)}
    if not rates:
        return Missing("per-position speculative acceptance (vllm bench serve prints it with speculative decoding)")
    return _positions(rates, rule, " over the benchmark")


def _positions(rates: dict[str, float], rule: Rule, where: str) -> Finding | None:
    order = sorted(rates, key=lambda p: (int(p) if p.isdigit() else 10**9, p))
    rare = [p for p in order if rates[p] < rule.t("rate")]
    if not rare:
        return None
    shown = ", ".join(f"{p}: {rates[p]:.0%}" for p in order)
    return Finding(
        f"draft position{'s' if len(rare) > 1 else ''} {', '.join(rare)} accepted in under {rule.t('rate'):.0%} of "
        f"drafts{where} (by position {shown}): fewer speculative tokens would waste less",
        {"acceptance_by_position": {p: round(rates[p], 4) for p in order}},
        strength=past(rule.t("rate") - min(rates[p] for p in rare), 0.0, rule.t("rate")),
    )
