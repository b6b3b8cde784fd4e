"""The field guide's KV block allocator (`ie simulate kv`), rule for rule.

The model (santho090/inference-engineering, src/inference_engineering/kv_simulation.py): a pool of
`total_blocks` physical blocks of `block_size_tokens` tokens; a request reserves ceil(reserve_tokens
/ block size) blocks. `paged` takes the lowest-numbered free blocks wherever they are; `contiguous`
the first run of free blocks long enough, in block order. When too few blocks are free and
`auto_evict` is on, the least recently touched residents, by (last touch, id), are chosen as victims
until enough would be free; the choice is planned before anything changes, so an allocation that
still fails (no run long enough) evicts nothing. A touch of an evicted request allocates it again
and counts its blocks as recomputed. After every event the free blocks and the reserved ones add
up to the pool. Fragmentation is the free blocks outside the largest free run.

`simulate` is pure. Free blocks are a heap (paged) or a sorted list of free runs (contiguous), and
the victims a heap by (last touch, id), so an event costs the residents it touches, not the pool.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Sequence
from typing import Any

from invmap.errors import UsageError
from invmap.simulate.knobs import KV
from invmap.simulate.workload import KVEvent

FRAGMENTED = "free blocks are fragmented for contiguous allocation"


def check_config(values: dict[str, Any], allocation: str, auto_evict: bool) -> dict[str, Any]:
    """The allocator's configuration as `ie` prints it, each number within its bounds, else a
    UsageError naming the option (exit 2)."""
    config: dict[str, Any] = {"allocation_mode": allocation, "auto_evict": auto_evict}
    for knob in KV:
        value = values.get(knob.name)
        value = knob.default if value is None else value
        if not knob.low <= value <= knob.high:
            raise UsageError(f"{knob.flag} must be from {knob.low:,} to {knob.high:,}, not {value:,}")
        config[knob.name] = value
    return dict(sorted(config.items()))


class _Allocation:
    __slots__ = ("used_tokens", "reserved_tokens", "blocks", "last_touch", "stamp")

    def __init__(self, used: int, reserved: int, blocks: list[int], tick: int, stamp: int) -> None:
        self.used_tokens, self.reserved_tokens, self.blocks, self.last_touch, self.stamp = (
            used,
            reserved,
            blocks,
            tick,
            stamp,
        )


class _Runs:
    """Free blocks as maximal runs: their starts in order, and each run's length."""

    def __init__(self, total: int) -> None:
        self.starts = [0]
        self.length = {0: total}
        self.ending: dict[int, int] = {total: 0}  # a run's end -> its start

    def first_fit(self, need: int) -> int | None:
        return next((s for s in self.starts if self.length[s] >= need), None)

    def take(self, start: int, need: int) -> None:
        length = self.length.pop(start)
        del self.ending[start + length]
        self.starts.pop(bisect.bisect_left(self.starts, start))
        if length > need:
            self._add(start + need, length - need)

    def give(self, start: int, count: int) -> None:
        before = self.ending.pop(start, None)
        if before is not None:  # a run ends where this one starts: one run
            self.starts.pop(bisect.bisect_left(self.starts, before))
            count += start - before
            del self.length[before]
            start = before
        after = self.length.pop(start + count, None)
        if after is not None:
            self.starts.pop(bisect.bisect_left(self.starts, start + count))
            del self.ending[start + count + after]
            count += after
        self._add(start, count)

    def _add(self, start: int, length: int) -> None:
        bisect.insort(self.starts, start)
        self.length[start] = length
        self.ending[start + length] = start

    def with_ranges(self, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """The runs as they would be with `ranges` (start, count) freed too: sorted and merged."""
        spans = sorted([(s, self.length[s]) for s in self.starts] + ranges)
        merged: list[list[int]] = []
        for start, count in spans:
            if merged and merged[-1][0] + merged[-1][1] == start:
                merged[-1][1] += count
            else:
                merged.append([start, count])
        return [(s, c) for s, c in merged]


class KVRun:
    """One allocation mode's run: its configuration, the event log and the final state, in `ie`'s shape."""

    def __init__(self, config: dict[str, Any], event_log: list[dict[str, Any]], final_state: dict[str, Any]) -> None:
        self.config, self.event_log, self.final_state = config, event_log, final_state

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config, "event_log": self.event_log, "final_state": self.final_state}


class _Pool:
    def __init__(self, config: dict[str, Any]) -> None:
        self.total, self.size = config["total_blocks"], config["block_size_tokens"]
        self.paged, self.auto_evict = config["allocation_mode"] == "paged", config["auto_evict"]
        self.free = list(range(self.total))  # paged: a heap of free blocks (sorted is a heap)
        self.runs = _Runs(self.total)  # contiguous
        self.free_count = self.total
        self.resident: dict[str, _Allocation] = {}
        self.evicted: dict[str, _Allocation] = {}
        self.lru: list[tuple[int, str, int]] = []  # (last touch, id, stamp); stale entries are skipped
        self.stamp = 0
        self.evicted_blocks = self.recomputed_blocks = 0

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.size)

    # --- the blocks ----------------------------------------------------------------------------

    def _release(self, allocation: _Allocation) -> None:
        self.free_count += len(allocation.blocks)
        if self.paged:
            for block in allocation.blocks:
                heapq.heappush(self.free, block)
        elif allocation.blocks:
            self.runs.give(allocation.blocks[0], len(allocation.blocks))

    def _take(self, need: int, start: int | None) -> list[int]:
        self.free_count -= need
        if self.paged:
            return [heapq.heappop(self.free) for _ in range(need)]
        assert start is not None
        self.runs.take(start, need)
        return list(range(start, start + need))

    def _touched(self, rid: str, allocation: _Allocation, tick: int) -> None:
        self.stamp += 1
        allocation.last_touch, allocation.stamp = tick, self.stamp
        heapq.heappush(self.lru, (tick, rid, self.stamp))

    # --- eviction --------------------------------------------------------------------------------

    def _plan(self, need: int, exclude: str) -> tuple[list[str], list[tuple[int, str, int]]] | None:
        """The victims, least recently touched first, that would leave `need` blocks free; and the
        heap entries taken (put back if the plan is dropped). None when the residents are not enough."""
        victims: list[str] = []
        taken: list[tuple[int, str, int]] = []
        kept: list[tuple[int, str, int]] = []
        free = self.free_count
        while free < need:
            while self.lru:
                entry = heapq.heappop(self.lru)
                held = self.resident.get(entry[1])
                if held is not None and held.stamp == entry[2]:
                    break
            else:
                entry = None
            if entry is None:
                for e in taken + kept:
                    heapq.heappush(self.lru, e)
                return None
            if entry[1] == exclude:
                kept.append(entry)
                continue
            taken.append(entry)
            victims.append(entry[1])
            free += len(self.resident[entry[1]].blocks)
        for e in kept:
            heapq.heappush(self.lru, e)
        return victims, taken

    def _evict(self, rid: str) -> int:
        allocation = self.resident.pop(rid)
        self._release(allocation)
        self.evicted[rid] = allocation
        self.evicted_blocks += len(allocation.blocks)
        return len(allocation.blocks)

    # --- allocation ------------------------------------------------------------------------------

    def allocate(self, rid: str, used: int, reserved: int, tick: int, recomputation: bool) -> tuple[bool, str]:
        need = self.blocks_for(reserved)
        if need > self.total:
            return False, "reservation exceeds total block capacity"
        victims: list[str] = []
        taken: list[tuple[int, str, int]] = []
        if self.free_count < need:
            if not self.auto_evict:
                return False, "insufficient free blocks"
            plan = self._plan(need, rid)
            if plan is None:
                return False, "insufficient free blocks after eviction"
            victims, taken = plan
        start = None
        if not self.paged:
            if victims:
                freed = [(self.resident[v].blocks[0], len(self.resident[v].blocks)) for v in victims]
                start = next((s for s, c in self.runs.with_ranges(freed) if c >= need), None)
            else:
                start = self.runs.first_fit(need)
            if start is None:
                for e in taken:
                    heapq.heappush(self.lru, e)
                return False, FRAGMENTED
        for victim in victims:
            self._evict(victim)
        allocation = _Allocation(used, reserved, self._take(need, start), tick, 0)
        self.resident[rid] = allocation
        self._touched(rid, allocation, tick)
        if recomputation:
            self.recomputed_blocks += need
            return True, f"recomputed {need} blocks"
        return True, f"allocated {need} blocks"

    # --- the events ------------------------------------------------------------------------------

    def apply(self, event: KVEvent) -> tuple[str, str]:
        rid, action = event.request_id, event.action
        if action == "admit":
            if rid in self.resident or rid in self.evicted:
                return "failed", "request_id is already known"
            reserved = event.reserve_tokens if event.reserve_tokens is not None else event.tokens
            ok, detail = self.allocate(rid, event.tokens, reserved, event.tick, False)
            return ("allocated" if ok else "failed"), detail
        if action == "release":
            allocation = self.resident.pop(rid, None)
            if allocation is not None:
                self._release(allocation)
                return "released", f"released {len(allocation.blocks)} blocks"
            if self.evicted.pop(rid, None) is not None:
                return "discarded", "discarded evicted request metadata"
            return "ignored", "request_id is not allocated"
        if action == "evict":
            if rid not in self.resident:
                return "ignored", "request_id is not allocated"
            return "evicted", f"evicted {self._evict(rid)} blocks"
        allocation = self.resident.get(rid)
        if allocation is not None:
            self._touched(rid, allocation, event.tick)
            return "touched", "updated recency for resident allocation"
        gone = self.evicted.pop(rid, None)
        if gone is None:
            return "ignored", "request_id is not known"
        ok, detail = self.allocate(rid, gone.used_tokens, gone.reserved_tokens, event.tick, True)
        if not ok:
            self.evicted[rid] = gone
            return "failed", detail
        return "recomputed", detail

    def free_blocks(self) -> list[int]:
        if self.paged:
            return sorted(self.free)
        return [b for s in self.runs.starts for b in range(s, s + self.runs.length[s])]

    def snapshot(self) -> dict[str, Any]:
        free = self.free_blocks()
        largest = run = 0
        for n, block in enumerate(free):
            run = run + 1 if n and block == free[n - 1] + 1 else 1
            largest = max(largest, run)
        allocations = []
        for rid in sorted(self.resident):
            a = self.resident[rid]
            allocations.append(
                {
                    "logical_to_physical": [{"logical_block": k, "physical_block": b} for k, b in enumerate(a.blocks)],
                    "request_id": rid,
                    "reserved_blocks": len(a.blocks),
                    "reserved_tokens": a.reserved_tokens,
                    "used_blocks": self.blocks_for(a.used_tokens),
                    "used_tokens": a.used_tokens,
                }
            )
        return {
            "allocations": allocations,
            "evicted_blocks": self.evicted_blocks,
            "evicted_request_ids": sorted(self.evicted),
            "fragmentation_blocks": len(free) - largest,
            "free_blocks": len(free),
            "largest_free_span": largest,
            "recomputed_blocks": self.recomputed_blocks,
            "reserved_blocks": sum(len(a.blocks) for a in self.resident.values()),
            "total_blocks": self.total,
            "used_blocks": sum(self.blocks_for(a.used_tokens) for a in self.resident.values()),
        }


def simulate(config: dict[str, Any], events: Sequence[KVEvent], *, check: bool = False) -> KVRun:
    """The allocator under `config` (`check_config`'s) through `events` (checked, ticks in order).
    `check`: after every event, hold the pool to the field guide's invariants (tests do)."""
    pool = _Pool(config)
    log = []
    for event in events:
        status, detail = pool.apply(event)
        log.append(
            {
                "action": event.action,
                "detail": detail,
                "request_id": event.request_id,
                "status": status,
                "tick": event.tick,
            }
        )
        if check:
            invariants(pool)
    return KVRun(config, log, pool.snapshot())


def invariants(pool: _Pool) -> None:
    """The field guide's `assert_invariants`: no block held twice or both held and free, every block
    in the pool, free + reserved = total, no request both resident and evicted, used <= reserved."""
    held = [b for a in pool.resident.values() for b in a.blocks]
    free = pool.free_blocks()
    assert len(held) == len(set(held)), "a physical block is assigned to more than one request"
    assert all(0 <= b < pool.total for b in held + free), "a block outside the pool"
    assert not set(held) & set(free), "allocated and free block sets overlap"
    assert len(held) + len(free) == pool.total == len(held) + pool.free_count, "reserved plus free is not the total"
    assert not set(pool.resident) & set(pool.evicted), "a request is both resident and evicted"
    assert all(pool.blocks_for(a.used_tokens) <= len(a.blocks) for a in pool.resident.values()), "used > reserved"
