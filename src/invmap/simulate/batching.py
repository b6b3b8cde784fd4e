"""The field guide's batching simulator (`ie simulate batching`), rule for rule, as an event loop.

The tick model (santho090/inference-engineering, src/inference_engineering/batching.py): a tick's
budget is `capacity_units_per_tick` plus `batch_bonus_units` for each active request beyond the first;
one unit is one prefill token or one decode token, handed out one at a time, round-robin over the
active requests of a phase ordered by (priority, admitted tick, id). A request's first token lands at
the tick after its first decode unit, its completion at the tick after its last.

- static: a batch is admitted only when none is running, once `max_active_requests` are ready or the
  oldest ready request has waited `static_max_wait_ticks`; a tick serves prefill while any request
  of the batch is in prefill, else decode.
- continuous: free places are filled every tick with ready requests by (priority, arrival, id); a
  tick serves prefill first, then decode with what is left.
- chunked: as continuous, but a tick first spends up to `decode_reserve_units` on decode, then gives
  prefill at most `prefill_chunk_tokens` per request, then the rest to decode.

`simulate` is pure (no I/O, no clock). Where the field guide's loop ticks through time in which
nothing can change, this one jumps: over idle ticks to the next arrival (or the static batch's
deadline), and over runs of ticks that would hand out exactly the same units (every request served
has at least twice the budget left, and no admission can happen), applying them at once. A round of
units is computed as a water level, not a unit at a time. `literal=True` runs the rules as written,
a tick and a unit at a time: the tests hold both to the same answers.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from math import ceil
from typing import Any

from invmap.errors import UsageError
from invmap.simulate.knobs import BATCHING, STRATEGIES
from invmap.simulate.workload import Request

PREFILL, DECODE, DONE = 0, 1, 2
NEVER = float("inf")


def check_config(values: dict[str, Any]) -> dict[str, int]:
    """Every knob of the batching model (the field guide's default where `values` has none or None),
    each within its bounds, else a UsageError naming the option (exit 2)."""
    config: dict[str, int] = {}
    for knob in BATCHING:
        value = values.get(knob.name)
        value = knob.default if value is None else value
        if not knob.low <= value <= knob.high:
            raise UsageError(f"{knob.flag} must be from {knob.low:,} to {knob.high:,}, not {value:,}")
        config[knob.name] = value
    if config["decode_reserve_units"] > config["capacity_units_per_tick"]:
        raise UsageError(
            f"--decode-reserve-units ({config['decode_reserve_units']:,}) cannot exceed --capacity-units-per-tick "
            f"({config['capacity_units_per_tick']:,})"
        )
    return config


def config_json(config: dict[str, int]) -> dict[str, int]:
    """The configuration as `ie` prints it: every field, `seed` (0: the model draws nothing at random)
    included, in key order."""
    return dict(sorted({**config, "seed": 0}.items()))


def shares(caps: Sequence[int], budget: int) -> list[int]:
    """Units each candidate gets when `budget` units are handed out one at a time, round-robin in
    order, a candidate taking at most its cap: full rounds up to the highest level the budget
    covers, then one more each, in order, for the candidates above it until the budget is spent."""
    count = len(caps)
    level, extra = divmod(budget, count)
    if min(caps) > level:  # no cap binds (the common case): `level` full rounds, then `extra` more
        return [level + 1] * extra + [level] * (count - extra)
    if sum(caps) <= budget:
        return list(caps)
    remaining, level = budget, 0
    for done, cap in enumerate(sorted(caps)):
        above = count - done
        if (cap - level) * above > remaining:
            level += remaining // above
            remaining %= above
            break
        remaining -= (cap - level) * above
        level = cap
    out = []
    for cap in caps:
        more = 1 if cap > level and remaining > 0 else 0
        remaining -= more
        out.append(min(cap, level) + more)
    return out


class BatchingRun:
    """One strategy's run: the configuration, each request's admitted, first-token and completion
    ticks (in the trace's order), the aggregate, and how the loop got there (`ticks` the ticks the
    trace spans, `steps` the ticks worked one at a time)."""

    def __init__(self, strategy: str, config: dict[str, int], requests: Sequence[Request]) -> None:
        self.strategy = strategy
        self.config = config
        self.requests = requests
        n = len(requests)
        self.admitted = [-1] * n
        self.first = [-1] * n
        self.done = [-1] * n
        self.aggregate: dict[str, float | int] = {}
        self.ticks = 0
        self.steps = 0

    def row(self, i: int) -> dict[str, Any]:
        """Request `i`'s result as `ie` prints it (`per_request[i]`)."""
        r = self.requests[i]
        return {
            "admitted_tick": self.admitted[i],
            "arrival_tick": r.arrival_tick,
            "completion_latency_ticks": self.done[i] - r.arrival_tick,
            "completion_tick": self.done[i],
            "input_tokens": r.input_tokens,
            "output_tokens": r.output_tokens,
            "queue_ticks": self.admitted[i] - r.arrival_tick,
            "request_id": r.request_id,
            "ttft_ticks": self.first[i] - r.arrival_tick,
        }

    def to_dict(self) -> dict[str, Any]:
        """The run as `ie simulate batching --json` prints one strategy's (`results[strategy]`)."""
        return {
            "aggregate": self.aggregate,
            "config": config_json(self.config),
            "per_request": [self.row(i) for i in range(len(self.requests))],
            "strategy": self.strategy,
        }


class _Loop:
    """The state of one run: every request's remaining units and phase, the arrivals not yet ready,
    the ready queue (a heap by priority, arrival, id), and the active requests in serving order."""

    def __init__(self, run: BatchingRun, literal: bool) -> None:
        self.run, self.literal = run, literal
        c = run.config
        self.cap, self.bonus, self.most = c["capacity_units_per_tick"], c["batch_bonus_units"], c["max_active_requests"]
        self.wait, self.chunk, self.reserve = (
            c["static_max_wait_ticks"],
            c["prefill_chunk_tokens"],
            c["decode_reserve_units"],
        )
        reqs = run.requests
        self.left = [[r.input_tokens for r in reqs], [r.output_tokens for r in reqs]]  # by phase
        self.phase = [PREFILL] * len(reqs)
        self.arrivals = sorted(range(len(reqs)), key=lambda i: (reqs[i].arrival_tick, reqs[i].request_id))
        self.due = [reqs[i].arrival_tick for i in self.arrivals] + [2**62]  # the next arrival's tick, then never
        self.next_arrival = 0
        self.static = run.strategy == "static"
        self.ready: list[tuple[int, int, str, int]] = []
        self.oldest: list[tuple[int, int]] = []  # static: ready requests by arrival (admitted ones skipped)
        self.active: list[int] = []
        self.completed = 0
        self.changed = False  # a request changed phase in the tick being worked
        self.max_ticks = c["max_ticks"]

    # --- admission ---------------------------------------------------------------------------

    def _arrive(self, tick: int) -> None:
        reqs, order = self.run.requests, self.arrivals
        while self.next_arrival < len(order) and reqs[order[self.next_arrival]].arrival_tick <= tick:
            i = order[self.next_arrival]
            r = reqs[i]
            heapq.heappush(self.ready, (r.priority, r.arrival_tick, r.request_id, i))
            if self.run.strategy == "static":
                heapq.heappush(self.oldest, (r.arrival_tick, i))
            self.next_arrival += 1

    def _admit(self, tick: int) -> None:
        static = self.run.strategy == "static"
        if static and self.active:
            return
        self._arrive(tick)
        room = self.most - len(self.active)
        if not self.ready or room <= 0:
            return
        if static:
            admitted = self.run.admitted
            while admitted[self.oldest[0][1]] >= 0:
                heapq.heappop(self.oldest)
            if len(self.ready) < self.most and tick - self.oldest[0][0] < self.wait:
                return
        reqs = self.run.requests
        for _ in range(min(room, len(self.ready))):
            i = heapq.heappop(self.ready)[3]
            self.run.admitted[i] = tick
            self.active.append(i)
        admitted = self.run.admitted
        self.active.sort(key=lambda i: (reqs[i].priority, admitted[i], reqs[i].request_id))

    def _idle_until(self, tick: int) -> int:
        """With nothing active after admission at `tick`: the next tick at which anything can change
        (an arrival, or the static batch's deadline)."""
        nxt = NEVER
        if self.next_arrival < len(self.arrivals):
            nxt = self.run.requests[self.arrivals[self.next_arrival]].arrival_tick
        if self.oldest and self.run.strategy == "static":
            admitted = self.run.admitted
            while self.oldest and admitted[self.oldest[0][1]] >= 0:
                heapq.heappop(self.oldest)
            if self.oldest:
                nxt = min(nxt, self.oldest[0][0] + self.wait)
        assert nxt > tick, (nxt, tick)  # a request is waiting for something later, or the run is over
        return int(nxt)

    # --- one tick ----------------------------------------------------------------------------

    def _serve(self, tick: int, phase: int, budget: int, given: list[int], limit: int | None = None) -> int:
        """Hand out up to `budget` units to the active requests in `phase`; returns the units spent."""
        if budget <= 0:
            return 0
        active, phases, left = self.active, self.phase, self.left[phase]
        where = [p for p, i in enumerate(active) if phases[i] == phase]
        if not where:
            return 0
        caps = [left[active[p]] for p in where]
        if limit is not None:
            caps = [c if c < limit else limit for c in caps]
        if self.literal:
            grants = _one_at_a_time(caps, budget, limit)
        else:
            level, extra = divmod(budget, len(caps))
            if min(caps) > level:  # no cap binds: `level` full rounds, then one more for the first `extra`
                grants = [level + 1] * extra + [level] * (len(caps) - extra) if extra else [level] * len(caps)
            else:
                grants = shares(caps, budget)
        run, spent = self.run, 0
        for p, units in zip(where, grants):
            if not units:
                continue
            i = active[p]
            spent += units
            given[p] += units
            rest = left[i] - units
            left[i] = rest
            if phase == DECODE and run.first[i] < 0:
                run.first[i] = tick + 1
            if rest == 0:
                self.changed = True
                phases[i] = DECODE if phase == PREFILL else DONE
                if phase == DECODE:
                    run.done[i] = tick + 1
                    self.completed += 1
        return spent

    def _tick(self, tick: int, budget: int) -> list[int]:
        """One tick of the strategy's phases; the units each active request got."""
        given = [0] * len(self.active)
        strategy = self.run.strategy
        if strategy == "static":
            phase = PREFILL if any(self.phase[i] == PREFILL for i in self.active) else DECODE
            self._serve(tick, phase, budget, given)
        elif strategy == "continuous":
            spent = self._serve(tick, PREFILL, budget, given)
            self._serve(tick, DECODE, budget - spent, given)
        else:
            spent = self._serve(tick, DECODE, min(self.reserve, budget), given)
            spent += self._serve(tick, PREFILL, budget - spent, given, self.chunk)
            self._serve(tick, DECODE, budget - spent, given)
        return given

    def _repeats(self, tick: int, budget: int, given: list[int]) -> int:
        """How many ticks after `tick` would hand out exactly `given` again: none if a request changed
        phase; else while every request served keeps at least twice the budget left (so no cap binds
        and nothing finishes) and no admission can happen (continuous with a free place: before the
        next arrival), and before --max-ticks."""
        active, phases = self.active, self.phase
        most = self.max_ticks - 1 - tick
        if self.run.strategy != "static" and len(active) < self.most and self.next_arrival < len(self.arrivals):
            most = min(most, self.run.requests[self.arrivals[self.next_arrival]].arrival_tick - tick - 1)
        floor = 2 * budget
        left = self.left
        for i, units in zip(active, given):
            if units:
                rest = left[phases[i]][i]
                if rest < floor:
                    return 0
                most = min(most, (rest - floor) // units + 1)
        return max(most, 0)

    def run_all(self) -> None:
        run, total = self.run, len(self.run.requests)
        max_ticks = self.max_ticks
        tick = 0
        while self.completed < total:
            if tick >= max_ticks:
                raise UsageError(
                    f"the simulation did not finish within --max-ticks {max_ticks:,} "
                    f"({total - self.completed:,} of {total:,} request{'s' if total != 1 else ''} unfinished under {run.strategy}); raise it "
                    f"(at most {BATCHING[-1].high:,})"
                )
            if (
                (not self.active)
                if self.static
                else len(self.active) < self.most and (self.ready or self.due[self.next_arrival] <= tick)
            ):
                self._admit(
                    tick
                )  # (else nothing could be admitted: a batch runs, every place is taken, or none is ready)
            active = self.active
            if not active:
                tick = tick + 1 if self.literal else self._idle_until(tick)
                continue
            budget = self.cap + (len(active) - 1) * self.bonus
            self.changed = False
            given = self._tick(tick, budget)
            run.steps += 1
            if self.changed:
                self.active = [i for i in active if self.phase[i] != DONE]
            elif not self.literal and (times := self._repeats(tick, budget, given)):
                for i, units in zip(active, given):
                    if units:
                        self.left[self.phase[i]][i] -= units * times
                tick += times
            tick += 1
        run.ticks = tick


def _one_at_a_time(left: list[int], budget: int, limit: int | None) -> list[int]:
    """The field guide's hand-out as written: a unit at a time, round-robin, skipping a candidate that
    has finished its phase or (chunked prefill) taken `limit` units this tick."""
    given = [0] * len(left)
    spent = 0
    while spent < budget:
        progress = False
        for p in range(len(left)):
            if spent >= budget or given[p] >= left[p] or (limit is not None and given[p] >= limit):
                continue
            given[p] += 1
            spent += 1
            progress = True
        if not progress:
            break
    return given


def _percentile(values: list[int], fraction: float) -> int:
    """Nearest rank, as the field guide computes it."""
    ordered = sorted(values)
    return ordered[max(0, ceil(fraction * len(ordered)) - 1)]


def _aggregate(run: BatchingRun) -> dict[str, float | int]:
    reqs, config = run.requests, run.config
    ttfts = [run.first[i] - r.arrival_tick for i, r in enumerate(reqs)]
    latencies = [run.done[i] - r.arrival_tick for i, r in enumerate(reqs)]
    tokens = sum(r.output_tokens for r in reqs)
    duration = max(max(run.done) - min(r.arrival_tick for r in reqs), 1)
    good = sum(
        1
        for ttft, latency in zip(ttfts, latencies)
        if ttft <= config["ttft_objective_ticks"] and latency <= config["completion_objective_ticks"]
    )
    return {
        "completed_output_tokens": tokens,
        "completed_requests": len(reqs),
        "goodput_request_fraction": good / len(reqs),
        "goodput_requests_per_tick": good / duration,
        "makespan_ticks": duration,
        "output_tokens_per_tick": tokens / duration,
        "p50_completion_ticks": _percentile(latencies, 0.5),
        "p50_ttft_ticks": _percentile(ttfts, 0.5),
        "p95_completion_ticks": _percentile(latencies, 0.95),
        "p95_ttft_ticks": _percentile(ttfts, 0.95),
        "request_throughput_per_tick": len(reqs) / duration,
    }


def simulate(
    config: dict[str, int], requests: Sequence[Request], strategy: str, *, literal: bool = False
) -> BatchingRun:
    """One strategy on `requests` (checked: at least one, distinct ids) under `config` (`check_config`'s)."""
    assert strategy in STRATEGIES, strategy
    assert requests, "at least one request is required"
    run = BatchingRun(strategy, config, requests)
    _Loop(run, literal).run_all()
    run.aggregate = _aggregate(run)
    return run
