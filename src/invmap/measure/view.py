"""Signals from one scrape or the window between two: counters and histograms as differences, gauges
as read, histogram percentiles the way PromQL's `histogram_quantile` estimates them."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import invmap.measure.names as names
from invmap.errors import UsageError
from invmap.measure.scrape import Labels, Scrape


@dataclass(frozen=True)
class Quantile:
    """A percentile between two bucket bounds; `above` when it lies past the last finite bucket,
    where no number can be given (`value` is then the last finite bound, a floor)."""

    q: float
    value: float
    lower: float
    upper: float | None
    above: bool = False


@dataclass
class Hist:
    buckets: list[tuple[float, float]]  # (upper bound, cumulative count), ascending, +Inf last
    total: float
    count: float

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count > 0 else None

    def quantile(self, q: float) -> Quantile | None:
        """PromQL's estimate: the bucket holding rank q x count, linear within it (the first bucket
        starting at 0); past the last finite bound, `above`."""
        if not self.buckets or not math.isinf(self.buckets[-1][0]):
            return None
        observed = self.buckets[-1][1]
        if observed <= 0:
            return None
        rank = q * observed
        lower, below = 0.0, 0.0
        for upper, cumulative in self.buckets:
            if cumulative >= rank:
                if math.isinf(upper):
                    return Quantile(q, lower, lower, None, above=True)
                inside = cumulative - below
                start = lower if lower > 0 or upper <= 0 else 0.0
                value = upper if inside <= 0 else start + (upper - start) * (rank - below) / inside
                return Quantile(q, value, start, upper)
            lower, below = upper, cumulative
        return None


@dataclass(frozen=True)
class Reading:
    value: float
    metric: str


class View:
    """What the rules read: one engine's (or router's) signals over the window (or since it started).
    `engine` names the process read (by default the one with the most samples); a signal a scrape
    left out (a value outside its range, a metric past the series cap) reads as absent."""

    def __init__(
        self, after: Scrape, before: Scrape | None = None, seconds: float | None = None, engine: str | None = None
    ) -> None:
        self.after = after
        self.engine = engine or _engine(after)
        if engine is None and before is not None and self.engine and before.engines and _engine(before) != self.engine:
            raise UsageError(
                f"the two scrapes come from different engines ({_title(_engine(before))} in {before.source}, "
                f"{_title(self.engine)} in {after.source})"
            )
        self.reset = before is not None and _went_down(before, after)
        self.before = None if self.reset else before
        self.seconds = seconds if self.before is not None else None
        self.others = sorted(e for e in after.engines if e != self.engine)
        self.bound: Any = None
        self.derived: dict[str, str] = {}  # signal -> why a share computed from it cannot be read
        self.flagged: set[str] = set()  # signals left out as inconsistent with the scrape's others

    @property
    def windowed(self) -> bool:
        return self.before is not None

    @property
    def engine_title(self) -> str:
        return _title(self.engine)

    @property
    def kind(self) -> str:
        return names.BY_KEY[self.engine].kind if self.engine else "engine"

    def span(self) -> str:
        if not self.windowed:
            return f"since the {self.kind} started"
        if self.seconds:
            return f"in {_seconds_text(self.seconds)}"
        return "between the two scrapes"

    # --- reading signals

    def left_out(self) -> dict[str, str]:
        """Signals the scrapes left out, and why (the first scrape's reason first)."""
        out = dict(self.after.left_out)
        if self.before is not None:
            out = {**self.before.left_out, **out}
        return {**out, **self.derived}

    def _usable(self, key: str) -> bool:
        return (
            key not in self.after.left_out
            and (self.before is None or key not in self.before.left_out)
            and key not in self.flagged
        )

    def flag(self, key: str, why: str) -> None:
        """Leave a signal out as inconsistent with another (said with the others left out)."""
        self.flagged.add(key)
        self.derived[key] = why

    def _names(self, key: str) -> list[names.Name]:
        if not self._usable(key):
            return []
        return [n for n in names.BY_SIGNAL[key].names if n.engine == self.engine]

    def _found(
        self, scrape: Scrape, name: names.Name, suffix: str = "", part: str = "value"
    ) -> dict[Labels, float] | None:
        """The series of `name` in `scrape` that carry its labels (`part`: its value, or what an
        `over` share divides by), or None when the scrape has none of the metric."""
        if part == "over" and name.over is not None:
            metric, wanted = name.over.metric or name.metric, name.over.labels
        else:
            metric, wanted = (name.metric if suffix else name.base), name.labels
        for candidate in (metric + suffix, names.key(metric) + suffix, names.key(metric) + "_total" + suffix):
            held = scrape.series.get(candidate)
            if held is not None:
                return {labels: v for labels, v in held.items() if _has(labels, wanted)}
        return None

    def present(self, key: str) -> bool:
        signal = names.BY_SIGNAL[key]
        suffix = "_count" if signal.kind == "histogram" else ""
        return any(self._found(self.after, n, suffix) for n in self._names(key))

    def exposes(self, key: str, name: names.Name | None = None) -> bool:
        """Whether the scrape holds any series of the signal (of one of its names; a histogram's sum,
        count or buckets alike): that the engine runs the mechanism, whatever the numbers say."""
        signal = names.BY_SIGNAL[key]
        parts = ("_count", "_sum", "_bucket") if signal.kind == "histogram" else ("",)
        held = [n for n in self._names(key) if name is None or n == name]
        return any(self._found(self.after, n, suffix) for n in held for suffix in parts)

    def gauge(self, key: str, both: bool = False, least: bool = False) -> Reading | None:
        """The gauge's value (series summed, or the largest for a `max` signal; over every name the
        engine gives a `sum_names` signal); with two scrapes, `both` takes the higher of their values,
        `least` the lower."""
        signal = names.BY_SIGNAL[key]
        found: list[tuple[float, str]] = []
        for name in self._names(key):
            series = self._found(self.after, name)
            if not series:
                continue
            value = self._share(self.after, name, series, signal)
            if value is None:
                continue
            if (both or least) and self.before is not None:
                earlier = self._found(self.before, name)
                then = self._share(self.before, name, earlier, signal) if earlier else None
                if then is not None:
                    value = max(value, then) if both else min(value, then)
            found.append((value, name.metric))
            if not signal.sum_names:
                break  # an old and a new name of one gauge: the first found is the one
        if not found:
            return None
        return Reading(_combine((v for v, _ in found), signal.combine), found[0][1])

    def _share(self, scrape: Scrape, name: names.Name, series: dict[Labels, float], signal: Any) -> float | None:
        value = _combine(series.values(), signal.combine) * name.scale
        if name.over is None:
            return value
        whole = self._found(scrape, name, part="over") or {}
        total = _combine(whole.values(), signal.combine) if whole else 0.0
        if total <= 0:
            return None  # no pool size: no share
        share, problem = signal.range.read(value / total)
        if problem:
            over = name.over.metric or name.metric
            self.derived[signal.key] = f"{scrape.source}: {name.metric} / {over} {problem}"
            return None
        return share

    def gauge_by(self, key: str, label: str) -> dict[str, float]:
        for name in self._names(key):
            series = self._found(self.after, name)
            if series:
                out: dict[str, float] = {}
                for labels, v in series.items():
                    group = dict(labels).get(label)
                    if group is not None:
                        out[group] = out.get(group, 0.0) + v * name.scale
                return out
        return {}

    def counter(self, key: str) -> Reading | None:
        """The counter's increase over the window (summed over series and over every name the
        engine gives the signal), or its total since start."""
        total, used = 0.0, []
        for name in self._names(key):
            series = self._found(self.after, name)
            if not series:
                continue
            total += sum(self._deltas(name, series).values()) * name.scale
            used.append(name.metric)
            if not names.BY_SIGNAL[key].sum_names:
                break  # an old and a new name of one counter: the first found is the one
        return Reading(total, used[0]) if used else None

    def counter_by(self, key: str, label: str) -> dict[str, float]:
        for name in self._names(key):
            series = self._found(self.after, name)
            if series:
                out: dict[str, float] = {}
                for labels, v in self._deltas(name, series).items():
                    group = dict(labels).get(label)
                    if group is not None:
                        out[group] = out.get(group, 0.0) + v * name.scale
                return out
        return {}

    def _deltas(self, name: names.Name, series: dict[Labels, float]) -> dict[Labels, float]:
        if self.before is None:
            return dict(series)
        earlier = self._found(self.before, name) or {}
        return {labels: v - earlier.get(labels, 0.0) for labels, v in series.items()}

    def hist(self, key: str) -> tuple[Hist, str] | None:
        """The histogram over the window, its series merged (buckets summed at the bounds they share)."""
        for name in self._names(key):
            counts = self._found(self.after, name, "_count")
            if not counts:
                continue
            buckets = self._found(self.after, name, "_bucket") or {}  # unread for sum-and-count histograms
            sums = self._found(self.after, name, "_sum") or {}
            if self.before is not None:
                counts = _minus(counts, self._found(self.before, name, "_count"))
                sums = _minus(sums, self._found(self.before, name, "_sum"))
                buckets = _minus(buckets, self._found(self.before, name, "_bucket"))
            return _merge(buckets, sum(sums.values()), sum(counts.values()), name.scale), name.metric
        return None

    def count_by(self, key: str, label: str) -> dict[str, float]:
        """A histogram's observations over the window by a label's value (requests per model)."""
        for name in self._names(key):
            counts = _with_last_buckets(
                self._found(self.after, name, "_count"), self._found(self.after, name, "_bucket")
            )
            if counts:
                if self.before is not None:
                    earlier = self._found(self.before, name, "_bucket")
                    counts = _minus(counts, _with_last_buckets(self._found(self.before, name, "_count"), earlier))
                out: dict[str, float] = {}
                for labels, v in counts.items():
                    group = dict(labels).get(label)
                    if group is not None:
                        out[group] = out.get(group, 0.0) + v
                return out
        return {}

    def info(self, key: str) -> dict[str, str] | None:
        """The labels of an info-style gauge's latest series (its value a timestamp)."""
        for name in self._names(key):
            series = self._found(self.after, name)
            if series:
                labels, _ = max(series.items(), key=lambda item: item[1])
                return dict(labels)
        return None


def _with_last_buckets(counts: dict[Labels, float] | None, buckets: dict[Labels, float] | None) -> dict[Labels, float]:
    """A histogram's counts by series, each series without a `_count` line counted by its fullest
    bucket (the `+Inf` one, or at least as many as the largest bucket an excerpt kept)."""
    out = dict(counts or {})
    fullest: dict[Labels, float] = {}
    for labels, value in (buckets or {}).items():
        held = dict(labels)
        held.pop("le", None)
        series = tuple(sorted(held.items()))
        fullest[series] = max(value, fullest.get(series, 0.0))
    for series, value in fullest.items():
        out.setdefault(series, value)
    return out


def _title(engine: str | None) -> str:
    return names.BY_KEY[engine].title if engine else "no known engine"


def _engine(scrape: Scrape) -> str | None:
    """The engine or router with the most samples (a component's are recognised, never read)."""
    held = [e for e in scrape.engines if names.BY_KEY[e].kind in names.PROCESSES]
    if not held:
        return None
    order = [e.key for e in names.ENGINES]
    return max(held, key=lambda e: (scrape.engines[e], -order.index(e)))


def dominant(scrape: Scrape | None, kind: str) -> str | None:
    """The engine (or router: `kind`) with the most samples in `scrape`, the first declared on a tie."""
    if scrape is None:
        return None
    order = [e.key for e in names.ENGINES]
    held = [e for e in scrape.engines if names.BY_KEY[e].kind == kind]
    return max(held, key=lambda e: (scrape.engines[e], -order.index(e))) if held else None


def _has(labels: Labels, wanted: tuple[tuple[str, str], ...]) -> bool:
    if not wanted:
        return True
    held = dict(labels)
    return all(held.get(k) == v for k, v in wanted)


def _combine(values: Iterable[float], how: str) -> float:
    values = list(values)
    return max(values) if how == "max" else sum(values)


def _minus(now: dict[Labels, float], then: dict[Labels, float] | None) -> dict[Labels, float]:
    then = then or {}
    return {labels: v - then.get(labels, 0.0) for labels, v in now.items()}


def _merge(buckets: dict[Labels, float], total: float, count: float, scale: float) -> Hist:
    by_series: dict[Labels, dict[float, float]] = {}
    for labels, cumulative in buckets.items():
        held = dict(labels)
        try:
            bound = float(held.pop("le"))
        except (KeyError, ValueError):
            continue
        by_series.setdefault(tuple(sorted(held.items())), {})[bound] = cumulative
    if not by_series:
        return Hist([], total * scale, count)
    shared = set.intersection(*(set(b) for b in by_series.values()))  # bounds every series has
    merged = sorted((bound * scale, sum(b[bound] for b in by_series.values())) for bound in shared)
    return Hist(merged, total * scale, count)


def _went_down(before: Scrape, after: Scrape) -> bool:
    """Whether a counter (or a histogram's count) is lower in the second scrape: the engine restarted."""
    watched = [n.metric + "_count" if s.kind == "histogram" else n.base
               for s in names.SIGNALS if s.kind in ("counter", "histogram") for n in s.names]  # fmt: skip
    for metric in watched:
        for candidate in (metric, names.key(metric)):
            now, then = after.series.get(candidate), before.series.get(candidate)
            if now and then and any(now.get(labels, value) < value for labels, value in then.items()):
                return True
    return False


def _seconds_text(seconds: float) -> str:
    if seconds >= 120 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def duration(text: str) -> float:
    """`30s`, `2m`, `1h`, `500ms` or a number of seconds -> seconds; ValueError otherwise."""
    raw = text.strip().lower()
    for suffix, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if raw.endswith(suffix) and raw[: -len(suffix)].strip():
            raw, factor = raw[: -len(suffix)].strip(), scale
            break
    else:
        factor = 1.0
    try:
        value = float(raw) * factor
    except ValueError:
        raise ValueError(f"takes a duration such as 30s, 2m or 500ms, not '{text}'") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"takes a duration above zero such as 30s, not '{text}'")
    return value


def summary(view: View) -> dict[str, Any]:
    """The key numbers of a scrape, for the healthy and not-enough-signal notes."""
    out: dict[str, Any] = {}
    for key in ("running", "waiting", "kv_usage"):
        reading = view.gauge(key)
        if reading:
            out[key] = reading.value
    for key in ("preemptions", "finished"):
        reading = view.counter(key)
        if reading:
            out[key] = reading.value
    for key in ("ttft", "itl", "tpot"):
        found = view.hist(key)
        if found and found[0].count > 0:
            for q in (0.5, 0.99):
                quantile = found[0].quantile(q)
                if quantile:
                    out[f"{key}_p{round(q * 100)}"] = quantile
    return out
