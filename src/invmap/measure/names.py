"""Which engine metric means which common signal: the one declaration, data/metrics.toml, read into
`Engine`s and `Signal`s (checked as it is read: `load`), and the look-ups a scrape's reader makes.

Each `Signal` (requests waiting, KV usage, TTFT, ...) lists, per engine, the metric names that carry
it: the current name first, then older names (renames) the engine exposed before, each with the
place its name and meaning were read (`doc`) and, for a rename, when it changed (`note`); or, for a
signal declared `sum_names`, different series to add up. Readers of a scrape look names up here
only; nothing else in invmap spells a metric name.

Names are written as the engine exposes them. Counters are matched with or without their `_total`
suffix (prometheus_client's parser adds it to a counter whose TYPE line lacks it, as TGI's do);
`sglang_` (some routers re-export SGLang so) is read as `sglang:`; `trtllm:` (an older Dynamo
re-export) as `trtllm_`; and trtllm-serve's unprefixed names (TensorRT-LLM 1.1, as Dynamo documents
them) as `trtllm_` when the series carries the `engine_type` label trtllm-serve sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import invmap.measure.declaring as declaring
from invmap.measure.bounds import ABSURD, ACTIONS, MOST, Range

SHIPPED = Path(__file__).parent.parent / "data" / "metrics.toml"
KINDS = ("gauge", "counter", "histogram", "info")
PROCESSES = ("engine", "router")  # what a scrape's rules read
# A part beside an engine (a KV-cache layer, a gateway's scheduler, a runtime's workers): its names
# are recognised, so its scrape is never "of no known engine", but no rule reads it.
ENGINE_KINDS = (*PROCESSES, "component")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
Labels = tuple[tuple[str, str], ...]


class Engine(NamedTuple):
    key: str
    title: str
    prefixes: tuple[str, ...]
    rank_label: str | None = None  # the label that tells data-parallel ranks apart (None: it has none)
    model_label: str | None = "model_name"  # the label that names a model (None: one model a process)
    kind: str = "engine"  # engine | router (a frontend routing requests to engines' workers)
    doc: str = ""


class Over(NamedTuple):
    """What a share is divided by: the series of `metric` (the share's own when "") with `labels`."""

    metric: str
    labels: Labels


class Name(NamedTuple):
    """One engine's metric for a signal: `labels` it must carry (`request_type=waiting`), `scale` to
    the signal's unit, `note` for a renamed or retired name, `doc` where it was read; `over`, what a
    share read from two gauges is divided by; `read`, "sum" or "count" for a histogram's sum or count
    read as a counter ("value" otherwise)."""

    engine: str
    metric: str
    doc: str
    labels: Labels = ()
    scale: float = 1.0
    note: str = ""
    over: Over | None = None
    read: str = "value"

    @property
    def base(self) -> str:
        """The sample name the value is read from (a histogram's `_sum` for `read = "sum"`)."""
        return self.metric if self.read == "value" else f"{self.metric}_{self.read}"


class Signal(NamedTuple):
    """A signal common to engines: `kind` gauge | counter | histogram | info; `unit`; how one
    engine's series combine (`sum` across ranks and models, or `max`: the fullest one matters); for a
    histogram, whether its percentiles are read (`quantiles`: else only its sum and count, and its
    bucket lines are skipped unparsed, which is most of a scrape); `sum_names`, whether an engine's
    several names are different series to add up; `range`, the values it can take."""

    key: str
    kind: str
    unit: str
    meaning: str
    names: tuple[Name, ...]
    combine: str = "sum"
    quantiles: bool = False
    sum_names: bool = False
    range: Range = Range(0.0, MOST)

    def range_of(self, part: str) -> Range:
        """The values one sample of this signal can take: its `value` (or a histogram's `le`
        bounds), a histogram's `count`, `bucket` or `sum`, or an `over` share's raw series."""
        if part in ("count", "bucket", "over"):
            return Range(0.0, MOST, "observations" if part != "over" else "", integer=part != "over",
                         invalid=self.range.invalid)  # fmt: skip
        if part == "sum":
            return Range(min(0.0, self.range.low * MOST), ABSURD, self.unit, invalid=self.range.invalid)
        return self.range


class Reading(NamedTuple):
    """A sample name's place in the declaration: the signal, the name, and the part it carries
    (`value`, `over`, or a histogram's `bucket`, `sum`, `count`); the labels a sample must carry to
    be this reading's, and the range its value must be in (a share's two series: raw counts)."""

    signal: Signal
    name: Name
    part: str
    wanted: Labels = ()
    limits: Range = Range(0.0, MOST)


def _reading(signal: Signal, name: Name, part: str) -> Reading:
    wanted = name.over.labels if part == "over" and name.over else name.labels
    limits = signal.range_of("over" if name.over is not None else part)
    return Reading(signal, name, part, wanted, limits)


@dataclass(frozen=True)
class Declared:
    """One metrics declaration: its engines and signals, and how many series a scrape keeps."""

    path: str
    engines: tuple[Engine, ...]
    signals: tuple[Signal, ...]
    series_per_metric: int
    series_in_all: int


SIGNAL_KEYS: declaring.Spec = {
    "key": declaring.text(True),
    "kind": declaring.choice(KINDS, True),
    "unit": declaring.text(True),
    "meaning": declaring.text(True),
    "range": declaring.span(True),
    "integer": declaring.flag(),
    "tolerance": declaring.number(),
    "invalid": declaring.choice(ACTIONS),
    "combine": declaring.choice(("sum", "max")),
    "quantiles": declaring.flag(),
    "sum_names": declaring.flag(),
}
ENGINE_KEYS: declaring.Spec = {
    "key": declaring.text(True),
    "title": declaring.text(True),
    "kind": declaring.choice(ENGINE_KINDS, True),
    "prefixes": declaring.strings(True),
    "rank_label": declaring.text(True),
    "model_label": declaring.text(True),
    "doc": declaring.text(True),
    "names": declaring.table(True),
}
NAME_KEYS: declaring.Spec = {
    "metric": declaring.text(True),
    "labels": declaring.table(),
    "over": declaring.table(),
    "read": declaring.choice(("sum", "count")),
    "scale": declaring.number(),
    "note": declaring.text(),
    "doc": declaring.text(),
}
OVER_KEYS: declaring.Spec = {"metric": declaring.text(), "labels": declaring.table(True)}
TOP_KEYS: declaring.Spec = {
    "series_per_metric": declaring.number(True),
    "series_in_all": declaring.number(True),
    "signal": declaring.tables(True),
    "engine": declaring.tables(True),
}


def load(path: str | Path = SHIPPED) -> Declared:
    """The declaration at `path`, checked whole: an unknown or misshapen key anywhere, a name under a
    signal that is not declared, an engine that leaves out its labels, two names of one signal that
    do not say whether they are one metric renamed or series to add, a histogram's sum or count read
    without saying so... is a DeclarationError naming each file and line (exit 3)."""
    source = declaring.Declaration(path)
    data = source.data
    if not source.check(data, TOP_KEYS, 1, "the declaration"):
        source.done()
    signals = [_signal(source, entry, n) for n, entry in enumerate(data["signal"])]
    _unique(source, "signal", [s.key for s in signals if s])
    by_signal = {s.key: s for s in signals if s}
    broken = {e.get("key") for e, s in zip(data["signal"], signals) if s is None}  # already said
    histograms = _histogram_metrics(data, by_signal)
    engines: list[Engine] = []
    names_of: dict[str, list[Name]] = {key: [] for key in by_signal}
    for n, entry in enumerate(data["engine"]):
        engine = _engine(source, entry, n)
        if engine is not None:
            engines.append(engine)
            _engine_names(source, engine, entry, n, by_signal, histograms, names_of, broken)
    _unique(source, "engine", [e.key for e in engines])
    _caps(source, data)
    source.done()
    ordered = tuple(s._replace(names=tuple(names_of[s.key])) for s in by_signal.values())
    return Declared(source.path, tuple(engines), ordered, int(data["series_per_metric"]), int(data["series_in_all"]))


def _histogram_metrics(data: dict[str, Any], by_signal: dict[str, Signal]) -> set[Any]:
    """Every metric declared for a histogram signal (its `_sum` or `_count` is read only by `read`)."""
    out = set()
    for entry in data["engine"]:
        for key, given in (entry.get("names") or {}).items():
            if key in by_signal and by_signal[key].kind == "histogram":
                out.update(
                    n.get("metric") if isinstance(n, dict) else n
                    for n in (given if isinstance(given, list) else [given])
                )
    return out


def _engine_names(
    source: declaring.Declaration,
    engine: Engine,
    entry: dict[str, Any],
    n: int,
    by_signal: dict[str, Signal],
    histograms: set[Any],
    names_of: dict[str, list[Name]],
    broken: set[Any],
) -> None:
    """An engine's `names`, each key a declared signal, each name checked, into `names_of` (names of a
    signal whose own declaration was refused are passed over: that problem is said once)."""
    start = source.entry_line("engine", n)
    for key, given in (entry.get("names") or {}).items():
        line = source.key_line(start, key)
        if key in broken:
            continue
        if key not in by_signal:
            source.fail(line, f"'{key}' under the names of engine '{engine.key}' is not a declared signal "
                        f"(signals: {', '.join(by_signal)})")  # fmt: skip
            continue
        named = _names(source, engine, by_signal[key], given, line, histograms)
        _one_or_summed(source, engine, by_signal[key], named, line)
        names_of[key] += named


def _unique(source: declaring.Declaration, array: str, keys: list[str]) -> None:
    seen: set[str] = set()
    for n, key in enumerate(keys):
        if key in seen:
            source.fail(source.entry_line(array, n), f"{array} '{key}' is declared twice")
        seen.add(key)


def _caps(source: declaring.Declaration, data: dict[str, Any]) -> None:
    for key in ("series_per_metric", "series_in_all"):
        value = data[key]
        if not (float(value).is_integer() and 1 <= value <= 10**9):
            source.fail(source.key_line(1, key), f"'{key}' must be a whole number from 1 to 1,000,000,000")


def _signal(source: declaring.Declaration, entry: dict[str, Any], n: int) -> Signal | None:
    line = source.entry_line("signal", n)
    what = f"signal '{entry.get('key', n + 1)}'"
    if not source.check(entry, SIGNAL_KEYS, line, what):
        return None
    if entry.get("quantiles") and entry["kind"] != "histogram":
        source.fail(source.key_line(line, "quantiles"), f"{what} is a {entry['kind']}: only a histogram has quantiles")
    low, high = (float(v) for v in entry["range"])
    tolerance = float(entry.get("tolerance", 0.0))
    if tolerance < 0:
        source.fail(source.key_line(line, "tolerance"), f"{what}: 'tolerance' cannot be negative")
    limits = Range(low, high, entry["unit"], bool(entry.get("integer", False)), tolerance,
                   invalid=entry.get("invalid", "omit"))  # fmt: skip
    return Signal(entry["key"], entry["kind"], entry["unit"], entry["meaning"], (), entry.get("combine", "sum"),
                  bool(entry.get("quantiles", False)), bool(entry.get("sum_names", False)), limits)  # fmt: skip


def _engine(source: declaring.Declaration, entry: dict[str, Any], n: int) -> Engine | None:
    line = source.entry_line("engine", n)
    if not source.check(entry, ENGINE_KEYS, line, f"engine '{entry.get('key', n + 1)}'"):
        return None
    if not entry["prefixes"] or not all(entry["prefixes"]):
        source.fail(source.key_line(line, "prefixes"), f"engine '{entry['key']}' needs at least one metric prefix")
    return Engine(entry["key"], entry["title"], tuple(entry["prefixes"]), entry["rank_label"] or None,
                  entry["model_label"] or None, entry["kind"], entry["doc"])  # fmt: skip


def _names(
    source: declaring.Declaration, engine: Engine, signal: Signal, given: Any, line: int, histograms: set[Any]
) -> list[Name]:
    """One engine's names for a signal (a name, a table, or a list of them), each checked."""
    out = []
    for one in given if isinstance(given, list) else [given]:
        name = _name(source, engine, signal, one, line)
        if name is None:
            continue
        _name_fits(source, engine, signal, name, line, histograms)
        out.append(name)
    return out


def _name(source: declaring.Declaration, engine: Engine, signal: Signal, given: Any, line: int) -> Name | None:
    what = f"a name of '{signal.key}' for engine '{engine.key}'"
    if isinstance(given, str):
        return Name(engine.key, given, engine.doc)
    if not isinstance(given, dict):
        source.fail(line, f"{what} must be a metric name or a table with 'metric'")
        return None
    if not source.check(given, NAME_KEYS, line, what):
        return None
    over = None
    if "over" in given:
        if not source.check(given["over"], OVER_KEYS, source.key_line(line, "over"), f"'over' of {what}"):
            return None
        over = Over(given["over"].get("metric", ""), _labels(source, given["over"]["labels"], line, what))
    scale = float(given.get("scale", 1.0))
    if scale <= 0:
        source.fail(source.key_line(line, "scale"), f"'scale' of {what} must be above zero")
    return Name(engine.key, given["metric"], given.get("doc", engine.doc), _labels(source, given.get("labels", {}),
                line, what), scale, given.get("note", ""), over, given.get("read", "value"))  # fmt: skip


def _labels(source: declaring.Declaration, labels: dict[str, Any], line: int, what: str) -> Labels:
    bad = [k for k, v in labels.items() if not isinstance(v, str)]
    if bad:
        source.fail(source.key_line(line, bad[0]), f"label '{bad[0]}' of {what} must be a text")
    return tuple((k, v) for k, v in labels.items() if isinstance(v, str))


def _name_fits(
    source: declaring.Declaration, engine: Engine, signal: Signal, name: Name, line: int, histograms: set[Any]
) -> None:
    """A name's metric carries its engine's prefix; a histogram's sum or count, or a ratio, is read
    only where the declaration says so."""
    what = f"'{name.metric}' ({signal.key}, engine '{engine.key}')"
    for metric in (name.metric, name.over.metric if name.over else ""):
        if metric and not metric.startswith(engine.prefixes):
            source.fail(line, f"{what}: '{metric}' lacks the engine's prefix ({', '.join(engine.prefixes)})")
    stem, _, suffix = name.metric.rpartition("_")
    if name.metric.endswith("_bucket") or (f"_{suffix}" in HISTOGRAM_SUFFIXES and stem in histograms):
        source.fail(line, f'{what} is part of a histogram: name the histogram and say read = "sum" or "count"')
    if name.read != "value" and (signal.kind != "counter" or name.metric not in histograms):
        source.fail(line, f"{what}: 'read' takes a declared histogram's sum or count as a counter signal")
    if name.over is not None and signal.kind != "gauge":
        source.fail(line, f"{what}: 'over' divides gauges; '{signal.key}' is a {signal.kind}")
    if signal.kind == "histogram" and name.read != "value":
        source.fail(line, f"{what}: a histogram signal reads its histogram whole ('read' is for counters)")


def _one_or_summed(source: declaring.Declaration, engine: Engine, signal: Signal, named: list[Name], line: int) -> None:
    """Several names of one signal for one engine are either one metric's names over time (the older
    ones with a `note`) or different series to add (`sum_names`): never left for the reader to guess."""
    if len(named) > 1 and not signal.sum_names and not all(n.note for n in named[1:]):
        shown = ", ".join(n.metric + ("{" + ",".join(f"{k}={v}" for k, v in n.labels) + "}" if n.labels else "")
                          for n in named)  # fmt: skip
        source.fail(line, f"engine '{engine.key}' gives '{signal.key}' {len(named)} names ({shown}): give each older "
                    "one a `note` (one metric, renamed), or declare the signal `sum_names = true` (series to add up)")  # fmt: skip


DECLARED = load()
ENGINES, SIGNALS = DECLARED.engines, DECLARED.signals
BY_KEY = {e.key: e for e in ENGINES}
BY_SIGNAL = {s.key: s for s in SIGNALS}


def use(declared: Declared) -> Declared:
    """Read scrapes by `declared` from now on (a scratch copy's, in a test or a trial change);
    returns the declaration that was in use, to put back the same way."""
    global DECLARED, ENGINES, SIGNALS, BY_KEY, BY_SIGNAL, READINGS, QUANTILED
    before = DECLARED
    DECLARED, ENGINES, SIGNALS = declared, declared.engines, declared.signals
    BY_KEY = {e.key: e for e in ENGINES}
    BY_SIGNAL = {s.key: s for s in SIGNALS}
    READINGS = _readings(SIGNALS)
    QUANTILED = _quantiled(SIGNALS)
    return before


def key(name: str) -> str:
    """The name a metric is matched by: a counter's `_total` dropped, so `tgi_request_count` and
    `vllm:num_preemptions_total` match however the scrape spelt them."""
    return name[:-6] if name.endswith("_total") else name


def _readings(signals: tuple[Signal, ...]) -> dict[str, list[Reading]]:
    """Sample name (as `key` spells it) -> what it carries."""
    out: dict[str, list[Reading]] = {}
    for signal in signals:
        for name in signal.names:
            if signal.kind == "histogram":
                for suffix in HISTOGRAM_SUFFIXES:
                    out.setdefault(key(name.metric) + suffix, []).append(_reading(signal, name, suffix[1:]))
            else:
                out.setdefault(key(name.base), []).append(_reading(signal, name, "value"))
            if name.over is not None:
                out.setdefault(key(name.over.metric or name.metric), []).append(_reading(signal, name, "over"))
    return out


def _quantiled(signals: tuple[Signal, ...]) -> frozenset[str]:
    """The bucket lines parsed: those of histograms whose percentiles a rule reads."""
    return frozenset(key(n.metric) + "_bucket" for s in signals if s.quantiles for n in s.names)


READINGS = _readings(SIGNALS)
QUANTILED = _quantiled(SIGNALS)
# trtllm-serve's names before it prefixed them (TensorRT-LLM 1.1.0rc5, as Dynamo documents them).
TRTLLM_BARE = frozenset(
    (
        "request_success",
        "e2e_request_latency_seconds",
        "time_to_first_token_seconds",
        "time_per_output_token_seconds",
        "request_queue_time_seconds",
    )
)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:")


def readings(name: str) -> list[Reading]:
    """What a (canonical) sample name carries: [] for a metric no signal reads."""
    return READINGS.get(key(name), [])


def canonical(name: str, has_engine_type: bool) -> str:
    """A scraped sample name as the declaration spells it (see the module's docstring)."""
    if name.startswith("sglang_"):
        return "sglang:" + name[len("sglang_") :]
    if name.startswith("trtllm:"):
        return "trtllm_" + name[len("trtllm:") :]
    if has_engine_type and not name.startswith(("sglang", "vllm", "trtllm")):
        base = name
        for suffix in HISTOGRAM_SUFFIXES:
            if name.endswith(suffix) and key(name[: -len(suffix)]) in TRTLLM_BARE:
                base = name[: -len(suffix)]
                break
        if key(base) in TRTLLM_BARE:
            return "trtllm_" + name
    return name


def engine_of(name: str) -> str | None:
    """The engine whose prefix a (canonical) sample name carries."""
    for engine in ENGINES:
        if name.startswith(engine.prefixes):
            return engine.key
    return None


def wanted(name: str) -> bool:
    """Whether invmap reads this (canonical) sample name: a declared metric, or a declared
    histogram's `_bucket`, `_sum` or `_count`."""
    return key(name) in READINGS


def sample_name(line: str) -> str | None:
    """The metric name a sample line starts with, if it is a well-formed one (else None: the line goes
    to the parser, which says what is wrong with it)."""
    end = len(line)
    for stop in ("{", " ", "\t"):
        at = line.find(stop)
        if 0 <= at < end:
            end = at
    name = line[:end]
    if not name or name[0].isdigit() or not _NAME_CHARS.issuperset(name):
        return None
    return name


def needed(name: str) -> bool:
    """Whether a sample of this (scraped) name is parsed at all: what `wanted` keeps, less the bucket
    lines of histograms whose percentiles invmap does not read. trtllm-serve's unprefixed names are
    parsed whatever they carry (the `engine_type` label decides, and only the parser reads labels)."""
    if key(name) in TRTLLM_BARE or any(
        name.endswith(s) and key(name[: -len(s)]) in TRTLLM_BARE for s in HISTOGRAM_SUFFIXES
    ):
        return True
    name = canonical(name, False)
    if name.endswith("_bucket") and key(name) in READINGS and all(r.part == "bucket" for r in readings(name)):
        return name in QUANTILED
    return wanted(name)
