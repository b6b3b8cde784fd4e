"""The one declaration of every number a simulation takes: its name (the field guide's `BatchingConfig`
and `KVSimulationConfig` field names, which are also the options: `max_active_requests` is
`--max-active-requests`), the field guide's default, the bounds past which a value is a typo rather
than a configuration (exit 2 naming the option), and what it means.

options.py makes the command-line options from these; batching.py and kv.py check a configuration
against them. No typing: a TAB press reads this module.
"""

from __future__ import annotations

from collections import namedtuple

BILLION = 10**9


class Knob(namedtuple("Knob", ("name", "default", "low", "high", "help"))):
    """One number: `name`, the field guide's `default`, the inclusive bounds `low`..`high`, and its meaning."""

    __slots__ = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


BATCHING: tuple[Knob, ...] = (
    Knob("max_active_requests", 4, 1, 100_000, "Requests admitted at once"),
    Knob("capacity_units_per_tick", 4, 1, BILLION, "Work units in a tick with one active request"),
    Knob("batch_bonus_units", 1, 0, BILLION, "Units a tick gains for each active request beyond the first"),
    Knob(
        "static_max_wait_ticks",
        2,
        0,
        BILLION,
        "static: admit a short batch once its oldest request has waited this many ticks",
    ),
    Knob("prefill_chunk_tokens", 4, 1, BILLION, "chunked: prefill tokens a request gets in one tick"),
    Knob("decode_reserve_units", 2, 0, BILLION, "chunked: units kept for decode before any prefill"),
    Knob("ttft_objective_ticks", 18, 1, BILLION, "Goodput: the first token within this many ticks of arrival"),
    Knob("completion_objective_ticks", 36, 1, BILLION, "Goodput: completion within this many ticks of arrival"),
    Knob("max_ticks", 10_000, 1, BILLION, "Stop with an error when the trace is not done by this tick"),
)

KV: tuple[Knob, ...] = (
    Knob("total_blocks", 10, 1, 1_000_000, "Physical KV blocks in the pool"),
    Knob("block_size_tokens", 4, 1, 1_000_000, "Tokens one block holds"),
)

# A trace whose arrivals are times (Vidur's seconds, LLMServingSim's nanoseconds) is read at this many
# milliseconds a tick: invmap's assumption (the field guide's ticks have no duration).
TICK_MS = Knob("tick_ms", 10, 0.001, 3_600_000, "A trace in seconds or nanoseconds: milliseconds one tick stands for")

BY_NAME: dict[str, Knob] = {k.name: k for k in (*BATCHING, *KV, TICK_MS)}

STRATEGIES: tuple[str, ...] = ("static", "continuous", "chunked")
ALLOCATIONS: tuple[str, ...] = ("paged", "contiguous")
