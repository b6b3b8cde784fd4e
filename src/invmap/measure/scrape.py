"""Reading one Prometheus scrape (text exposition 0.0.4): a file, stdin or the body of a URL.

The text is parsed by prometheus_client's own parser, fed a line at a time through a counter, so a
line it rejects is named by number. The input is streamed: it is cut into runs of at most `CHUNK`
lines (a run that ends inside a family starts the next with that family's TYPE line again), so the
parser never holds more than one run's samples, and only the samples of the metrics invmap reads
(`names.wanted`) are parsed and kept: a sample of any other metric is counted by its name and given a
cheap syntax check (`syntax`: a metric name, labels, a value, an optional timestamp), not parsed. A
line that is neither a comment, a sample nor blank refuses the scrape (exit 3) as `FILE:LINE:COL:
message`, as does a text with lines but not one sample. Peak memory is the run plus those series, and the series are capped
(`series_per_metric`, `series_in_all` in data/metrics.toml): past a cap they are counted, not kept,
and the signals that read the metric are left out. A scrape is at most `CAP` bytes, from a file,
stdin or a URL alike.

Every kept value passes its signal's declared range (`Signal.range_of`): a value outside it leaves
the signal out, with the file, line, series and value said (`Scrape.left_out`), or refuses the scrape
(exit 3) where the signal's declaration says `invalid = "refuse"`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import invmap.measure.names as names
from invmap.errors import CatalogError
from invmap.inputfile import named_failures, open_regular
from invmap.measure.bounds import labelled
from invmap.text import plural

CHUNK = 20_000  # lines handed to the parser at once
MAX_LINE = 1 << 20  # a longer line is not a scrape's (and would be held whole)
CAP = 256 * 2**20  # bytes: the most of one scrape, from a file, stdin or a URL
TOO_LARGE = "is larger than 256 MiB, the most invmap reads of one scrape"
Labels = tuple[tuple[str, str], ...]
NOT_SCRAPE = "not Prometheus text exposition"
_VALUE = r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[Ii]nf(?:inity)?|NaN|nan)"
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"(?:[^"\\\n]|\\.)*"'
SAMPLE = re.compile(
    rf"[ \t]*[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{{[ \t]*(?:{_LABEL}[ \t]*(?:,[ \t]*{_LABEL}[ \t]*)*,?[ \t]*)?\}})?"
    rf"[ \t]+{_VALUE}(?:[ \t]+-?\d+)?[ \t]*\r?\n?"
)
# The usual line, tried first: no spaces inside, no escapes, a plain number, no timestamp.
_PLAIN = re.compile(
    r'[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{(?:[a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*",?)*\})? -?\d+(?:\.\d+)?(?:e[+-]?\d+)?\n'
)
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_AT = re.compile(rf"[ \t]*{_LABEL}[ \t]*")


def syntax(line: str) -> tuple[int, str] | None:
    """What is wrong with a sample line, as (column, message), or None: a metric name, optional
    `{label="value",...}`, a value (a float, `+Inf`, `NaN`) and an optional integer timestamp. The
    usual line is one regular-expression match; only a bad one is walked to find its column."""
    if _PLAIN.fullmatch(line) or SAMPLE.fullmatch(line):
        return None
    text = line.rstrip("\r\n")
    at = len(text) - len(text.lstrip(" \t"))
    name = _NAME.match(text, at)
    if name is None:
        return at + 1, f"{NOT_SCRAPE}: a line is a comment (#), a sample (a metric name first) or blank"
    at = name.end()
    if text[at : at + 1] == "{":
        at, problem = _labels_end(text, at + 1)
        if problem:
            return at + 1, problem
    rest = text[at:]
    parts = rest.split()
    if not rest[:1].isspace() or not parts:
        return at + 1, f"{NOT_SCRAPE}: a sample's name (and labels) must be followed by a space and a value"
    column = at + len(rest) - len(rest.lstrip()) + 1
    try:
        float(parts[0])
    except ValueError:
        return column, f"{NOT_SCRAPE}: {parts[0][:40]!r} is not a sample value (a number, +Inf, -Inf or NaN)"
    bad = next((k for k, part in enumerate(parts[1:], 1) if k > 1 or not re.fullmatch(r"-?\d+", part)), None)
    if bad is not None:
        for part in parts[1 : bad + 1]:
            column = text.index(part, column - 1 + len(parts[0])) + 1
        return column, f"{NOT_SCRAPE}: after the value only a timestamp (whole milliseconds) may follow"
    return None  # a number Python reads that the pattern does not spell (1_000): the parser decides


def _labels_end(text: str, at: int) -> tuple[int, str]:
    """Where a label set that opens before `at` ends (just past its `}`), or where it goes wrong."""
    while True:
        while text[at : at + 1] in (" ", "\t"):
            at += 1
        if text[at : at + 1] == "}":
            return at + 1, ""
        label = _LABEL_AT.match(text, at)
        if label is None:
            return at, f'{NOT_SCRAPE}: expected a label (name="value") or a closing brace'
        at = label.end()
        if text[at : at + 1] == ",":
            at += 1
        elif text[at : at + 1] != "}":
            return at, f"{NOT_SCRAPE}: expected a comma or a closing brace after a label"


@dataclass
class Scrape:
    """The series invmap reads, by canonical sample name, then by their sorted labels; the signals
    left out (signal key -> why: a value outside its range, a metric past the series cap)."""

    source: str
    series: dict[str, dict[Labels, float]] = field(default_factory=dict)
    engines: dict[str, int] = field(default_factory=dict)  # engine -> samples seen with its prefix
    samples: int = 0
    comments: int = 0
    warnings: list[str] = field(default_factory=list)
    non_finite: int = 0
    lines: int = 0
    left_out: dict[str, str] = field(default_factory=dict)
    _repeats: int = 0
    _kept: int = 0
    _outside: dict[str, int] = field(default_factory=dict)  # signal -> values outside its range
    _dropped: dict[str, int] = field(default_factory=dict)  # sample name -> series not kept (past a cap)
    full: set[str] = field(default_factory=set)  # scraped names past a cap: their lines are counted, not parsed
    per_metric: int = field(default_factory=lambda: names.DECLARED.series_per_metric)
    in_all: int = field(default_factory=lambda: names.DECLARED.series_in_all)

    def add(self, name: str, labels: Labels, value: float, raw: str = "") -> None:
        held = self.series.setdefault(name, {})
        if labels in held:
            self._repeats += 1
            if self._repeats <= 3:  # a scrape that repeats every series would flood stderr
                shown = "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}" if labels else ""
                self.warnings.append(f"{self.source}: {name}{shown} appears more than once: the last value is used")
        elif len(held) >= self.per_metric or self._kept >= self.in_all:
            self.drop(name)
            self.full.add(raw or name)
            return
        else:
            self._kept += 1
        held[labels] = value

    def drop(self, name: str, count: int = 1) -> None:
        self._dropped[name] = self._dropped.get(name, 0) + count

    def outside(self, signal: names.Signal, where: str) -> None:
        """A value of `signal` outside its range, at `where` (`FILE:LINE: series is ...`)."""
        self.left_out.setdefault(signal.key, where)
        self._outside[signal.key] = self._outside.get(signal.key, 0) + 1

    def finish(self) -> None:
        if self._repeats > 3:
            self.warnings.append(
                f"{self.source}: {self._repeats - 3} more repeated series (the last value of each is used)"
            )
        if self.non_finite:
            self.warnings.append(f"{self.source}: {plural(self.non_finite, 'NaN or infinite value')} ignored")
        for key, count in self._outside.items():
            if count > 1:
                more = count - 1
                self.left_out[key] += f" (and {more:,} more value{'s' if more != 1 else ''} outside the range)"
        cap = names.DECLARED.series_per_metric
        for name, count in sorted(self._dropped.items()):
            kept = len(self.series.get(name, ()))
            why = (
                "the most of one metric"
                if kept >= cap
                else f"the most of all metrics, {names.DECLARED.series_in_all:,}"
            )
            reason = (f"{self.source}: {name} has {count:,} more series past the first {kept:,} ({why} invmap "
                      "keeps): counted, not read")  # fmt: skip
            self.warnings.append(reason)
            for reading in names.readings(name):
                self.left_out.setdefault(reading.signal.key, reason)


class _Lines:
    """The text's lines, decoded one at a time, with the number of the last one handed out."""

    def __init__(self, stream: IO[bytes], source: str) -> None:
        self.stream = stream
        self.source = source
        self.number = 0
        self.size = 0

    def __iter__(self) -> Iterator[str]:
        while raw := self.stream.readline(MAX_LINE + 1):
            self.number += 1
            self.size += len(raw)
            if self.size > CAP:
                raise CatalogError(self.source, [TOO_LARGE])
            if self.number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte-order mark some editors write
            if len(raw) > MAX_LINE:
                raise CatalogError(self.source, [f"line {self.number} is longer than 1 MiB; not a Prometheus scrape"])
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CatalogError(
                    self.source,
                    [f"line {self.number} is not UTF-8 text (byte {exc.start + 1}); not a Prometheus scrape"],
                ) from None


class _Run:
    """One run of lines for the parser; `numbers[i]` is the file's line number of the run's i-th line
    (0 for a TYPE line repeated at the start of a run)."""

    def __init__(self, lines: list[str], numbers: list[int]) -> None:
        self.lines = lines
        self.numbers = numbers
        self.at = 0

    def __iter__(self) -> Iterator[str]:
        for i, line in enumerate(self.lines):
            self.at = i
            yield line


def _runs(lines: _Lines, scrape: Scrape) -> Iterator[_Run]:
    """Runs of lines for the parser. A sample of a metric invmap does not read (`names.needed`) is
    counted (and its engine noted) but not parsed: prometheus_client's parser takes ~50 us a sample,
    most of a big scrape is other metrics and histogram buckets, and no rule reads them."""
    batch = _Batch()
    known = _Known()
    for line in lines:
        stripped = line.lstrip()
        if stripped and stripped[0] != "#":
            name, info = known.of(stripped)
            if info is None or not info[1] or name in scrape.full:
                _check(scrape.source, lines.number, line)  # not parsed: its syntax checked here
            if _skipped(scrape, name, info) and not _last_bucket(name, stripped):
                continue
        elif stripped:
            scrape.comments += 1
        cut = batch.comment(stripped, line) if stripped.startswith("#") else batch.other()
        if cut is not None:
            yield cut
        batch.add(line, lines.number)
    if batch.lines:
        yield _Run(batch.lines, batch.numbers)


class _Known:
    """What a sample line's metric name says: (its engine, whether it is parsed), or None when it is
    not a well-formed name (the parser then says what is wrong); kept by name."""

    def __init__(self) -> None:
        self.names: dict[str, tuple[str | None, bool] | None] = {}

    def of(self, stripped: str) -> tuple[str, tuple[str | None, bool] | None]:
        brace = stripped.find("{")
        head = stripped[:brace] if brace >= 0 else stripped
        name = head.split(None, 1)[0] if head[-1:].isspace() or " " in head or "\t" in head else head
        if name not in self.names:
            if len(self.names) > 100_000:  # a file of endless distinct names must not grow this
                self.names.clear()
            valid = names.sample_name(name) == name
            self.names[name] = (names.engine_of(names.canonical(name, False)), names.needed(name)) if valid else None
        return name, self.names[name]


def _check(source: str, number: int, line: str) -> None:
    """Refuse a sample line that is not one (exit 3, `FILE:LINE:COL: message`)."""
    problem = syntax(line)
    if problem is not None:
        column, message = problem
        raise CatalogError(f"{source}:{number}:{column}", [message])


def _last_bucket(name: str, stripped: str) -> bool:
    """A declared histogram's `+Inf` bucket, parsed though its other buckets are not: it is the
    histogram's count where an excerpt lost the `_count` line (requests per model)."""
    return name.endswith("_bucket") and 'le="+Inf"' in stripped and names.wanted(names.canonical(name, False))


def _skipped(scrape: Scrape, name: str, info: tuple[str | None, bool] | None) -> bool:
    """Count a sample (and its engine's samples); whether it is left unparsed (a metric no rule
    reads, or one already past its series cap)."""
    if info is None:
        return False
    scrape.samples += 1
    if info[0]:
        scrape.engines[info[0]] = scrape.engines.get(info[0], 0) + 1
    if name in scrape.full:
        scrape.drop(names.canonical(name, False))
        return True
    return not info[1]


class _Batch:
    """The lines of the run being gathered, cut where a family starts once `CHUNK` lines are held, or
    inside one family longer than a run (at twice that), its TYPE line repeated."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.numbers: list[int] = []
        self.type_line: str | None = None  # the TYPE line of the family the run is inside

    def add(self, line: str, number: int) -> None:
        self.lines.append(line)
        self.numbers.append(number)

    def comment(self, stripped: str, line: str) -> _Run | None:
        parts = stripped.split(None, 3)
        if not (len(parts) >= 3 and parts[1] in ("HELP", "TYPE")):
            return None
        cut = self._take() if len(self.lines) >= CHUNK else None  # a family starts: a clean place to cut
        self.type_line = line if parts[1] == "TYPE" else None
        return cut

    def other(self) -> _Run | None:
        if len(self.lines) < 2 * CHUNK:
            return None
        cut = self._take()
        if self.type_line:
            self.lines, self.numbers = [self.type_line], [0]
        return cut

    def _take(self) -> _Run:
        run = _Run(self.lines, self.numbers)
        self.lines, self.numbers = [], []
        return run


def _parser() -> Any:
    """prometheus_client's text parser, imported here (only `triage --metrics` pays for it) and, when
    the package is not loaded yet, without running its `__init__`: that imports the whole client (its
    HTTP exposition server, wsgiref, the process and GC collectors; ~25-50 ms here) for a parser that
    needs three of its modules. Those entries are removed from sys.modules again (the function keeps
    its own), so a later `import prometheus_client` anywhere in the process loads it as usual."""
    import importlib
    import sys

    if "prometheus_client" not in sys.modules:
        import importlib.util

        spec = importlib.util.find_spec("prometheus_client")
        if spec is not None and spec.submodule_search_locations:
            sys.modules["prometheus_client"] = importlib.util.module_from_spec(spec)
            try:
                return importlib.import_module("prometheus_client.parser").text_fd_to_metric_families
            finally:
                for name in [m for m in sys.modules if m == "prometheus_client" or m.startswith("prometheus_client.")]:
                    del sys.modules[name]
    return importlib.import_module("prometheus_client.parser").text_fd_to_metric_families


def read(stream: IO[bytes], source: str) -> Scrape:
    """Parse a scrape from a binary stream; CatalogError (exit 3) naming the line where the text
    stops being Prometheus text exposition."""
    text_fd_to_metric_families = _parser()
    scrape = Scrape(source)
    lines = _Lines(stream, source)
    for run in _runs(lines, scrape):
        try:
            for family in text_fd_to_metric_families(run):  # type: ignore[arg-type]
                _keep(scrape, family.samples, run)
        except CatalogError:
            raise
        except Exception as exc:  # the parser raises bare ValueErrors (and worse) on bad text
            number = run.numbers[run.at] or lines.number
            _check(source, number, run.lines[run.at])  # the column, where the line's syntax is wrong
            text = run.lines[run.at].rstrip("\r\n")
            shown = text if len(text) <= 120 else text[:117] + "..."
            reason = str(exc).split(":", 1)[0].strip() or type(exc).__name__
            raise CatalogError(f"{source}:{number}", [f"{NOT_SCRAPE} ({reason}): {shown!r}"]) from None
    if scrape.samples == 0 and scrape.comments:
        raise CatalogError(
            source, [f"holds {plural(scrape.comments, 'comment line')} and not one sample line; {NOT_SCRAPE}"]
        )
    scrape.lines = lines.number
    scrape.finish()
    return scrape


def _keep(scrape: Scrape, samples: Iterable[object], run: _Run) -> None:
    for sample in samples:
        raw, labels, value = sample[0], sample[1], sample[2]  # type: ignore[index]
        plain = names.canonical(raw, False)
        name = names.canonical(raw, "engine_type" in labels)
        if name != plain and names.engine_of(name) == "trtllm":  # counted by prefix before: none
            scrape.engines["trtllm"] = scrape.engines.get("trtllm", 0) + 1
        readings = names.readings(name)
        if not readings:
            continue
        if not math.isfinite(value):
            scrape.non_finite += 1
            continue
        held = tuple(sorted(labels.items()))
        scrape.add(name, held, _checked(scrape, run, raw, readings, held, float(value)), raw)


def _checked(scrape: Scrape, run: _Run, raw: str, readings: list[names.Reading], labels: Labels, value: float) -> float:
    """The value as read (a value within a range's tolerance, as its bound), each signal it carries
    checked against its range: outside it, the signal is left out (or the scrape refused)."""
    kept = value
    for reading in readings:
        if reading.wanted and not _matches(labels, reading.wanted):
            continue
        limits = reading.limits
        if limits.low <= value <= limits.high and (not limits.integer or value.is_integer()):
            if reading.part != "bucket":
                continue  # the usual case, decided without a call
            problem = _bound_problem(reading.signal, dict(labels).get("le"))
            if problem is None:
                continue
            read = value
        else:
            read, problem = limits.read(value)
        if problem is None:
            kept = read
            continue
        if reading.signal.key in scrape.left_out and limits.invalid == "omit":
            scrape.outside(reading.signal, "")  # counted; the first one is said
            continue
        line = _line_of(run, raw, labels)
        where = f"{scrape.source}:{line}" if line else scrape.source
        said = f"{labelled(raw, labels)} {problem}"
        if limits.invalid == "refuse":
            raise CatalogError(where, [f"{said} ({reading.signal.key}: {reading.signal.meaning})"])
        scrape.outside(reading.signal, f"{where}: {said}")
    return kept


def _matches(labels: Labels, wanted: Labels) -> bool:
    if not wanted:
        return True
    held = dict(labels)
    return all(held.get(k) == v for k, v in wanted)


_BOUNDS: dict[tuple[str, float, float, str | None], str | None] = {}  # (signal, le) -> its problem: bounds repeat


def _bound_problem(signal: names.Signal, le: str | None) -> str | None:
    """What is wrong with a bucket's upper bound `le` (None: nothing), remembered by bound."""
    at = (signal.key, signal.range.low, signal.range.high, le)
    held = _BOUNDS.get(at, "")
    if held != "":
        return held
    if len(_BOUNDS) > 10_000:  # a scrape of endless distinct bounds must not grow this
        _BOUNDS.clear()
    _BOUNDS[at] = found = _bound_of(signal, le)
    return found


def _bound_of(signal: names.Signal, le: str | None) -> str | None:
    try:
        bound = float(le) if le is not None else math.nan
    except ValueError:
        return f"has a bucket bound le={le!r} that is not a number"
    if math.isnan(bound):
        return "has a bucket bound that is not a number (le is NaN or missing)"
    if math.isinf(bound):
        return None if bound > 0 else "has a bucket bound of -Inf"
    _, problem = signal.range.read(bound)
    return None if problem is None else f"has a bucket bound le={le}: the bound {problem}"


def _line_of(run: _Run, raw: str, labels: Labels) -> int | None:
    """The line of the run that holds this sample (found again: a value outside its range is rare)."""
    parse = _parser()
    stem = names.key(raw)
    for i, line in enumerate(run.lines):
        stripped = line.lstrip()
        if not stripped.startswith(stem) or run.numbers[i] == 0:
            continue
        try:
            for family in parse(iter([stripped])):
                for sample in family.samples:
                    if names.key(sample[0]) == stem and tuple(sorted(sample[1].items())) == labels:
                        return run.numbers[i]
        except Exception:  # noqa: BLE001 - a line the parser took in its run parses alone too
            continue
    return None


def read_path(path: str) -> Scrape:
    """A scrape from a regular file, or a FIFO a program writes to (`open_regular`: one nobody writes
    to is refused within FIFO_WAIT seconds, a device at once; stdin, '-', is the way to stream); a
    missing or unreadable file is exit 3, as an unreadable catalog is, and so is one over `CAP`."""
    with named_failures(path, "is a folder, not a scrape"), open_regular(path, fifo=True) as (stream, size):
        if size > CAP:
            raise CatalogError(path, [TOO_LARGE])
        return read(stream, path)
