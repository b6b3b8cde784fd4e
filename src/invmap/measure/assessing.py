"""Assessing measurements: each rule run on what it reads (a scrape's `View`, one a process, or a
benchmark's runs), its findings gathered into level assessments `[{code, score, confidence,
evidence}]`, and the notes said around them (the window or the totals each process's numbers cover,
what was left out and why, what could not be checked, the key numbers when all is well)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import invmap.measure.rules as declared
from invmap.errors import UsageError
from invmap.text import plural

STEPS = ("low", "medium", "high")


@dataclass
class Assessment:
    levels: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    windowed: bool = False
    unchecked: list[tuple[str, str]] = field(default_factory=list)  # (rule id, what it lacks): said last

    def not_checked(self, verbose: bool = False) -> list[str]:
        """The rules that could not run, one line per missing family (what they lack, and which rules):
        the first few, or with `verbose` every one."""
        families: dict[str, list[str]] = {}
        for rule, needs in self.unchecked:
            families.setdefault(needs, []).append(rule)
        lines = [f"not checked: {needs} ({', '.join(ids)})" for needs, ids in families.items()]
        if verbose or len(lines) <= SHOWN_UNCHECKED:
            return lines
        more = len(lines) - SHOWN_UNCHECKED
        return [
            *lines[:SHOWN_UNCHECKED],
            f"not checked: {more} more ({'one family' if more == 1 else 'families'} of signals; --verbose lists them)",
        ]


LEAD = 0.25  # a finding weaker than this is a lead: it points, it does not corroborate
SHOWN_UNCHECKED = 3  # lines of "not checked" without --verbose


Found = tuple[declared.Rule, declared.Finding, bool]  # a rule, what it found, whether over a window


def _confidence(findings: list[Found]) -> str:
    step = 2 if any(windowed for _, _, windowed in findings) else 1  # totals since start blur what is happening now
    if all(f.momentary for _, f, _ in findings):
        step = min(step, 1)  # gauges say what held at the moment of the scrape
    strong = [f for _, f, _ in findings if f.strength >= LEAD]
    if not strong:
        step -= 1  # leads only (one, or several): each says "look here", none says "this is it"
    if len(strong) >= 2:
        step += 1  # two findings agree only when each is more than a lead
    return STEPS[max(0, min(step, 2))]


def _levels(found: list[Found]) -> list[dict[str, Any]]:
    by_level: dict[str, list[Found]] = {}
    for rule, finding, windowed in found:
        for code in finding.levels or rule.levels:
            by_level.setdefault(code, []).append((rule, finding, windowed))
    out = []
    for code, findings in by_level.items():
        best = max(r.weight * (60 + 40 * f.strength) for r, f, _ in findings)
        score = round(min(100.0, best + 5 * (len(findings) - 1)), 1)
        out.append(
            {
                "code": code,
                "score": score,
                "confidence": _confidence(findings),
                "evidence": [{"rule": r.id, "text": f.text, "signals": f.signals} for r, f, _ in findings],
            }
        )
    out.sort(key=lambda lv: (-lv["score"], lv["code"]))
    return out


def _parts(scrapes: Sequence[Any], seconds: float | None) -> list[Any]:
    """The processes the scrapes come from, each a `View`: one engine and one router at most (a
    frontend and its workers), each over the window where both scrapes hold it, else one scrape's
    totals. Two scrapes of different engines (or routers) are a usage error."""
    from invmap.measure.names import BY_KEY, PROCESSES
    from invmap.measure.view import View, dominant

    after = scrapes[-1]
    before = scrapes[0] if len(scrapes) > 1 else None
    parts = []
    for kind in PROCESSES:
        now = dominant(after, kind)
        then = dominant(before, kind) if before is not None else None
        if now and then and now != then:
            raise UsageError(
                f"the two scrapes come from different {kind}s ({BY_KEY[then].title} in {before.source}, "  # type: ignore[union-attr]
                f"{BY_KEY[now].title} in {after.source})"
            )
        if now:
            window = before if before is not None and (then or not before.engines) else None
            parts.append(View(after, window, seconds if window is not None else None, now))
        elif then:
            parts.append(View(before, None, None, then))
    return parts or [View(after, before, seconds)]


def assess_scrapes(scrapes: Sequence[Any], seconds: float | None = None, bound: Any = None) -> Assessment:
    """Assess one scrape (totals since the engine started) or two (the window between them, or an
    engine's and a router's, read side by side); with `bound`, per-token decode time is compared with
    the bandwidth bound of that model on that GPU."""

    parts = _parts(scrapes, seconds)
    result = Assessment(warnings=[w for s in scrapes for w in s.warnings], windowed=any(p.windowed for p in parts))
    if parts[0].engine is None:
        result.notes.append(_no_engine(scrapes[-1]))
        return result
    _part_notes(result, parts, scrapes, seconds)
    for view in parts:
        view.bound = bound
        _inconsistent(view)
    label = len(parts) > 1
    subjects = [(view, view.engine_title if label else "", view.windowed) for view in parts]
    found, missing, checked = _apply(subjects, lambda rule, view: rule.reads(view.kind))
    for view in parts:
        _left_out(result, view)
        _nothing_finished(result, view)
    _router_alone(result, parts)
    result.levels = _levels(found)
    _verdict(result, found, missing, checked, _scrape_numbers(parts))
    return result


# Histograms whose counts contradict the scrape's other numbers are left out, not diagnosed.
FASTEST_TTFT_S = 1e-5  # a mean first token under 10 us is no engine's: a sum in the wrong unit
MORE_FIRST_TOKENS = 2.0  # TTFT observations past twice the prompts observed (and 10 more) cannot be


def _inconsistent(view: Any) -> None:
    ttft = view.hist("ttft")
    if ttft is None or ttft[0].count <= 0:
        return
    hist, metric = ttft
    where = f"{view.after.source}: {metric}"
    if hist.mean is not None and 0 <= hist.mean < FASTEST_TTFT_S:
        view.flag("ttft", f"{where}: inconsistent: its sum implies a mean TTFT of {hist.mean * 1e6:.3g} us over "
                          f"{hist.count:,.0f} requests, which no engine gives")  # fmt: skip
        return
    prompts = view.hist("prompt_len")
    if prompts is not None and prompts[0].count > 0 and hist.count > MORE_FIRST_TOKENS * prompts[0].count + 10:
        view.flag("ttft", f"{where}: inconsistent: {hist.count:,.0f} first tokens observed but "
                          f"{prompts[0].count:,.0f} prompts ({prompts[1]})")  # fmt: skip


def _no_engine(after: Any) -> str:
    import invmap.measure.names as names

    parts = [names.BY_KEY[e] for e in after.engines if names.BY_KEY[e].kind == "component"]
    if parts:
        shown = ", ".join(f"{after.engines[p.key]:,} of {p.title}" for p in parts)
        return (f"not enough signal: {after.source} holds samples of a component beside an engine ({shown}): "
                "recognised, but no rule reads it; give the engine's own scrape")  # fmt: skip
    engines = ", ".join(e.title for e in names.ENGINES if e.kind in names.PROCESSES)
    what = "holds no samples" if after.samples == 0 else f"holds {after.samples:,} samples but none of a known engine"
    return f"not enough signal: {after.source} {what} ({engines})"


def _router_alone(result: Assessment, parts: list[Any]) -> None:
    """A router's scrape without an engine's: which rules were not run, and why."""
    if all(view.kind == "router" for view in parts):
        skipped = [r.id for r in declared.RULES if r.kind == "metrics" and not r.reads("router")]
        result.notes.append(
            f"a router's scrape: {', '.join(skipped)} read an engine's own state and were not run "
            "(give a worker's scrape as a second --metrics to read both)"
        )


def _scrape_numbers(parts: list[Any]) -> str:
    """The key numbers of each process (a healthy verdict says them), and what was left out."""
    numbers = [(view.engine_title, _numbers(summary_of(view))) for view in parts]
    said = numbers[0][1] if len(parts) == 1 else "; ".join(f"{t}: {n}" for t, n in numbers if n)
    left = sorted({key for view in parts for key in view.left_out()})
    if left and said:
        said += f"; left out (see above): {', '.join(left)}"
    return said


def _apply(subjects: list[tuple[Any, str, bool]], reads: Any) -> tuple[list[Found], list[Any], int]:
    """Each rule on each subject it `reads` (a view or a benchmark run, with the label its findings
    carry and whether it is a window): what fired, what could not be checked (each rule once, and
    not a rule that fired elsewhere) and how many looked and found nothing."""
    found: list[Found] = []
    missing: dict[str, tuple[declared.Rule, str]] = {}
    checked = 0
    for subject, label, windowed in subjects:
        for rule in declared.RULES:
            if not reads(rule, subject):
                continue
            outcome = rule.test(subject, rule)
            if isinstance(outcome, declared.Finding):
                found.append((rule, _labelled(outcome, label), windowed))
            elif isinstance(outcome, declared.Missing):
                missing.setdefault(rule.id, (rule, outcome.needs))
            else:
                checked += 1
    fired = {r.id for r, _, _ in found}
    return found, [m for k, m in missing.items() if k not in fired], checked


def summary_of(view: Any) -> dict[str, Any]:
    from invmap.measure.view import summary

    return summary(view)


def _part_notes(result: Assessment, parts: list[Any], scrapes: Sequence[Any], seconds: float | None) -> None:
    """What each process's numbers cover (a window, or totals since it started), and what else the
    scrapes hold that is not read."""
    import invmap.measure.names as names

    read = {view.engine for view in parts}
    for view in parts:
        if view.reset:
            result.notes.append(
                f"a counter went down between the two scrapes (the {view.kind} restarted): the second scrape is read "
                "alone, as totals since the restart"
            )
        if view.windowed:
            result.notes.append(f"window: {view.span().removeprefix('in ')} ({view.engine_title})")
        elif len(scrapes) == 1:
            result.notes.append(
                f"totals since the {view.kind} started ({view.engine_title}, one scrape); give --metrics twice (or a "
                "URL with --interval) for a window"
            )
        else:
            of = f": {view.after.source}" if len(parts) > 1 else ""
            result.notes.append(f"totals since the {view.kind} started ({view.engine_title}, one scrape{of})")
    if len(scrapes) == 2 and len(parts) == 2 and not any(v.windowed for v in parts):
        said = " (--interval is not used: there is no window)" if seconds else ""
        first, second = sorted(parts, key=lambda v: v.after is not scrapes[0])  # in the order given
        result.notes.append(
            f"{scrapes[0].source} and {scrapes[1].source} are two processes ({first.engine_title} and "
            f"{second.engine_title}), read side by side, not as a window{said}"
        )
    seen: dict[str, int] = {}
    for scrape in scrapes:
        for engine, count in scrape.engines.items():
            seen[engine] = count  # the later scrape's count, as before
    for other in sorted(e for e in seen if e not in read):
        result.notes.append(f"also {seen[other]:,} samples of {names.BY_KEY[other].title}, not read")


def _labelled(finding: declared.Finding, label: str) -> declared.Finding:
    if not label:
        return finding
    return declared.Finding(f"{label}: {finding.text}", finding.signals, finding.strength, finding.momentary,
                            finding.levels)  # fmt: skip


def _left_out(result: Assessment, view: Any) -> None:
    import invmap.measure.names as names

    for key, why in view.left_out().items():
        line = f"left out: {key} ({names.BY_SIGNAL[key].meaning}): {why}"
        if line not in result.notes:
            result.notes.append(line)


def _nothing_finished(result: Assessment, view: Any) -> None:
    finished = view.counter("finished")
    ttft = view.hist("ttft") or view.hist("e2e")
    if (finished is not None and finished.value <= 0) or (ttft is not None and ttft[0].count <= 0):
        result.notes.append(f"no request has finished {view.span()}")


def assess_bench(bench: Any, bound: Any = None) -> Assessment:
    """Assess each run of a benchmark result (with `bound`, against the decode bandwidth bound)."""
    result = Assessment(windowed=True)
    runs = bench.runs
    for run in runs:
        run["_bound"] = bound
    result.notes.append(f"benchmark: {bench.tool}, {plural(len(runs), 'run')} ({bench.source})")
    result.notes.extend(getattr(bench, "notes", []))
    result.notes.extend(getattr(bench, "cut", []))
    labelled = len(runs) > 1
    subjects = [(run, run.get("label", "") if labelled else "", True) for run in runs]
    found, left, checked = _apply(subjects, lambda rule, run: rule.kind == "bench")
    empty = [run for run in runs if run.get("completed") == 0]
    for run in empty:
        result.notes.append(f"no request completed{' in ' + run['label'] if run.get('label') else ''}")
    result.levels = _levels(found)
    numbers = {}
    if runs:
        last = runs[-1]
        for key in ("completed", "failed", "ttft_median", "ttft_p99", "tpot_median", "tpot_p99", "itl_p99"):
            if key in last:
                numbers[key] = last[key]
    if runs and len(empty) == len(runs) and not found:
        result.notes.append("not enough signal: no request completed, so no latency was measured")
        if left:
            result.unchecked.extend((r.id, needs) for r, needs in left)
        return result
    said = _bench_numbers(numbers)
    if bench.notes and said:
        said += "; some numbers left out (see above)"
    _verdict(result, found, left, checked, said)
    return result


def _verdict(
    result: Assessment,
    found: list[Any],
    missing: list[tuple[declared.Rule, str]],
    checked: int,
    numbers: str,
) -> None:
    if found:
        pass
    elif checked:
        result.notes.append(f"healthy by these signals: {numbers}" if numbers else "healthy by these signals")
    else:
        result.notes.append("not enough signal: " + "; ".join(sorted({needs for _, needs in missing})))
        return
    if missing:
        result.unchecked.extend((r.id, needs) for r, needs in missing)


def _numbers(summary: dict[str, Any]) -> str:
    from invmap.measure.wording import count, quantile_text

    parts = []
    for key, label in (("running", "running"), ("waiting", "waiting")):
        if key in summary:
            parts.append(f"{count(summary[key])} {label}")
    if "kv_usage" in summary:
        parts.append(f"kv usage {summary['kv_usage']:.2f}")
    for key, label in (("preemptions", "preemptions"), ("finished", "requests finished")):
        if key in summary:
            parts.append(f"{count(summary[key])} {label}")
    for key, label in (("ttft", "TTFT"), ("itl", "ITL"), ("tpot", "TPOT")):
        for q in (50, 99):
            found = summary.get(f"{key}_p{q}")
            if found:
                parts.append(quantile_text(f"{label} p{q}", found))
    return ", ".join(parts)


def _bench_numbers(numbers: dict[str, Any]) -> str:
    from invmap.measure.wording import count, ms

    labels = {
        "completed": ("completed", count),
        "failed": ("failed", count),
        "ttft_median": ("TTFT median", ms),
        "ttft_p99": ("TTFT p99", ms),
        "tpot_median": ("TPOT median", ms),
        "tpot_p99": ("TPOT p99", ms),
        "itl_p99": ("ITL p99", ms),
    }
    return ", ".join(f"{labels[k][0]} {labels[k][1](v)}" for k, v in numbers.items())


# What the two runs must share for their latencies to be compared as like for like.
LOAD = (("max_concurrency", "max concurrency"), ("request_rate", "request rate"), ("num_prompts", "prompts"),
        ("random_input_len", "input length"), ("random_output_len", "output length"))  # fmt: skip
SAME_WORK = 0.02  # tokens a request, from an offline run's two throughputs: more apart than this, other work
IMPROVED = (("ttft_median", "TTFT median"), ("ttft_p99", "TTFT p99"), ("tpot_median", "TPOT median"),
            ("tpot_p99", "TPOT p99"), ("itl_p99", "ITL p99"))  # fmt: skip


def assess_compare(before: Any, after: Any, bound: Any = None) -> Assessment:
    """Two benchmark results compared, run for run (the same number of runs), else the last run of
    each: what got worse beyond the thresholds (`[rule.compare]`), each change an evidence item
    with `{before, after, change}`; whether the runs were driven alike; what improved."""
    from invmap.measure.levels.comparing import change

    result = Assessment(windowed=True)
    result.notes.append(f"compared: {before.source} ({before.tool}) -> {after.source} ({after.tool})")
    result.notes.extend([*before.notes, *before.cut, *after.notes, *after.cut])
    if len(before.runs) == len(after.runs):
        pairs = list(zip(before.runs, after.runs))
    else:
        pairs = [(before.runs[-1], after.runs[-1])]
        result.notes.append(
            f"{before.source} holds {plural(len(before.runs), 'run')} and {after.source} "
            f"{plural(len(after.runs), 'run')}: the last run of each is compared"
        )
    labelled = len(pairs) > 1
    subjects = []
    for n, (a, b) in enumerate(pairs, 1):
        subjects.append(({"before": a, "after": b}, f"run {n}" if labelled else "", True))
        differs = [f"{name} {a[k]:g} vs {b[k]:g}" for k, name in LOAD
                   if isinstance(a.get(k), float) and isinstance(b.get(k), float) and a[k] != b[k]]  # fmt: skip
        differs += _other_work(a, b)
        if differs:
            of = f"run {n}: " if labelled else ""
            result.notes.append(
                f"{of}the runs were not driven alike ({'; '.join(differs)}): a change may be the load's"
            )
        better = [
            f"{name} {c[2]:+.0%}"
            for k, name in IMPROVED
            if (c := change({"before": a, "after": b}, k)) and c[2] <= -0.2
        ]
        if better:
            result.notes.append(f"{'run %d: ' % n if labelled else ''}improved: {', '.join(better)}")
    found, left, checked = _apply(subjects, lambda rule, pair: rule.kind == "compare")
    result.levels = _levels(found)
    if found:
        if left:
            result.unchecked.extend((r.id, needs) for r, needs in left)
    elif checked:
        result.notes.append("no change beyond the declared thresholds (compare-* rules in data/rules.toml)")
        result.notes.extend(_nearest(subjects))
    else:
        result.notes.append("not enough signal: " + "; ".join(sorted({needs for _, needs in left})))
    return result


def _other_work(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """`tokens a request 512 vs 640` where two runs that print only their throughputs (an offline run:
    requests and tokens a second) did unlike work, each request carrying more or fewer tokens."""
    per = []
    for run in (a, b):
        requests, tokens = run.get("request_throughput"), run.get("total_throughput")
        if not (isinstance(requests, float) and isinstance(tokens, float) and requests > 0):
            return []
        per.append(tokens / requests)
    if abs(per[1] - per[0]) <= SAME_WORK * per[0]:
        return []
    return [f"tokens a request {per[0]:,.0f} vs {per[1]:,.0f}"]


def _nearest(subjects: list[tuple[Any, str, bool]]) -> list[str]:
    """Where nothing passed a threshold: each pair's largest latency rise and its throughput's fall, each
    said against its rule's threshold."""
    from invmap.measure.levels.comparing import largest_fall, largest_rise

    rules = {r.id: r for r in declared.RULES if r.kind == "compare"}
    near = [(label, what, said(pair, rules)) for pair, label, _ in subjects
            for what, said in (("largest rise", largest_rise), ("throughput fell", largest_fall))]  # fmt: skip
    return [f"{label + ': ' if label else ''}{what}: {text}" for label, what, text in near if text]
