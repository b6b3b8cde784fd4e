"""A trace file the user names (`--trace FILE`, `-` for stdin), in one of the forms in `FORMS`, told
apart by its content: the field guide's JSON (an experiment record's `workload.requests` or
`workload.events`, an object holding `requests` or `events`, or an array of them), Vidur's CSV
request trace and LLMServingSim's JSON lines.

Every problem is an exit 3 naming the file, the line and, where it can be told, the column
(`FILE:LINE:COL: field: message`); numbers are checked against workload.py's bounds and a trace
holds at most `MAX_REQUESTS` requests or events. Line-based forms are read a line at a time.
Arrivals in seconds (Vidur) or nanoseconds (LLMServingSim) become ticks of `tick_ms` milliseconds
(floor of time / tick), and the requests are named r1, r2, ... in file order (zero-padded, so that
the tick model's tie-break by id is file order).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import sys
from collections import namedtuple
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import invmap.simulate.workload as w
from invmap.errors import CatalogError, FileAccessError, InvmapError
from invmap.simulate.spans import Spans, field_column

MAX_LINE = 64 * 1024**2  # bytes in one line of a line-based trace
MAX_JSON = 512 * 1024**2  # bytes of a JSON trace, read whole
MAX_SECONDS = 10**7  # an arrival in seconds (115 days)
MAX_NS = 10**16  # an arrival in nanoseconds
SHOWN = 10  # problems named one by one; the rest counted

Form = namedtuple("Form", ("name", "kind", "what", "where"))
FORMS: tuple[Form, ...] = (
    Form(
        "field-guide",
        "requests",
        "the field guide's JSON: request_id, arrival_tick, input_tokens, output_tokens, priority",
        "an experiment record's workload.requests (examples/experiments/batching-*.json), an object's "
        "requests, or an array of requests",
    ),
    Form(
        "vidur",
        "requests",
        "Vidur's CSV request trace: arrived_at (seconds), num_prefill_tokens, num_decode_tokens",
        "data/processed_traces/splitwise_*.csv; other columns are ignored",
    ),
    Form(
        "llmservingsim",
        "requests",
        "LLMServingSim's JSON lines: input_toks, output_toks, arrival_time_ns",
        "one request a line (dataset/*.jsonl); token id lists are ignored; agentic sessions are refused",
    ),
    Form(
        "field-guide-kv",
        "events",
        "the field guide's KV events JSON: tick, action (admit, release, evict, touch), request_id, "
        "tokens, reserve_tokens",
        "an experiment record's workload.events (examples/experiments/kv-paged.json), an object's events, "
        "or an array of events",
    ),
)
VIDUR_COLUMNS = ("arrived_at", "num_prefill_tokens", "num_decode_tokens")
LLMSERVINGSIM_KEYS = ("input_toks", "output_toks", "arrival_time_ns")


class TraceError(CatalogError):
    """A trace that cannot be read (exit 3): each problem `FILE:LINE[:COL]: message`."""

    def __init__(self, path: str, located: list[tuple[int | None, int | None, str]], more: int = 0) -> None:
        self.path = path
        self.problems = [f"{where(path, line, col)}{text}" for line, col, text in located]
        lines = list(self.problems)
        if more:
            lines.append(f"{path}: and {more:,} more problems")
        if len(lines) > 1:
            lines.insert(0, f"{path} has {len(located) + more:,} problems:")
        InvmapError.__init__(self, "\n".join(lines))


def where(path: str, line: int | None, col: int | None) -> str:
    return f"{path}:{line}:{col}: " if line and col else f"{path}:{line}: " if line else f"{path}: "


Trace = namedtuple("Trace", ("path", "form", "items", "tick_ns", "sha256"))


def read(path: str, kind: str, tick_ms: float) -> Trace:
    """The trace at `path` (`-`: stdin) as requests (`kind` "requests") or KV events ("events")."""
    tick_ns = max(1, round(tick_ms * 1_000_000))
    digest = hashlib.sha256()
    with _opened(path) as handle:
        lines = _lines(handle, path, digest)
        first = next(((n, t) for n, t in lines if t.strip()), None)
        if first is None:
            raise TraceError(path, [(None, None, "is empty: a trace holds requests or KV events (see --help)")])
        number, text = first
        head = text.lstrip()
        if head.startswith(("{", "[")):
            one = _json_line(text)
            if isinstance(one, dict) and (set(LLMSERVINGSIM_KEYS) | {"sub_requests"}) & set(one):
                form, items = "llmservingsim", _llmservingsim(path, first, lines, tick_ns)
            else:
                whole = "".join(t for _, t in _cap([first], lines, path))
                form, items = _field_guide(path, whole, number, kind)
        else:
            form, items = "vidur", _vidur(path, first, lines, tick_ns)
    found = next(f for f in FORMS if f.name == form)
    if found.kind != kind:
        other = "simulate kv" if found.kind == "events" else "simulate batching"
        raise TraceError(
            path, [(None, None, f"holds {found.kind} ({found.what.split(':')[0]}), not {kind}: {other} reads it")]
        )
    if not items:
        raise TraceError(path, [(None, None, f"holds no {kind}")])
    return Trace(path, form, tuple(items), tick_ns if form in ("vidur", "llmservingsim") else None, digest.hexdigest())


# --- reading -----------------------------------------------------------------------------------


@contextmanager
def _opened(path: str) -> Iterator[IO[bytes]]:
    from invmap.inputfile import named_failures

    if path == "-":
        stream = getattr(sys.stdin, "buffer", None) if sys.stdin is not None else None
        if stream is None or sys.stdin.closed:
            raise FileAccessError("cannot read the trace from stdin: it is closed")
        yield stream
        return
    with named_failures(path, "is a folder, not a trace"), open(path, "rb") as handle:
        yield handle


def _lines(handle: IO[bytes], path: str, digest: Any) -> Iterator[tuple[int, str]]:
    number = 0
    while True:
        try:
            raw = handle.readline(MAX_LINE + 1)
        except OSError as exc:
            raise CatalogError(path, [f"cannot be read: {exc.strerror or exc}"]) from None
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE:
            raise TraceError(path, [(number, None, f"is longer than {MAX_LINE:,} bytes")])
        digest.update(raw)
        try:
            yield number, raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise TraceError(path, [(number, exc.start + 1, "is not UTF-8 text")]) from None


def _cap(first: list[tuple[int, str]], rest: Iterator[tuple[int, str]], path: str) -> Iterator[tuple[int, str]]:
    """Every line of a JSON trace read whole, at most MAX_JSON bytes of it."""
    total = 0
    for n, text in _chain(first[0], rest):
        total += len(text)
        if total > MAX_JSON:
            raise TraceError(path, [(None, None, f"is larger than {MAX_JSON:,} bytes; a JSON trace is read whole")])
        yield n, text


def _json_line(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _too_many(path: str, kind: str) -> TraceError:
    return TraceError(
        path, [(None, None, f"holds more than {w.MAX_REQUESTS:,} {kind}, the bound of a trace invmap simulates")]
    )


def _ids(count: int) -> list[str]:
    width = len(str(count))
    return [f"r{n:0{width}d}" for n in range(1, count + 1)]


# --- the field guide's JSON ----------------------------------------------------------------------

KEYS = {"requests": "request_id", "events": "action"}


def _field_guide(path: str, text: str, first_line: int, kind: str) -> tuple[str, list[Any]]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(path, [(exc.lineno, exc.colno, f"is not JSON ({exc.msg})")]) from None
    except RecursionError:
        raise TraceError(path, [(None, None, "is nested too deeply to be a trace")]) from None
    found_kind, label, items = _items(value)
    if found_kind is None:
        raise TraceError(
            path,
            [
                (
                    first_line,
                    None,
                    "is JSON but not a trace invmap reads: no workload.requests or workload.events (the field guide's "
                    "experiment records), requests or events, and not an array of them",
                )
            ],
        )
    form = "field-guide" if found_kind == "requests" else "field-guide-kv"
    if found_kind != kind:
        return form, []  # read() says which command reads it
    if not isinstance(items, list):
        spans = Spans(text)
        return form, _refuse(
            path, spans, [(_parent(spans.value), label.rpartition(".")[2], f"{label} must be an array")]
        )
    if len(items) > w.MAX_REQUESTS:
        raise _too_many(path, kind)
    problems = _problems(items, label, kind)
    if problems:
        spans = Spans(text)
        _, _, located_items = _items(spans.value)
        _refuse(path, spans, [(located_items[n], field, message) for n, field, message in problems])
    make = w.request_of if kind == "requests" else w.event_of
    return form, [make(item) for item in items]


def _problems(items: list[Any], label: str, kind: str) -> list[tuple[int, str | None, str]]:
    """Every problem of a field-guide trace's items: (item, field, message); duplicate request ids,
    and KV events out of tick order, included."""
    check = w.request_problems if kind == "requests" else w.event_problems
    problems: list[tuple[int, str | None, str]] = []
    seen: dict[str, int] = {}
    previous_tick = -1
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            problems.append((n, None, f"{label}[{n}] must be a JSON object"))
            continue
        problems += [(n, field, f"{label}[{n}].{field} {message}") for field, message in check(item)]
        rid, tick = item.get("request_id"), item.get("tick")
        if kind == "requests" and isinstance(rid, str):
            if rid in seen:
                problems.append((n, "request_id", f"{label}[{n}].request_id duplicates {label}[{seen[rid]}]'s {rid!r}"))
            seen.setdefault(rid, n)
        if kind == "events" and isinstance(tick, int) and not isinstance(tick, bool):
            if tick < previous_tick:
                problems.append(
                    (
                        n,
                        "tick",
                        f"{label}[{n}].tick {tick:,} is before the event before it ({previous_tick:,}): events go in tick order",
                    )
                )
            previous_tick = max(previous_tick, tick)
    return problems


def _items(value: Any) -> tuple[str | None, str, Any]:
    """(kind, its JSON path, the list) of a parsed field-guide trace; kind None when it is none."""
    if isinstance(value, dict):
        workload = value.get("workload")
        for kind in KEYS:
            if isinstance(workload, dict) and kind in workload:
                return kind, f"workload.{kind}", workload[kind]
        for kind in KEYS:
            if kind in value:
                return kind, kind, value[kind]
        return None, "", None
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        events = "action" in value[0] or ("tick" in value[0] and "arrival_tick" not in value[0])
        return ("events" if events else "requests"), "", value
    return None, "", None


def _parent(value: Any) -> Any:
    return value.get("workload") if isinstance(value, dict) and isinstance(value.get("workload"), dict) else value


def _refuse(path: str, spans: Spans, problems: list[tuple[Any, str | None, str]]) -> list[Any]:
    located = []
    for obj, field, message in problems[:SHOWN]:
        line, col = spans.where(obj, field)
        located.append((line, col, message.removeprefix(".")))
    raise TraceError(path, located, max(0, len(problems) - SHOWN))


# --- Vidur's CSV ---------------------------------------------------------------------------------


def _vidur(path: str, first: tuple[int, str], lines: Iterator[tuple[int, str]], tick_ns: int) -> list[w.Request]:
    number, text = first
    header = [c.strip() for c in _csv_cells(path, number, text)]
    missing = [c for c in VIDUR_COLUMNS if c not in header]
    if missing:
        if missing == ["arrived_at"]:
            message = (
                "is a request-length trace (no arrived_at column): Vidur draws its arrivals elsewhere; a trace "
                "to simulate needs arrived_at, num_prefill_tokens and num_decode_tokens"
            )
        else:
            names = ", ".join(f.what.split(":")[0] for f in FORMS)
            message = f"is not a trace invmap reads ({names}); a CSV trace is Vidur's, with columns {', '.join(VIDUR_COLUMNS)}"
        raise TraceError(path, [(number, None, message)])
    at = [header.index(c) for c in VIDUR_COLUMNS]
    found: list[tuple[int, int, int]] = []
    problems: list[tuple[int, int | None, str]] = []
    for number, text in lines:
        if not text.strip():
            continue
        if len(found) >= w.MAX_REQUESTS:
            raise _too_many(path, "requests")
        cells = text.rstrip("\r\n").split(",") if '"' not in text else _csv_cells(path, number, text)
        fast = _plain_row(cells, at, tick_ns) if len(cells) == len(header) else None
        if fast is not None:
            found.append(fast)
        elif len(cells) != len(header):
            problems.append((number, None, f"has {len(cells)} fields; the header has {len(header)}"))
        else:
            row = _vidur_row(cells, at, tick_ns, number, text, problems)
            if row is not None:
                found.append(row)
        if len(problems) > SHOWN:
            break
    return _named(path, found, problems)


def _csv_cells(path: str, number: int, text: str) -> list[str]:
    try:
        return next(csv.reader([text.rstrip("\r\n")], strict=True), [])
    except csv.Error as exc:
        raise TraceError(path, [(number, None, f"is not CSV ({exc})")]) from None


def _plain_row(cells: list[str], at: list[int], tick_ns: int) -> tuple[int, int, int] | None:
    """A row of plain numbers within bounds, read at once; None sends it to `_vidur_row`, which says
    what is wrong with it."""
    try:
        seconds, prefill, decode = float(cells[at[0]]), int(cells[at[1]]), int(cells[at[2]])
    except ValueError:
        return None
    if not (0 <= seconds <= MAX_SECONDS and 1 <= prefill <= w.MAX_TOKENS and 1 <= decode <= w.MAX_TOKENS):
        return None
    tick = round(seconds * 1e9) // tick_ns
    return (tick, prefill, decode) if tick <= w.MAX_TICK else None


def _vidur_row(
    cells: list[str], at: list[int], tick_ns: int, number: int, text: str, problems: list[tuple[int, int | None, str]]
) -> tuple[int, int, int] | None:
    def col(k: int) -> int | None:
        if '"' in text:
            return None
        return 1 + sum(len(c) + 1 for c in text.rstrip("\r\n").split(",")[:k])

    values = []
    for name, k in zip(VIDUR_COLUMNS, at):
        cell = cells[k].strip()
        if name == "arrived_at":
            value, problem = _seconds(cell)
        else:
            value, problem = _token_count(cell, text=True)
        if problem:
            problems.append((number, col(k), f"{name} {problem}"))
            return None
        values.append(value)
    seconds, prefill, decode = values
    tick = round(seconds * 1e9) // tick_ns
    if tick > w.MAX_TICK:
        problems.append(
            (
                number,
                col(at[0]),
                f"arrived_at {cells[at[0]].strip()} s is tick {tick:,}, past {w.MAX_TICK:,} ({_tick_hint(tick_ns)})",
            )
        )
        return None
    return tick, prefill, decode


def _tick_hint(tick_ns: int) -> str:
    return f"at {tick_ns / 1e6:g} ms a tick; --tick-ms sets it"


def _seconds(cell: str) -> tuple[float, str | None]:
    try:
        value = float(cell)
    except ValueError:
        return 0.0, f"must be a number of seconds, not {cell[:40]!r}"
    if not math.isfinite(value) or not 0 <= value <= MAX_SECONDS:
        return 0.0, f"must be from 0 to {MAX_SECONDS:,} seconds, not {cell[:40]}"
    return value, None


def _token_count(cell: Any, text: bool = False) -> tuple[int, str | None]:
    """A whole number of tokens 1..MAX_TOKENS (a CSV cell's text when `text`, else a JSON number;
    12.0 is 12), or the problem."""
    value: Any = cell
    if isinstance(cell, str) and text:
        try:
            value = float(cell) if any(c in cell for c in ".eE") else int(cell)
        except ValueError:
            return 0, f"must be a whole number of tokens, not {cell[:40]!r}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0, f"must be a whole number of tokens, not {value!r:.40}" if isinstance(value, str) else (
            f"must be a whole number of tokens, not {json.dumps(value)[:40]}"
        )
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return 0, f"must be a whole number of tokens, not {value}"
    if not 1 <= value <= w.MAX_TOKENS:
        return 0, f"must be from 1 to {w.MAX_TOKENS:,} tokens, not {value:,}"
    return int(value), None


# --- LLMServingSim's JSON lines ------------------------------------------------------------------


def _llmservingsim(
    path: str, first: tuple[int, str], lines: Iterator[tuple[int, str]], tick_ns: int
) -> list[w.Request]:
    found: list[tuple[int, int, int]] = []
    problems: list[tuple[int, int | None, str]] = []
    for number, text in _chain(first, lines):
        if not text.strip():
            continue
        if len(found) >= w.MAX_REQUESTS:
            raise _too_many(path, "requests")
        row = _llmservingsim_row(number, text, tick_ns, problems)
        if row is not None:
            found.append(row)
        if len(problems) > SHOWN:
            break
    return _named(path, found, problems)


def _chain(first: tuple[int, str], rest: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    yield first
    yield from rest


def _llmservingsim_row(
    number: int, text: str, tick_ns: int, problems: list[tuple[int, int | None, str]]
) -> tuple[int, int, int] | None:
    try:
        obj = json.loads(text.rstrip("\r\n"))
    except json.JSONDecodeError as exc:
        problems.append((number, exc.colno, f"is not JSON ({exc.msg}); LLMServingSim's trace is one object a line"))
        return None
    except RecursionError:
        problems.append((number, None, "is nested too deeply to be a request"))
        return None
    if not isinstance(obj, dict):
        problems.append((number, 1, "must be a JSON object (one request a line)"))
        return None
    if "sub_requests" in obj:
        problems.append(
            (
                number,
                field_column(text, "sub_requests"),
                "sub_requests: an agentic session, whose calls wait on each other's completion; the tick model "
                "simulates independent requests only",
            )
        )
        return None
    values = []
    for key in LLMSERVINGSIM_KEYS:
        if key not in obj:
            problems.append((number, 1, f"{key} is missing"))
            return None
        value = obj[key]
        if key == "arrival_time_ns":
            ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_NS
            problem = (
                None
                if ok
                else f"must be a whole number of nanoseconds from 0 to {MAX_NS:,}, not {json.dumps(value)[:40]}"
            )
        else:
            value, problem = _token_count(value)
        if problem:
            problems.append((number, field_column(text, key), f"{key} {problem}"))
            return None
        values.append(value)
    prefill, decode, ns = values
    tick = ns // tick_ns
    if tick > w.MAX_TICK:
        problems.append(
            (
                number,
                field_column(text, "arrival_time_ns"),
                f"arrival_time_ns {ns:,} is tick {tick:,}, past {w.MAX_TICK:,} ({_tick_hint(tick_ns)})",
            )
        )
        return None
    return tick, prefill, decode


def _named(path: str, found: list[tuple[int, int, int]], problems: list[Any]) -> list[w.Request]:
    """A timed trace's rows (tick, prefill, decode) as requests r1, r2, ... in file order; the first
    problems, if any, as one TraceError (exit 3)."""
    if problems:
        raise TraceError(path, problems[:SHOWN], 0)
    return [w.Request(rid, tick, prefill, decode, 0) for rid, (tick, prefill, decode) in zip(_ids(len(found)), found)]
