"""A simulation's JSON, byte for byte what `json.dumps(sim.to_json(), indent=2, ensure_ascii=False)`
writes (and so what `ie simulate ... --json` prints for the built-in traces), but a piece at a time
and fast: the per-request rows and the event log, which grow with the trace, are written from a
template (the C encoder for each string) instead of the pure-Python indenting encoder, which takes
~10 us a value. tests/test_simulate.py holds the two to the same bytes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from invmap.safe import json_safe

_encode = json.encoder.encode_basestring  # type: ignore[attr-defined]  (the C encoder of one string)

REQUEST = (
    '{{\n{p}  "admitted_tick": {},\n{p}  "arrival_tick": {},\n{p}  "completion_latency_ticks": {},\n'
    '{p}  "completion_tick": {},\n{p}  "input_tokens": {},\n{p}  "output_tokens": {},\n{p}  "queue_ticks": {},\n'
    '{p}  "request_id": {},\n{p}  "ttft_ticks": {}\n{p}}}'
)
ENGINE_REQUEST = (  # floats by their repr, as json.dumps writes a finite one (engine.MAX_SECONDS keeps them finite)
    '{{\n{p}  "admitted_ms": {!r},\n{p}  "arrival_ms": {!r},\n{p}  "completion_latency_ms": {!r},\n'
    '{p}  "completion_ms": {!r},\n{p}  "first_token_ms": {!r},\n{p}  "input_tokens": {},\n{p}  "output_tokens": {},\n'
    '{p}  "queue_ms": {!r},\n{p}  "request_id": {},\n{p}  "tpot_ms": {},\n{p}  "ttft_ms": {!r}\n{p}}}'
)
EVENT = '{{\n{p}  "action": {},\n{p}  "detail": {},\n{p}  "request_id": {},\n{p}  "status": {},\n{p}  "tick": {}\n{p}}}'
BATCH = 2_000  # rows written at a time


def _dumps(value: Any, indent: int) -> str:
    """`value` as `json.dumps(indent=2)` writes it nested `indent` spaces deep (never NaN or Infinity)."""
    return json_safe(json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False)).replace(
        "\n", "\n" + " " * indent
    )


def _string(text: str) -> str:
    return json_safe(_encode(text))


def _rows(texts: Iterator[str], indent: int) -> Iterator[str]:
    """The items of an array nested `indent` spaces deep: `[`, the items, `]`; `[]` when none."""
    pad = " " * indent
    batch: list[str] = []
    first = True
    for item in texts:
        batch.append(item)
        if len(batch) >= BATCH:
            yield ("[\n" if first else ",\n") + ",\n".join(pad + "  " + t for t in batch)
            first, batch = False, []
    if first and not batch:
        yield "[]"
        return
    if batch:
        yield ("[\n" if first else ",\n") + ",\n".join(pad + "  " + t for t in batch)
    yield "\n" + pad + "]"


def _requests(run: Any, pad: str) -> Iterator[str]:
    admitted, first, done = run.admitted, run.first, run.done
    for i, r in enumerate(run.requests):
        a = r.arrival_tick
        yield REQUEST.format(
            admitted[i], a, done[i] - a, done[i], r.input_tokens, r.output_tokens, admitted[i] - a,
            _string(r.request_id), first[i] - a, p=pad,
        )  # fmt: skip


def _engine_requests(run: Any, pad: str) -> Iterator[str]:
    """`run.row(i)` for each request, computed as it does, without the dictionaries."""
    for i, r in enumerate(run.requests):
        a, admitted, first, done = run.arrivals[i], run.admitted[i], run.first[i], run.done[i]
        tpot = run.tpot(i)
        yield ENGINE_REQUEST.format(
            admitted * 1e3,
            a * 1e3,
            (done - a) * 1e3,
            done * 1e3,
            first * 1e3,
            r.input_tokens,
            r.output_tokens,
            (admitted - a) * 1e3,
            _string(r.request_id),
            "null" if tpot is None else repr(tpot),
            (first - a) * 1e3,
            p=pad,
        )


def _events(log: list[dict[str, Any]], pad: str) -> Iterator[str]:
    for e in log:
        yield EVENT.format(
            _string(e["action"]), _string(e["detail"]), _string(e["request_id"]), _string(e["status"]), e["tick"], p=pad
        )


def _seeded(config: dict[str, Any]) -> dict[str, Any]:
    """A tick run's config as `ie` writes it: sorted, with its seed (always 0)."""
    return dict(sorted({**config, "seed": 0}.items()))


def _run(sim: Any, run: Any, indent: int) -> Iterator[str]:
    """One run's object nested `indent` spaces deep."""
    pad = " " * indent
    inner = indent + 2
    if sim.kind == "batching":  # in ticks the config carries `ie`'s seed; in engine steps it has none
        config, requests = (
            (run.config, _engine_requests) if sim.engine is not None else (_seeded(run.config), _requests)
        )
        yield f'{{\n{pad}  "aggregate": {_dumps(run.aggregate, inner)},\n'
        yield f'{pad}  "config": {_dumps(config, inner)},\n'
        yield f'{pad}  "per_request": '
        yield from _rows(requests(run, pad + "    "), inner)
        yield f',\n{pad}  "strategy": {_string(run.strategy)}\n{pad}}}'
        return
    yield f'{{\n{pad}  "config": {_dumps(run.config, inner)},\n{pad}  "event_log": '
    yield from _rows(_events(run.event_log, pad + "    "), inner)
    yield f',\n{pad}  "final_state": {_dumps(run.final_state, inner)}\n{pad}}}'


def json_pieces(sim: Any) -> Iterator[str]:
    """The JSON text of `sim.to_json()`, a piece at a time, ending with a newline."""
    yield f'{{\n  "evidence": {_string(sim.evidence)},\n'
    if sim.kind == "kv" and len(sim.runs) == 1:
        yield '  "result": '
        yield from _run(sim, next(iter(sim.runs.values())), 2)
    else:
        yield '  "results": {'
        for n, name in enumerate(sorted(sim.runs)):
            yield f"{',' if n else ''}\n    {_string(name)}: "
            yield from _run(sim, sim.runs[name], 4)
        yield "\n  }"
    if sim.engine is not None:
        yield f',\n  "engine": {_dumps(sim.engine, 2)}'
    if sim.trace is not None:
        yield f',\n  "trace": {_dumps(sim.workload(), 2)}'
    yield "\n}\n"


def json_text(result: Any, context: Any) -> Iterator[str]:
    """`formats.py` renderer of the simulation view for JSON."""
    yield from json_pieces(result.data[0])
