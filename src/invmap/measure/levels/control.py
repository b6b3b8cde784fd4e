"""L2 and L6 (admission, and the control that should shed or scale): requests aborted or failed,
as a share of those a scrape counts finished, or of a benchmark run's sent as fast as possible."""

from __future__ import annotations

from typing import Any

from invmap.measure.findings import Finding, Missing, Rule, past, stat
from invmap.measure.wording import count


def failed_requests(view: Any, rule: Rule) -> Finding | Missing | None:
    aborted, finished = view.counter("aborted"), view.counter("finished")
    if aborted is None or finished is None:
        return Missing("finished and aborted-or-failed request counts")
    if finished.value < rule.t("requests"):
        return Missing(f"at least {count(rule.t('requests'))} finished requests {view.span()}")
    if aborted.value >= rule.t("failed") * finished.value:
        share = aborted.value / finished.value
        split = disaggregated(view)
        return Finding(
            f"{count(aborted.value)} of {count(finished.value)} finished requests were aborted or failed "
            f"({share:.1%}, >= {rule.t('failed'):.0%}) {view.span()}"
            + (
                f" on a disaggregated prefill/decode server (it exposes {split}): the hand-off between the two "
                "is where requests are lost"
                if split
                else ""
            ),  # fmt: skip
            {"aborted": round(aborted.value), "requests": round(finished.value), "window_s": view.seconds},
            strength=past(share, rule.t("failed"), 0.5),
            levels=("L5",) if split else ("L2", "L6"),
        )
    return None


DISAGGREGATED = ("kv_transfer_failures", "kv_transfer_ms", "kv_transfer_time")  # signals only a P/D split exposes


def disaggregated(view: Any) -> str:
    """The metric that says a server hands KV between prefill and decode instances ("" when none)."""
    import invmap.measure.names as names

    for key in DISAGGREGATED:
        for name in names.BY_SIGNAL[key].names:
            if name.engine == view.engine and view.exposes(key, name):
                return name.metric
    return ""


def bench_overload(run: dict[str, Any], rule: Rule) -> Finding | Missing | None:
    completed, failed = stat(run, "completed"), stat(run, "failed")
    if completed is None or failed is None:
        return Missing("completed and failed request counts")
    total = completed + failed
    unbounded = run.get("unbounded")
    if unbounded is None:
        return Missing("the request rate")
    capped = stat(run, "max_concurrency")
    if capped is not None and capped <= rule.t("in_flight"):
        return None  # so few in flight cannot overrun admission: failures here are not load
    if total > 0 and failed >= rule.t("failed") * total and unbounded:
        sent = (
            f" (sent {count(total)} by the command's --num-prompts, {count(completed)} succeeded)"
            if run.get("failed_from_sent")
            else ""
        )
        return Finding(
            f"{count(failed)} of {count(total)} requests failed{sent} ({failed / total:.1%}, >= {rule.t('failed'):.0%}) "
            "with requests sent as fast as possible: the server was driven past what it can admit",
            {"failed": round(failed), "requests": round(total)},
            strength=past(failed / total, rule.t("failed"), 0.5),
            levels=("L2", "L6"),  # a benchmark cannot see a prefill/decode split
        )
    return None
