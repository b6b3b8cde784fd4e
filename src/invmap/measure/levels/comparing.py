"""Two benchmark runs compared (`triage --bench A --bench B`): what got worse by more than a declared
threshold, and the level the change points to. Each test reads a pair `{"before": run, "after": run}`
and returns one `Finding` (its signals `{before, after, change}`, for the statistic that moved most),
`Missing` or None. Improvements are not findings: assessing.py says them in a note."""

from __future__ import annotations

import math
from typing import Any

from invmap.measure.findings import Finding, Missing, Rule, past, stat
from invmap.measure.wording import count, ms

LATENCY_NAMES = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL"}
# The statistics each latency rule reads, in the order its evidence names them.
PER_TOKEN = ("tpot_median", "tpot_p99", "itl_median", "itl_p99")
FIRST_TOKEN = ("ttft_median", "ttft_p99")
LATENCY_RULES = {"compare-tpot": PER_TOKEN, "compare-ttft": FIRST_TOKEN}


def change(pair: dict[str, Any], key: str) -> tuple[float, float, float] | None:
    """(before, after, relative change) of a run's number, where both runs hold it and before is above 0."""
    before, after = stat(pair["before"], key), stat(pair["after"], key)
    if before is None or after is None or before <= 0:
        return None
    rel = (after - before) / before
    return (before, after, rel) if math.isfinite(rel) else None  # a before near 0 makes no ratio


def _said(key: str, moved: tuple[float, float, float]) -> str:
    family, _, which = key.rpartition("_")
    name = f"{LATENCY_NAMES.get(family, family)} {which}"
    before, after, rel = moved
    return f"{name} {ms(before)} -> {ms(after)} ({rel:+.0%})"


def _signals(key: str, moved: tuple[float, float, float]) -> dict[str, Any]:
    before, after, rel = moved
    return {"statistic": key, "before": before, "after": after, "change": round(rel, 4)}


def centred(pair: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, ...]:
    """`keys` with each median both runs lack replaced by the mean, where both runs print that: a block
    cut short after "Mean TTFT", or a tool that prints no median, is compared on what it has."""

    def one(key: str) -> str:
        if key.endswith("_median") and change(pair, key) is None:
            mean = key.removesuffix("_median") + "_mean"
            return mean if change(pair, mean) is not None else key
        return key

    return tuple(one(k) for k in keys)


def _worse(pair: dict[str, Any], keys: tuple[str, ...], threshold: float) -> dict[str, tuple[float, float, float]]:
    found = {k: change(pair, k) for k in keys}
    return {k: v for k, v in found.items() if v is not None and v[2] >= threshold}


def _flat(pair: dict[str, Any], keys: tuple[str, ...], threshold: float) -> str:
    """`TTFT is flat (median 120 ms -> 125 ms)` where every one of `keys` held within the threshold."""
    moved = {k: change(pair, k) for k in keys}
    if any(v is None for v in moved.values()) or any(abs(v[2]) >= threshold for v in moved.values()):  # type: ignore[index]
        return ""
    return ", ".join(_said(k, v) for k, v in moved.items() if v is not None)


def compare_tpot(pair: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    """Per-token time up: the median, or the mean where a run prints no median (every request's tokens
    cost more: L1), or only the tail (some steps stall: interference, L2 first)."""
    keys = centred(pair, PER_TOKEN)
    if all(change(pair, k) is None for k in keys):
        return Missing("TPOT or ITL in both runs")
    worse = _worse(pair, keys, rule.t("change"))
    if not worse:
        return None
    key = max(worse, key=lambda k: worse[k][2])
    median_up = any(k.endswith(("_median", "_mean")) for k in worse)
    flat = _flat(pair, centred(pair, ("ttft_median",)), rule.t("change"))
    shown = "; ".join(_said(k, v) for k, v in worse.items())
    if median_up:
        centre = "median" if any(k.endswith("_median") for k in worse) else "mean"
        why = f"the {centre} moved, so every request's tokens cost more: the per-token (kernel) cost"
        levels = ("L1",)
    else:
        why = "only the tail moved: some decode steps stall, as behind other requests' prefills (L2; else a slower kernel for some shapes, L1)"
        levels = ("L2",)
    return Finding(
        f"{shown} (>= {rule.t('change'):+.0%}){' while ' + flat + ' is flat' if flat else ''}: {why}",
        _signals(key, worse[key]),
        strength=past(worse[key][2], rule.t("change"), 4 * rule.t("change")),
        levels=levels,
    )


def compare_ttft(pair: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    """Time to first token up: requests wait longer before their prefill (admission, queueing)."""
    keys = centred(pair, FIRST_TOKEN)
    if all(change(pair, k) is None for k in keys):
        return Missing("TTFT in both runs")
    worse = _worse(pair, keys, rule.t("change"))
    if not worse:
        return None
    key = max(worse, key=lambda k: worse[k][2])
    flat = _flat(pair, centred(pair, ("tpot_median",)), rule.t("change"))
    return Finding(
        f"{'; '.join(_said(k, v) for k, v in worse.items())} (>= {rule.t('change'):+.0%})"
        f"{' while ' + flat + ' is flat' if flat else ''}: requests wait longer for their first token",
        _signals(key, worse[key]),
        strength=past(worse[key][2], rule.t("change"), 4 * rule.t("change")),
    )


def _rate(value: float) -> str:
    """A throughput as a reader compares it: whole above 100 (`10,308`), else two decimals (`17.67`)."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


# The throughputs a run may print, in the order one is compared: the first both runs hold.
THROUGHPUTS = (
    ("output_throughput", "output throughput", "tok/s"),
    ("total_throughput", "token throughput (prompt and output)", "tok/s"),
    ("request_throughput", "request throughput", "req/s"),
)


def _throughput(pair: dict[str, Any]) -> tuple[str, str, str, tuple[float, float, float]] | None:
    """The first throughput of THROUGHPUTS both runs print: (key, name, unit, its change), else None."""
    for key, name, unit in THROUGHPUTS:
        moved = change(pair, key)
        if moved is not None:
            return key, name, unit, moved
    return None


def compare_throughput(pair: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    """Throughput down at the same load. Where the per-token time rose with it, each token costs more
    (the kernels, L1); where it held, the tokens cost what they did and fewer requests shared a step
    (the batches the scheduler forms, L2); where neither run prints a per-token time (an offline run),
    throughput is a metric of the map's L2 and L2 comes first, the kernels (L1) the other reading."""
    found = _throughput(pair)
    if found is None:
        return Missing("a throughput of both runs (output tokens, all tokens or requests a second)")
    key, name, unit, (before, after, rel) = found
    if -rel < rule.t("change"):
        return None
    medians = centred(pair, PER_TOKEN[:1] + PER_TOKEN[2:3])  # TPOT, else ITL (their means where no median)
    token, moved = next(((k, m) for k in medians if (m := change(pair, k)) is not None), (None, None))
    if token is None or moved is None:
        why = ("neither run prints a per-token time, so the runs cannot tell slower kernels (L1) from fewer requests "
               "a step or more scheduler time between steps (L2, first: the map measures throughput at that layer)")  # fmt: skip
        levels: tuple[str, ...] = ("L2",)
    else:
        said = _said(token, moved)
        if moved[2] >= rule.t("change"):
            why, levels = f"with {said}: each token costs more, the per-token (kernel) cost", ("L1",)
        else:
            held = "held: tokens cost what they did" if moved[2] > -rule.t("change") else "fell: tokens cost less"
            why = f"while {said} {held}, so fewer requests shared each step (the batches the scheduler forms)"
            levels = ("L2",)
    return Finding(
        f"{name} {_rate(before)} -> {_rate(after)} {unit} ({rel:+.0%}, a fall of >= {rule.t('change'):.0%}): {why}",
        _signals(key, (before, after, rel)),
        strength=past(-rel, rule.t("change"), 0.5),
        levels=levels,
    )


def compare_failures(pair: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    """More requests failed: admission is overrun (L2) and nothing sheds or scales (L6)."""
    shares = []
    for side in ("before", "after"):
        done, failed = stat(pair[side], "completed"), stat(pair[side], "failed")
        if done is None or failed is None or done + failed < rule.t("requests"):
            return Missing(f"completed and failed counts of at least {count(rule.t('requests'))} requests in both runs")
        shares.append((failed / (done + failed), failed, done + failed))
    (b, bf, bn), (a, af, an) = shares
    if a - b < rule.t("share"):
        return None
    return Finding(
        f"failed requests {count(bf)} of {count(bn)} ({b:.1%}) -> {count(af)} of {count(an)} ({a:.1%}): "
        f"{a - b:+.1%} of all requests (>= {rule.t('share'):.0%})",
        {"statistic": "failed_share", "before": round(b, 4), "after": round(a, 4), "change": round(a - b, 4)},
        strength=past(a - b, rule.t("share"), 0.5),
    )


def largest_rise(pair: dict[str, Any], rules: dict[str, Rule]) -> str:
    """Where no latency rule fired: the statistic that rose most, said against the threshold of the
    rule that reads it (`TTFT median 62.7 ms -> 74.5 ms (+19%; compare-ttft fires at +20%)`), so a
    reader sees how near the runs came; "" where nothing rose."""
    rises = [(moved, key, rule_id) for rule_id, keys in LATENCY_RULES.items() if rule_id in rules
             for key in centred(pair, keys) if (moved := change(pair, key)) is not None and moved[2] > 0]  # fmt: skip
    if not rises:
        return ""
    moved, key, rule_id = max(rises, key=lambda r: r[0][2])
    said = _said(key, moved)
    return f"{said[: said.rindex(' (')]} ({moved[2]:+.0%}; {rule_id} fires at {rules[rule_id].t('change'):+.0%})"


def largest_fall(pair: dict[str, Any], rules: dict[str, Rule]) -> str:
    """Where compare-throughput did not fire: the throughput it compares, where it fell, said against
    its threshold (`token throughput (prompt and output) 857 -> 830 tok/s (-3%; compare-throughput fires
    at -10%)`); "" where it did not fall or the rule is not declared."""
    found = _throughput(pair)
    if found is None or "compare-throughput" not in rules:
        return ""
    _, name, unit, (before, after, rel) = found
    if rel >= 0:
        return ""
    return f"{name} {_rate(before)} -> {_rate(after)} {unit} ({rel:+.0%}; compare-throughput fires at {-rules['compare-throughput'].t('change'):+.0%})"
