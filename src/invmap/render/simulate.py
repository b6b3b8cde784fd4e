"""A simulation as a person reads it: the strategies (or allocations) side by side, then with
`--events` each request's ticks (or each allocator event), the configuration, the rules and what the
model leaves out. Plain text fitted to the width (a table too wide stacks one block a column); the
same text in a pipe. Request ids and file names are escaped: a trace may hold anything."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from invmap.render.lines import greedy, wrapped
from invmap.safe import escape

BATCHING_ROWS = (
    ("p50 TTFT", "p50_ttft_ticks"),
    ("p95 TTFT", "p95_ttft_ticks"),
    ("p50 completion", "p50_completion_ticks"),
    ("p95 completion", "p95_completion_ticks"),
    ("makespan", "makespan_ticks"),
    ("output tokens / tick", "output_tokens_per_tick"),
    ("requests / tick", "request_throughput_per_tick"),
    ("goodput (fraction)", "goodput_request_fraction"),
    ("goodput requests / tick", "goodput_requests_per_tick"),
    ("requests completed", "completed_requests"),
    ("output tokens", "completed_output_tokens"),
)
ENGINE_ROWS = (
    ("p50 TTFT", "p50_ttft_ms"),
    ("p95 TTFT", "p95_ttft_ms"),
    ("p50 TPOT", "p50_tpot_ms"),
    ("p95 TPOT", "p95_tpot_ms"),
    ("p50 completion", "p50_completion_ms"),
    ("p95 completion", "p95_completion_ms"),
    ("makespan", "makespan_ms"),
    ("output tokens / s", "output_tokens_per_second"),
    ("requests / s", "request_throughput_per_second"),
    ("goodput (fraction)", "goodput_request_fraction"),
    ("engine steps", "steps"),
    ("requests completed", "completed_requests"),
    ("output tokens", "completed_output_tokens"),
)
KV_ROWS = (
    ("reserved blocks", "reserved_blocks"),
    ("used blocks", "used_blocks"),
    ("free blocks", "free_blocks"),
    ("largest free span", "largest_free_span"),
    ("fragmentation blocks", "fragmentation_blocks"),
    ("evicted blocks", "evicted_blocks"),
    ("recomputed blocks", "recomputed_blocks"),
)
REQUEST_COLUMNS = ("request", "arrive", "admit", "first", "done", "queue", "ttft", "latency")
ENGINE_COLUMNS = ("request", "arrive", "admit", "first", "done", "ttft", "tpot", "latency")
BLOCK_ROWS = 20  # block tables shown per allocation without --events


def number(value: Any) -> str:
    """An integer with thousands separators; a rate with at most four decimals (3.0, 2.8636)."""
    if value is None:
        return "-"
    if isinstance(value, float):
        shown = f"{value:,.4f}".rstrip("0")
        return shown + "0" if shown.endswith(".") else shown
    return f"{value:,}" if isinstance(value, int) else str(value)


def side_by_side(labels: Sequence[str], columns: dict[str, list[str]], width: int) -> list[str]:
    """Rows of `labels` with one right-aligned column per name; one block a column when too wide."""
    label_width = max(len(label) for label in labels)
    widths = {name: max(len(name), *(len(v) for v in values)) for name, values in columns.items()}
    if label_width + sum(w + 2 for w in widths.values()) <= width:
        lines = [" " * label_width + "".join(f"  {name:>{widths[name]}}" for name in columns)]
        for n, label in enumerate(labels):
            lines.append(
                f"{label:<{label_width}}" + "".join(f"  {v[n]:>{widths[name]}}" for name, v in columns.items())
            )
        return lines
    lines = []
    for name, values in columns.items():
        lines.append(f"{name}:")
        lines += [f"  {label:<{label_width}}  {value}" for label, value in zip(labels, values)]
    return lines


def _heading(sim: Any, title: str, width: int) -> list[str]:
    workload = sim.workload()
    unit = "requests" if sim.kind == "batching" else "events"
    source = workload.get("source") or escape(workload["path"])
    line = f"{title} ({sim.evidence}): {source}, {workload['count']:,} {unit}"
    if workload.get("form") not in (None, "built-in"):
        line += f" ({workload['form']} form"
        line += f", {workload['tick_ms']:g} ms a tick)" if "tick_ms" in workload else ")"
    return wrapped(line, width, "  ")


def _tail(sim: Any, config: dict[str, Any], width: int) -> list[str]:
    shown = [
        f"{k} {number(v) if not isinstance(v, bool) else str(v).lower()}" for k, v in config.items() if k != "seed"
    ]
    packed = greedy(["config:", *[s + "," for s in shown[:-1]], shown[-1]], width - 2)
    lines = ["", packed[0], *["  " + line for line in packed[1:]], "rules:"]
    lines += ["  " + line for rule in sim.rules for line in wrapped(f"- {rule}", width - 2, "  ")]
    lines.append("leaves out:")
    lines += ["  " + line for item in sim.limitations for line in wrapped(f"- {item}", width - 2, "  ")]
    return lines


# --- batching ------------------------------------------------------------------------------------


def batching_text(sim: Any, width: int, events: bool) -> Iterator[str]:
    """Batching in ticks, or (with a model and a GPU) in engine steps and milliseconds."""
    if sim.engine is None:
        return _strategies_text(sim, width, events, [], (BATCHING_ROWS, REQUEST_COLUMNS, "ticks", _tick_row))
    return _strategies_text(
        sim, width, events, _engine_lines(sim, width), (ENGINE_ROWS, ENGINE_COLUMNS, "ms", _engine_row)
    )


def _strategies_text(sim: Any, width: int, events: bool, lead: list[str], kind: tuple[Any, ...]) -> Iterator[str]:
    """The strategies side by side under the heading and `lead`, with `--events` each request's row of
    `columns`, then the tail: `kind` is (rows, columns, unit, the function of one request's row)."""
    rows, columns, unit, row = kind
    runs = sim.runs
    lines = [*_heading(sim, "Batching simulation", width), *lead, f"(times in {unit})", ""]
    labels = [label for label, _ in rows]
    lines += side_by_side(
        labels, {name: [number(r.aggregate[key]) for _, key in rows] for name, r in runs.items()}, width
    )
    yield "\n".join(lines) + "\n"
    if events:
        for name, run in runs.items():
            cells = [row(run, i) for i in range(len(run.requests))]
            yield "\n".join(["", f"{name}: each request ({unit})", *_request_rows(columns, cells, width)]) + "\n"
    yield "\n".join(_tail(sim, next(iter(runs.values())).config, width)) + "\n"


def _engine_lines(sim: Any, width: int) -> list[str]:
    """The engine's line: the model and GPU, the step's budget, the roofs and the arrivals."""
    e, c = sim.engine, next(iter(sim.runs.values())).config
    return wrapped(
        f"engine steps of {e['model']} on {e['gpu']}: at most {c['max_num_batched_tokens']:,} tokens and "
        f"{c['max_num_seqs']:,} requests a step; roofs {_rate(e['peak_operations_per_second'], 'FLOP/s')} and "
        f"{_rate(e['bandwidth_bytes_per_second'], 'B/s')}; arrivals {e['arrivals']}",
        width,
        "  ",
    )


def _rate(value: float, unit: str) -> str:
    """A rate with its SI prefix: 989 TFLOP/s, 3.35 TB/s."""
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if value >= scale:
            return f"{value / scale:,.4g} {prefix}{unit}"
    return f"{value:,.4g} {unit}"


def _ms(value: float) -> str:
    return f"{value:,.3f}"


def _tick_row(run: Any, i: int) -> tuple[str, ...]:
    r = run.requests[i]
    return (
        escape(r.request_id),
        number(r.arrival_tick),
        number(run.admitted[i]),
        number(run.first[i]),
        number(run.done[i]),
        number(run.admitted[i] - r.arrival_tick),
        number(run.first[i] - r.arrival_tick),
        number(run.done[i] - r.arrival_tick),
    )


def _engine_row(run: Any, i: int) -> tuple[str, ...]:
    a, tpot = run.arrivals[i], run.tpot(i)
    return (
        escape(run.requests[i].request_id),
        _ms(a * 1e3),
        _ms(run.admitted[i] * 1e3),
        _ms(run.first[i] * 1e3),
        _ms(run.done[i] * 1e3),
        _ms((run.first[i] - a) * 1e3),
        "-" if tpot is None else _ms(tpot),
        _ms((run.done[i] - a) * 1e3),
    )


def _request_rows(columns: tuple[str, ...], rows: list[tuple[str, ...]], width: int) -> list[str]:
    widths = [max(len(h), *(len(row[k]) for row in rows)) for k, h in enumerate(columns)]
    if 2 + sum(widths) + 2 * (len(widths) - 1) <= width:
        out = ["  " + "  ".join(f"{h:<{widths[0]}}" if k == 0 else f"{h:>{widths[k]}}" for k, h in enumerate(columns))]
        for row in rows:
            out.append(
                "  " + "  ".join(f"{c:<{widths[0]}}" if k == 0 else f"{c:>{widths[k]}}" for k, c in enumerate(row))
            )
        return out
    out = []
    for row in rows:
        pairs = [f"{h} {c}," for h, c in zip(columns[1:], row[1:])]
        pairs[-1] = pairs[-1].rstrip(",")
        out += ["  " + line for line in greedy([f"{row[0]}:", *pairs], width - 2)]
    return out


# --- kv ------------------------------------------------------------------------------------------


def kv_text(sim: Any, width: int, events: bool) -> Iterator[str]:
    runs = sim.runs
    first = next(iter(runs.values()))
    c = first.config
    lines = [*_heading(sim, "KV allocation simulation", width)]
    lines.append(
        f"{c['total_blocks']:,} blocks of {c['block_size_tokens']:,} tokens, auto-evict {'on' if c['auto_evict'] else 'off'}"
    )
    lines.append("")
    labels = [label for label, _ in KV_ROWS] + ["evicted requests", "refused events"]
    columns = {}
    for name, run in runs.items():
        state = run.final_state
        evicted = ", ".join(escape(r) for r in state["evicted_request_ids"][:3]) or "-"
        if len(state["evicted_request_ids"]) > 3:
            evicted += f" +{len(state['evicted_request_ids']) - 3:,}"
        refused = sum(1 for e in run.event_log if e["status"] == "failed")
        columns[name] = [number(state[key]) for _, key in KV_ROWS] + [evicted, number(refused)]
    lines += side_by_side(labels, columns, width)
    yield "\n".join(lines) + "\n"
    for name, run in runs.items():
        yield (
            "\n".join(["", f"{name}: blocks held (logical 0, 1, ... -> physical)", *_block_rows(run, width, events)])
            + "\n"
        )
        refused = [e for e in run.event_log if e["status"] == "failed"]
        if events:
            yield "\n".join(["", f"{name}: events", *_event_rows(run.event_log, width)]) + "\n"
        elif refused:
            yield "\n".join(["", f"{name}: refused", *_event_rows(refused[:BLOCK_ROWS], width)]) + "\n"
            if len(refused) > BLOCK_ROWS:
                yield f"  ... {len(refused) - BLOCK_ROWS:,} more (--events, --json)\n"
    yield "\n".join(_tail(sim, {k: v for k, v in c.items() if k != "allocation_mode"}, width)) + "\n"


def _block_rows(run: Any, width: int, every: bool) -> list[str]:
    held = run.final_state["allocations"]
    if not held:
        return ["  (none)"]
    shown = held if every else held[:BLOCK_ROWS]
    name_width = max(len(escape(a["request_id"])) for a in shown)
    out = []
    for a in shown:
        blocks = [str(p["physical_block"]) for p in a["logical_to_physical"]]
        lead = f"  {escape(a['request_id']):<{name_width}}  "
        tail = f"({a['used_tokens']:,} of {a['reserved_tokens']:,} tokens)"
        body = greedy([*blocks, tail], max(width - len(lead), 10))
        out.append(lead + body[0])
        out += [" " * len(lead) + line for line in body[1:]]
    if len(held) > len(shown):
        out.append(f"  ... {len(held) - len(shown):,} more (--events, --json)")
    return out


def _event_rows(log: Sequence[dict[str, Any]], width: int) -> list[str]:
    if not log:
        return ["  (none)"]
    tick_width = max(len(f"{e['tick']:,}") for e in log)
    rid_width = min(max(len(escape(e["request_id"])) for e in log), 16)
    out = []
    for e in log:
        lead = f"  {e['tick']:>{tick_width},}  {e['action']:<7}  {escape(e['request_id']):<{rid_width}}  "
        said = e["detail"] if e["detail"].startswith(e["status"]) else f"{e['status']}: {e['detail']}"
        body = wrapped(escape(said), max(width - len(lead), 20))
        out.append(lead + body[0])
        out += [" " * len(lead) + line for line in body[1:]]
    return out


def text(sim: Any, width: int, events: bool) -> str:
    """The whole text (a terminal's table and the plain format alike)."""
    draw = batching_text if sim.kind == "batching" else kv_text
    return "".join(draw(sim, width, events))


def plain_text(result: Any, context: Any) -> Iterator[str]:
    """`formats.py` renderer of the simulation view for plain output: the same text, a piece at a time."""
    sim, events = result.data
    draw = batching_text if sim.kind == "batching" else kv_text
    yield from draw(sim, context.width, events)
