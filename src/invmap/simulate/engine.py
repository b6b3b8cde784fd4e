"""The batching strategies in milliseconds (`simulate batching --model M --gpu G`): a tick becomes a
step of an engine, whose budget is the engine's (`max_num_batched_tokens` tokens, `max_num_seqs`
requests running) and whose duration is what its work costs at the roofs: max(operations / peak,
bytes / bandwidth), the bound `estimate roofline` computes, summed from the same pieces
(`estimate.phase.StepCosts`: each prefill chunk's and each decode's operations, the weights read once
a step plus the KV each request in the step reads or writes).

The strategies keep the tick model's rules (static batches, continuous admission with prefill
first, chunked prefill with decode first), with what makes the step an engine's: a request decodes
one token a step; the step that finishes a prompt emits its first token (sampled from the prompt's
last position), so a request of N output tokens decodes N - 1 times after it. In chunked prefill the
decode reserve defaults to every running request and the chunk to the whole budget (vLLM's chunked
prefill); in the other two, a request's prefill takes what the round-robin gives it, at most the
budget. The clock is in seconds: arrivals keep a trace's times (a trace in ticks is read at
`tick_ms` a tick), an idle engine jumps to the next arrival.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from math import ceil
from typing import Any

from invmap.errors import UsageError
from invmap.simulate.batching import shares
from invmap.simulate.knobs import BATCHING, BY_NAME
from invmap.simulate.workload import Request

# The tick model's knobs an engine's budget replaces, and by what.
REPLACED = {
    "capacity_units_per_tick": "--max-num-batched-tokens",
    "batch_bonus_units": "--max-num-batched-tokens",
    "max_active_requests": "--max-num-seqs",
}
KEPT = tuple(k for k in BATCHING if k.name not in REPLACED)
MAX_SECONDS = 1e12  # the simulated clock's bound (31,700 years): every figure stays a finite number


def check_config(values: dict[str, Any], budget: int, seqs: int, tick_ms: float) -> dict[str, Any]:
    """The engine mode's configuration: the engine's budget, the tick model's knobs it keeps (each
    within its bounds; the chunk defaults to the budget and the decode reserve to every running
    request), and the milliseconds a tick of the trace's clock stands for."""
    for name, instead in REPLACED.items():
        if values.get(name) is not None:
            raise UsageError(
                f"{BY_NAME[name].flag} is the tick model's; with --model and --gpu a step's budget is the engine's: "
                f"use {instead}"
            )
    defaults = {"prefill_chunk_tokens": budget, "decode_reserve_units": seqs}
    config: dict[str, Any] = {"max_num_batched_tokens": budget, "max_num_seqs": seqs}
    for knob in KEPT:
        value = values.get(knob.name)
        value = defaults.get(knob.name, knob.default) if value is None else value
        if not knob.low <= value <= knob.high:
            raise UsageError(f"{knob.flag} must be from {knob.low:,} to {knob.high:,}, not {value:,}")
        config[knob.name] = value
    config["tick_ms"] = tick_ms
    return dict(sorted(config.items()))


class EngineRun:
    """One strategy's run in engine steps: each request's admitted, first-token and completion times
    (seconds, in the trace's order), the aggregate (milliseconds, tokens per second), the steps."""

    def __init__(self, strategy: str, config: dict[str, Any], requests: Sequence[Request], arrivals: list[float]):
        self.strategy, self.config, self.requests, self.arrivals = strategy, config, requests, arrivals
        n = len(requests)
        self.admitted = [-1.0] * n
        self.first = [-1.0] * n
        self.done = [-1.0] * n
        self.aggregate: dict[str, Any] = {}
        self.steps = 0
        self.worked = 0  # steps worked one at a time (the rest as runs of decodes)

    def tpot(self, i: int) -> float | None:
        """Time per output token after the first (ms), as `vllm bench serve` counts it; None for one token."""
        out = self.requests[i].output_tokens
        return None if out < 2 else (self.done[i] - self.first[i]) * 1e3 / (out - 1)

    def row(self, i: int) -> dict[str, Any]:
        r, a = self.requests[i], self.arrivals[i]
        return {
            "admitted_ms": self.admitted[i] * 1e3,
            "arrival_ms": a * 1e3,
            "completion_latency_ms": (self.done[i] - a) * 1e3,
            "completion_ms": self.done[i] * 1e3,
            "first_token_ms": self.first[i] * 1e3,
            "input_tokens": r.input_tokens,
            "output_tokens": r.output_tokens,
            "queue_ms": (self.admitted[i] - a) * 1e3,
            "request_id": r.request_id,
            "tpot_ms": self.tpot(i),
            "ttft_ms": (self.first[i] - a) * 1e3,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "aggregate": self.aggregate,
            "config": self.config,
            "per_request": [self.row(i) for i in range(len(self.requests))],
            "strategy": self.strategy,
        }


def _percentile(values: list[float], fraction: float) -> float | None:
    """Nearest rank, as the tick model's (None when there is nothing to rank)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, ceil(fraction * len(ordered)) - 1)]


def _aggregate(run: EngineRun) -> dict[str, Any]:
    reqs, c = run.requests, run.config
    ttft = [(run.first[i] - run.arrivals[i]) * 1e3 for i in range(len(reqs))]
    latency = [(run.done[i] - run.arrivals[i]) * 1e3 for i in range(len(reqs))]
    tpot = [t for t in (run.tpot(i) for i in range(len(reqs))) if t is not None]
    tokens = sum(r.output_tokens for r in reqs)
    makespan = (max(run.done) - min(run.arrivals)) * 1e3
    ttft_ok, done_ok = c["ttft_objective_ticks"] * c["tick_ms"], c["completion_objective_ticks"] * c["tick_ms"]
    good = sum(1 for t, d in zip(ttft, latency) if t <= ttft_ok and d <= done_ok)
    out: dict[str, Any] = {
        "completed_output_tokens": tokens,
        "completed_requests": len(reqs),
        "goodput_request_fraction": good / len(reqs),
        "makespan_ms": makespan,
        "output_tokens_per_second": tokens / makespan * 1e3 if makespan > 0 else None,
        "request_throughput_per_second": len(reqs) / makespan * 1e3 if makespan > 0 else None,
        "steps": run.steps,
    }
    for name, values in (("ttft", ttft), ("tpot", tpot), ("completion", latency)):
        out[f"mean_{name}_ms"] = sum(values) / len(values) if values else None
        for p in (50, 95, 99):
            out[f"p{p}_{name}_ms"] = _percentile(values, p / 100)
    return dict(sorted(out.items()))


class _Engine:
    """The state of one run: each request's prompt tokens left and decodes left, the arrivals not yet
    ready, the ready queue (a heap by priority, arrival, id) and the running requests in serving order."""

    def __init__(self, run: EngineRun, roofs: Any, literal: bool = False) -> None:
        self.run, self.roofs = run, roofs
        self.runs_of_decodes = not literal and not roofs.costs.sized  # full attention: a decode run is sums
        c = run.config
        self.budget, self.most = c["max_num_batched_tokens"], c["max_num_seqs"]
        self.chunk, self.reserve = c["prefill_chunk_tokens"], c["decode_reserve_units"]
        self.wait = c["static_max_wait_ticks"] * c["tick_ms"] / 1e3
        reqs = run.requests
        self.prompt_left = [r.input_tokens for r in reqs]
        self.decodes_left = [r.output_tokens - 1 for r in reqs]
        # a decode's context: the prompt and the tokens decoded before it, input + output - 1 - decodes left
        self.context_base = [r.input_tokens + r.output_tokens - 1 for r in reqs]
        self.order = sorted(range(len(reqs)), key=lambda i: (run.arrivals[i], reqs[i].request_id))
        self.next_arrival = 0
        self.due = [run.arrivals[i] for i in self.order] + [float("inf")]  # the next arrival's time, then never
        self.ready: list[tuple[int, float, str, int]] = []
        self.oldest: list[tuple[float, int]] = []
        self.active: list[int] = []
        self.completed = 0

    def _arrive(self, now: float) -> None:
        reqs, arrivals, order = self.run.requests, self.run.arrivals, self.order
        while self.next_arrival < len(order) and arrivals[order[self.next_arrival]] <= now:
            i = order[self.next_arrival]
            heapq.heappush(self.ready, (reqs[i].priority, arrivals[i], reqs[i].request_id, i))
            if self.run.strategy == "static":
                heapq.heappush(self.oldest, (arrivals[i], i))
            self.next_arrival += 1

    def _admit(self, now: float) -> None:
        static = self.run.strategy == "static"
        if static and self.active:
            return
        self._arrive(now)
        room = self.most - len(self.active)
        if not self.ready or room <= 0:
            return
        admitted = self.run.admitted
        if static:
            while admitted[self.oldest[0][1]] >= 0:
                heapq.heappop(self.oldest)
            if len(self.ready) < self.most and now < self.oldest[0][0] + self.wait:  # as _next_event's deadline
                return
        for _ in range(min(room, len(self.ready))):
            i = heapq.heappop(self.ready)[3]
            admitted[i] = now
            self.active.append(i)
        reqs = self.run.requests
        self.active.sort(key=lambda i: (reqs[i].priority, admitted[i], reqs[i].request_id))

    def _next_event(self, now: float) -> float:
        """With nothing running: when anything can change (an arrival, or the static batch's deadline)."""
        times = []
        if self.next_arrival < len(self.order):
            times.append(self.run.arrivals[self.order[self.next_arrival]])
        if self.run.strategy == "static" and self.ready:
            admitted = self.run.admitted
            while admitted[self.oldest[0][1]] >= 0:
                heapq.heappop(self.oldest)
            times.append(self.oldest[0][0] + self.wait)
        later = min(times)
        assert later > now, (later, now)
        return later

    def _plan(self) -> tuple[list[int], list[int], list[int]]:
        """The step's work: the requests in prefill, the tokens each gets, the requests decoding."""
        prefilling = [i for i in self.active if self.prompt_left[i]]
        decoding = [i for i in self.active if not self.prompt_left[i]]
        caps = [min(self.prompt_left[i], self.chunk) for i in prefilling]
        budget, strategy = self.budget, self.run.strategy
        if strategy == "static":
            if prefilling:
                return prefilling, shares(caps, budget), []
            return [], [], decoding[:budget]
        if strategy == "continuous":
            grants = shares(caps, budget) if prefilling else []
            return prefilling, grants, decoding[: budget - sum(grants)]
        first = decoding[: min(self.reserve, budget)]
        rest = budget - len(first)
        grants = shares(caps, rest) if prefilling and rest > 0 else [0] * len(prefilling)
        more = rest - sum(grants)
        return prefilling, grants, first + decoding[len(first) : len(first) + more]

    def _step(self, now: float) -> float:
        """One engine step from `now`; returns when it ends."""
        prefilling, grants, decoding = self._plan()
        costs, reqs, run = self.roofs.costs, self.run.requests, self.run
        prompt_left, decodes_left = self.prompt_left, self.decodes_left
        ops = kv = 0
        for i, tokens in zip(prefilling, grants):
            if tokens:
                start = reqs[i].input_tokens - prompt_left[i]
                ops += costs.prefill_operations(start, tokens)
                kv += costs.kv_bytes(start + tokens)
        if decoding:
            fixed = self.context_base
            ops_decode, kv_decode = costs.decodes([fixed[i] - decodes_left[i] for i in decoding])
            ops, kv = ops + ops_decode, kv + kv_decode
        end = now + self.roofs.seconds(ops, costs.weights + kv)
        if end > MAX_SECONDS:
            raise UsageError(
                f"the simulated clock passed {MAX_SECONDS:.0e} s (a step takes {end - now:.3g} s at these roofs): "
                "raise --efficiency, --peak or --bandwidth"
            )
        finished = False
        for i, tokens in zip(prefilling, grants):
            prompt_left[i] -= tokens
            if tokens and not prompt_left[i]:
                run.first[i] = end
                if not decodes_left[i]:
                    run.done[i], finished = end, True
        for i in decoding:
            decodes_left[i] -= 1
            if not decodes_left[i]:
                run.done[i], finished = end, True
        if finished:
            before = len(self.active)
            self.active = [i for i in self.active if run.done[i] < 0]
            self.completed += before - len(self.active)
        return end

    def _decode_run(self, now: float, most_steps: int) -> float | None:
        """Steps in which every running request decodes one token and nothing else can change (no prompt
        left, none finishes, no admission: the static batch runs, every place is taken, or no arrival is
        due), worked as sums, each step's contexts one longer than the last's: the same operations and
        bytes `_step` adds up, so the same times. When the run ends; None when there is no such step."""
        active, left = self.active, self.decodes_left
        if len(active) > self.budget or any(self.prompt_left[i] for i in active):
            return None
        steps = min(min(left[i] for i in active) - 1, most_steps - self.run.steps)
        if steps < 2:
            return None
        room = self.run.strategy != "static" and len(active) < self.most
        due = self.due[self.next_arrival] if room else float("inf")
        costs, seconds, count = self.roofs.costs, self.roofs.seconds, len(active)
        weights, base = costs.weights, self.context_base
        total = sum(base[i] - left[i] for i in active)
        done = 0
        while done < steps and now < due:  # an arrival due at a step's start is admitted by the loop
            ops, kv = costs.decode_sums(total, count)
            end = now + seconds(ops, weights + kv)
            if end > MAX_SECONDS:
                break  # `_step` says so
            now, total, done = end, total + count, done + 1
        if not done:
            return None
        for i in active:
            left[i] -= done
        self.run.steps += done
        return now

    def run_all(self) -> None:
        run, total, most_steps = self.run, len(self.run.requests), self.run.config["max_ticks"]
        now = 0.0
        static = run.strategy == "static"
        while self.completed < total:
            if (
                (not self.active)
                if static
                else len(self.active) < self.most and (self.ready or self.due[self.next_arrival] <= now)
            ):
                self._admit(now)  # (else nothing could be admitted: a batch runs, every place is taken, none is ready)
            if not self.active:
                now = self._next_event(now)
                continue
            if run.steps >= most_steps:
                raise UsageError(
                    f"the simulation did not finish within --max-ticks {most_steps:,} engine steps "
                    f"({total - self.completed:,} of {total:,} request{'s' if total != 1 else ''} unfinished under {run.strategy}); raise it "
                    f"(at most {BATCHING[-1].high:,})"
                )
            if self.runs_of_decodes and (end := self._decode_run(now, most_steps)) is not None:
                now = end
                continue
            now = self._step(now)
            run.steps += 1
            run.worked += 1


def simulate(
    config: dict[str, Any],
    requests: Sequence[Request],
    arrivals: list[float],
    strategy: str,
    roofs: Any,
    *,
    literal: bool = False,
) -> EngineRun:
    """One strategy on `requests` arriving at `arrivals` (seconds), in steps of an engine whose costs and
    roofs are `roofs` (`estimate.roofline_estimate.EngineRoofs`); `literal=True` works every step one at
    a time (the tests hold both to the same answers)."""
    assert requests and len(arrivals) == len(requests)
    run = EngineRun(strategy, config, requests, arrivals)
    _Engine(run, roofs, literal).run_all()
    run.aggregate = _aggregate(run)
    return run
