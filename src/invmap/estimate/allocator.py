"""PyTorch's CUDA caching allocator, as far as a sequence of allocations that are never freed needs it:
what `torch.cuda.memory_allocated()` counts after them (the blocks handed out) and what
`torch.cuda.memory_reserved()` holds (the segments asked of the driver). A model's weights are such a
sequence: the engine creates every parameter once and keeps it.

The rules are c10/cuda/CUDACachingAllocator.cpp's (read in stored copies of the file; the constants and
these rules are the same across the releases read): a request is rounded up to 512 bytes; one of 1 MiB
or less comes from the small pool, in 2 MiB segments; a larger one from the large pool, where a
request under 10 MiB gets a 20 MiB segment and a larger one a segment rounded up to 2 MiB. A request
first takes the smallest cached free block that fits (`get_free_block`). The block is split, and the
rest goes back to the pool as a free block, only when the rest is at least 512 bytes (small pool) or
more than 1 MiB (large pool, `should_split`); otherwise the whole block is handed out, and counted as
allocated. So a 259 MiB tensor takes a 260 MiB block, and a 31.5 MiB one a 32 MiB block, while a
24.5 MiB one takes 24.5 MiB and leaves 1.5 MiB free. Expandable segments (`PYTORCH_CUDA_ALLOC_CONF`)
and a `max_split_size` change these rules; vLLM sets neither by default.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass

MIB = 2**20
MIN_BLOCK = 512  # kMinBlockSize: every request is rounded up to a multiple of it
SMALL_SIZE = MIB  # kSmallSize: the largest request the small pool serves
SMALL_BUFFER = 2 * MIB  # kSmallBuffer: the small pool's segments
LARGE_BUFFER = 20 * MIB  # kLargeBuffer: the segment of a large request under MIN_LARGE_ALLOC
MIN_LARGE_ALLOC = 10 * MIB  # kMinLargeAlloc
ROUND_LARGE = 2 * MIB  # kRoundLarge: larger requests get a segment rounded up to it


@dataclass(frozen=True)
class Held:
    """What a sequence of allocations holds: the bytes asked for, the blocks handed out
    (`memory_allocated`) and the segments reserved from the driver (`memory_reserved`)."""

    requested: int
    allocated: int
    reserved: int


def _segment(size: int) -> int:
    """get_allocation_size: the segment a request that no cached block fits gets from the driver."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


def held(sizes: Iterable[int]) -> Held:
    """Allocate `sizes` (bytes) in order, never freeing, as the caching allocator does on one stream."""
    free: dict[bool, list[int]] = {True: [], False: []}  # the cached free blocks of each pool, sorted
    requested = allocated = reserved = 0
    for asked in sizes:
        requested += asked
        size = max(MIN_BLOCK, -(-asked // MIN_BLOCK) * MIN_BLOCK)
        small = size <= SMALL_SIZE
        pool = free[small]
        at = bisect.bisect_left(pool, size)
        if at < len(pool):
            block = pool.pop(at)
        else:
            block = _segment(size)
            reserved += block
        rest = block - size
        if rest >= MIN_BLOCK if small else rest > SMALL_SIZE:
            bisect.insort(pool, rest)
            allocated += size
        else:
            allocated += block
    return Held(requested, allocated, reserved)


__all__ = ["Held", "held"]
