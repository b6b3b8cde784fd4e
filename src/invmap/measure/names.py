"""Which engine metric means which common signal: the one declaration, data/metrics.toml, read into
`Engine`s and `Signal`s, and the look-ups a scrape's reader makes.

Each `Signal` (requests waiting, KV usage, TTFT, ...) lists, per engine, the metric names that carry
it: the current name first, then older names (renames) the engine exposed before, each with the
place its name and meaning were read (`doc`) and, for a rename, when it changed (`note`). Readers of
a scrape look names up here only; nothing else in invmap spells a metric name.

Names are written as the engine exposes them. Counters are matched with or without their `_total`
suffix (prometheus_client's parser adds it to a counter whose TYPE line lacks it, as TGI's do);
`sglang_` (some routers re-export SGLang so) is read as `sglang:`; `trtllm:` (an older Dynamo
re-export) as `trtllm_`; and trtllm-serve's unprefixed names (TensorRT-LLM 1.1, as Dynamo documents
them) as `trtllm_` when the series carries the `engine_type` label trtllm-serve sets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple


class Engine(NamedTuple):
    key: str
    title: str
    prefixes: tuple[str, ...]
    rank_label: str | None = None  # the label that tells data-parallel ranks apart
    model_label: str = "model_name"


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
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


class Name(NamedTuple):
    """One engine's metric for a signal: `labels` it must carry (`request_type=waiting`), `scale` to
    the signal's unit, `note` for a renamed or retired name, `doc` where it was read; `over`, the
    labels of the series it is divided by (a share read from two gauges)."""

    engine: str
    metric: str
    doc: str
    labels: tuple[tuple[str, str], ...] = ()
    scale: float = 1.0
    note: str = ""
    over: tuple[tuple[str, str], ...] = ()  # a gauge read as a share: these series / the `over` series


class Signal(NamedTuple):
    """A signal common to engines: `kind` gauge | counter | histogram | info; `unit`; how one
    engine's series combine (`sum` across ranks and models, or `max`: the fullest one matters);
    for a histogram, whether its percentiles are read (`quantiles`: else only its sum and count, and
    its bucket lines are skipped unparsed, which is most of a scrape)."""

    key: str
    kind: str
    unit: str
    meaning: str
    names: tuple[Name, ...]
    combine: str = "sum"
    quantiles: bool = False


def _declared() -> tuple[tuple[Engine, ...], tuple[Signal, ...]]:
    """The engines and signals of data/metrics.toml; each signal's names in the engines' order."""
    import tomli  # a small file that ships with invmap; tomli words any error

    with open(Path(__file__).parent.parent / "data" / "metrics.toml", "rb") as handle:
        data = tomli.load(handle)
    engines, names_of = [], {}
    for entry in data["engine"]:
        engines.append(
            Engine(
                entry["key"],
                entry["title"],
                tuple(entry["prefixes"]),
                entry.get("rank_label"),
                entry.get("model_label", "model_name"),
            )
        )
        for signal, given in entry["names"].items():
            for one in given if isinstance(given, list) else [given]:
                names_of.setdefault(signal, []).append(_name_of(entry["key"], entry["doc"], one))
    signals = tuple(
        Signal(
            s["key"],
            s["kind"],
            s["unit"],
            s["meaning"],
            tuple(names_of.get(s["key"], ())),
            s.get("combine", "sum"),
            s.get("quantiles", False),
        )
        for s in data["signal"]
    )
    return tuple(engines), signals


def _name_of(engine: str, doc: str, given: str | dict[str, Any]) -> Name:
    """One declared name: a metric, or a table with the metric and what else it carries."""
    if isinstance(given, str):
        return Name(engine, given, doc)
    return Name(
        engine,
        given["metric"],
        given.get("doc", doc),
        tuple(given.get("labels", {}).items()),
        float(given.get("scale", 1.0)),
        given.get("note", ""),
        tuple(given.get("over", {}).items()),
    )


ENGINES, SIGNALS = _declared()
BY_KEY = {e.key: e for e in ENGINES}
BY_SIGNAL = {s.key: s for s in SIGNALS}


def key(name: str) -> str:
    """The name a metric is matched by: a counter's `_total` dropped, so `tgi_request_count` and
    `vllm:num_preemptions_total` match however the scrape spelt them."""
    return name[:-6] if name.endswith("_total") else name


# canonical name (key) -> the signals and names that read it
WANTED: dict[str, list[tuple[Signal, Name]]] = {}
for _signal in SIGNALS:
    for _name in _signal.names:
        WANTED.setdefault(key(_name.metric), []).append((_signal, _name))
del _signal, _name
HISTOGRAMS = frozenset(key(n.metric) for s in SIGNALS if s.kind == "histogram" for n in s.names)
QUANTILED = frozenset(key(n.metric) for s in SIGNALS if s.quantiles for n in s.names)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:")


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
    if key(name) in WANTED:
        return True
    for suffix in HISTOGRAM_SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in HISTOGRAMS:
            return True
    return False


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
    if name.endswith("_bucket") and name[: -len("_bucket")] in HISTOGRAMS:
        return name[: -len("_bucket")] in QUANTILED
    return wanted(name)
