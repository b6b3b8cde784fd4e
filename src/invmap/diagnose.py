"""triage's run without the command line: its options as one plain object (`TriageOptions`), checked
(usage errors first), the measurements read (scrapes, a benchmark, a model's decode bound) and the
levels found from words and measurements. The CLI parses the flags into the options and renders
what `run` returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from invmap.errors import FileAccessError, UsageError

MAX_INTERVAL = 3600  # seconds invmap waits between two scrapes of one URL; two given scrapes may be further apart


@dataclass(frozen=True)
class TriageOptions:
    """What `invmap triage` was asked, as plain values."""

    words: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)  # scrapes: files, URLs, '-' for stdin
    bench: list[str] = field(default_factory=list)  # benchmark results: one, or two runs to compare
    interval: str | None = None
    model: str | None = None
    gpu: str | None = None
    bandwidth: float | None = None
    efficiency: float | None = None  # the fraction of the bandwidth a decode step reaches
    limit: int = 3
    every: bool = False
    verbose: bool = False  # every rule that could not run, not the first few families
    catalog_on_stdin: bool = False  # `--catalog -`: stdin is taken

    @property
    def measuring(self) -> bool:
        return bool(self.metrics or self.bench)


@dataclass
class Triage:
    """What triage found: the levels from the words (with their notes) and, when measured, the
    assessment, the levels combined from both and the lines said about them."""

    found: list[dict[str, Any]]
    notes: dict[str, Any]
    measured: Any = None
    items: list[dict[str, Any]] = field(default_factory=list)
    said: list[str] = field(default_factory=list)


def check(opts: TriageOptions) -> None:
    """Every usage error of the options, before anything is read (exit 2)."""
    if not opts.words and not opts.measuring:
        raise UsageError("triage needs a SYMPTOM, --metrics SOURCE or --bench FILE", hint="invmap triage --help")
    if not opts.measuring:
        return
    sources = opts.metrics
    if opts.metrics and opts.bench:
        raise UsageError("give --metrics or --bench, not both (a scrape and a benchmark are read apart)")
    if len(sources) > 2:
        raise UsageError(f"--metrics takes at most two scrapes (before and after), not {len(sources)}")
    if sources.count("-") > 1:
        raise UsageError("--metrics - reads stdin once: give the second scrape as a file or URL")
    if len(opts.bench) > 2:
        raise UsageError(f"--bench takes at most two results (before and after), not {len(opts.bench)}")
    if opts.bench.count("-") > 1:
        raise UsageError("--bench - reads stdin once: give the second result as a file")
    if (("-" in sources) or "-" in opts.bench) and opts.catalog_on_stdin:
        raise UsageError("stdin is the catalog (--catalog -): the scrape cannot be read from it too")


def interval_seconds(opts: TriageOptions) -> float | None:
    """--interval in seconds, checked against what it goes with; None without it."""
    if opts.interval is None:
        return None
    from invmap.measure import view

    try:
        seconds = view.duration(opts.interval)
    except ValueError as exc:
        raise UsageError(f"--interval {exc}") from None
    if opts.bench or not opts.metrics:
        raise UsageError("--interval goes with --metrics: one URL to scrape twice, or two scrapes")
    if len(opts.metrics) == 1 and not is_url(opts.metrics[0]):
        raise UsageError("--interval with one --metrics needs a URL to scrape twice (a file is one scrape)")
    if seconds > MAX_INTERVAL and len(opts.metrics) == 1:  # invmap would wait that long between scrapes
        raise UsageError(f"--interval {opts.interval} is longer than an hour: scrape twice yourself and give both")
    return seconds


def decode_bound(opts: TriageOptions) -> Any:
    """The decode bandwidth bound of --model (with --gpu's bandwidth or --bandwidth, derated by
    --efficiency); None without --model."""
    if opts.model is None and opts.gpu is None and opts.bandwidth is None and opts.efficiency is None:
        return None
    from invmap import estimate, measure

    if opts.model is None:
        raise UsageError(
            "--gpu, --bandwidth and --efficiency go with --model: the bandwidth bound needs the model's bytes"
        )
    if opts.bandwidth is not None:
        estimate.check("bandwidth_bytes_per_second", opts.bandwidth)
    if opts.efficiency is not None:
        estimate.check("efficiency", opts.efficiency)
    gpu = estimate.find_gpu(opts.gpu) if opts.gpu is not None else None
    if opts.bandwidth is None and (gpu is None or gpu.bandwidth is None):
        which = (
            f"invmap's table has no memory bandwidth for {gpu.display} (no source it accepts gives one)"
            if gpu
            else "no GPU given"
        )
        raise UsageError(f"--model needs a memory bandwidth: {which}; give --bandwidth (bytes per second)")
    bound = measure.DecodeBound(estimate.load_model(opts.model), gpu, opts.bandwidth, opts.efficiency)
    bound.check()  # the config, read whole now: a measured batch or context past the roofline's reads none of it
    return bound


def measure_of(opts: TriageOptions, stdin: Any) -> Any:
    """The assessment of --metrics (one or two scrapes, or one URL scraped twice) or --bench, read
    from files, URLs or `stdin`; None when nothing was measured. Usage errors come first."""
    return _measure(opts, lambda source: read_scrape(source, stdin), lambda source: read_bench_source(source, stdin))


def measure_texts(opts: TriageOptions) -> Any:
    """As `measure_of`, for a caller that holds the measurements as text (the MCP server's triage):
    each of `opts.metrics` is a scrape's text or an http(s) URL, each of `opts.bench` a benchmark's text.
    The same checks, the same size caps as a file, the same deadlines and caps for a URL."""
    return _measure(opts, scrape_text, bench_text)


def _measure(opts: TriageOptions, scrape_one: Any, read_one: Any) -> Any:
    check(opts)
    if not opts.measuring:
        return None
    seconds = interval_seconds(opts)
    bound = decode_bound(opts)
    from invmap import measure

    if opts.bench:
        read = [read_one(source) for source in opts.bench]
        done = (
            measure.assess_compare(read[0], read[1], bound) if len(read) == 2 else measure.assess_bench(read[0], bound)
        )
        done.notes.extend(done.not_checked(opts.verbose))
        return done
    scrapes = [scrape_one(source) for source in opts.metrics]
    if len(opts.metrics) == 1 and seconds is not None:  # one URL, scraped again `seconds` later
        import time

        time.sleep(seconds)
        scrapes.append(scrape_one(opts.metrics[0]))
    done = measure.assess_scrapes(scrapes, seconds, bound)
    done.notes.extend(done.not_checked(opts.verbose))
    return done


def read_bench_source(source: str | None, stdin: Any) -> Any:
    """--bench FILE, or '-' for `stdin`."""
    from invmap.measure import bench

    return bench.read_path(source) if source != "-" else read_bench(stdin)


def is_url(source: str) -> bool:
    return source.lower().startswith(("http://", "https://"))


def read_scrape(source: str, stdin: Any) -> Any:
    """One scrape: an http(s) URL fetched, '-' read from `stdin`, else a file."""
    from invmap import measure
    from invmap.measure import scrape

    if is_url(source):
        return measure.scrape_url(source)
    if source == "-":
        if stdin is None or stdin.closed:
            raise FileAccessError("cannot read the scrape from stdin: it is closed")
        return scrape.read(stdin.buffer, "stdin")
    return scrape.read_path(source)


def scrape_text(text: str) -> Any:
    """One scrape given as text, or an http(s) URL (one line) to fetch; over `scrape.CAP`, exit 3."""
    import io

    from invmap import measure
    from invmap.errors import CatalogError
    from invmap.measure import scrape

    if is_url(text.strip()) and "\n" not in text.strip():
        return measure.scrape_url(text.strip())
    data = text.encode("utf-8", "backslashreplace")
    if len(data) > scrape.CAP:
        raise CatalogError("metrics", [scrape.TOO_LARGE])
    return scrape.read(io.BytesIO(data), "metrics")


def bench_text(text: str) -> Any:
    """A benchmark's results given as text; over `bench.MAX_BYTES`, exit 3."""
    from invmap.errors import CatalogError
    from invmap.measure import bench

    data = text.encode("utf-8", "backslashreplace")
    if len(data) > bench.MAX_BYTES:
        raise CatalogError("bench", ["is larger than 256 MiB; not a benchmark result invmap reads"])
    return bench.read(data, "bench")


def read_bench(stdin: Any) -> Any:
    """A benchmark's results from `stdin`."""
    from invmap.measure import bench

    if stdin is None or stdin.closed:
        raise FileAccessError("cannot read the benchmark from stdin: it is closed")
    from invmap.errors import CatalogError
    from invmap.location import read_capped

    data = read_capped(stdin.buffer, bench.MAX_BYTES)
    if len(data) > bench.MAX_BYTES:
        raise CatalogError("stdin", ["is larger than 256 MiB; not a benchmark result invmap reads"])
    return bench.read(data, "stdin")


def run(idx: Any, filters: Any, opts: TriageOptions, measured: Any = None) -> Triage:
    """The levels for the words (if any) and, with `measured`, combined with the measurements."""
    from invmap import triage as levels
    from invmap.errors import NotFoundError

    if not idx.level_details():
        raise NotFoundError("this catalog has no level data (see 'invmap layers')")
    if opts.words:
        found, notes = levels.triage(idx, opts.words, filters, opts.limit, opts.every)
    else:
        found, notes = [], {"excluded": [], "corrected": {}, "hidden": 0, "unmatched": None}
    result = Triage(found, notes, measured)
    if measured is not None:
        from invmap import measure

        limit = None if opts.every else opts.limit
        result.items, result.said = measure.combine(idx, measured, found, opts.words, filters, limit)
    return result
