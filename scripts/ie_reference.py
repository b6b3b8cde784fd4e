"""Write the reference answers invmap's simulators are tested against, computed by the field guide's
own `ie` (santho090/inference-engineering): random batching traces and configurations, and random KV
event traces, each with what `ie`'s `simulate_batching` and `simulate_kv` return for them.

    python3.12 scripts/ie_reference.py PATH/TO/inference-engineering/src

`ie` needs Python 3.12 (it is read from the given folder, never installed or copied); the output,
tests/fixtures/traces/ie-random-batching.json and ie-random-kv.json, is data. The seeds are fixed,
so a run at the same commit writes the same files (c2e857d7fb40c3e62ef791af3af130ad3af2933f).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "traces"


def batching_cases(count: int, seed: int) -> list[dict]:
    from inference_engineering.batching import BatchingConfig, BatchingStrategy, simulate_batching
    from inference_engineering.workloads import Request

    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        long = rng.random() < 0.3  # long prompts and outputs: runs of identical ticks
        size = 300 if long else 20
        requests = [
            Request(
                f"q{rng.randint(0, 999)}-{k}",
                rng.randint(0, 60 if rng.random() < 0.7 else 400),  # idle gaps too
                rng.randint(1, size),
                rng.randint(1, size),
                priority=rng.randint(-1, 2),
            )
            for k in range(rng.randint(1, 24))
        ]
        capacity = rng.randint(1, 12)
        config = {
            "max_active_requests": rng.randint(1, 8),
            "capacity_units_per_tick": capacity,
            "batch_bonus_units": rng.randint(0, 3),
            "static_max_wait_ticks": rng.randint(0, 5),
            "prefill_chunk_tokens": rng.randint(1, 10),
            "decode_reserve_units": rng.randint(0, capacity),
            "ttft_objective_ticks": rng.randint(1, 60),
            "completion_objective_ticks": rng.randint(1, 200),
            "max_ticks": rng.choice([100_000, 100_000, 100_000, rng.randint(1, 300)]),
        }
        results = {}
        for strategy in BatchingStrategy:
            try:
                results[strategy.value] = simulate_batching(requests, strategy, BatchingConfig(**config)).to_dict()
            except RuntimeError as exc:  # simulation exceeded max_ticks
                results[strategy.value] = {"error": str(exc)}
        cases.append({"requests": [r.to_dict() for r in requests], "config": config, "results": results})
    return cases


def kv_cases(count: int, seed: int) -> list[dict]:
    from inference_engineering.kv_simulation import AllocationMode, KVEvent, KVSimulationConfig, simulate_kv

    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        config = {
            "total_blocks": rng.randint(1, 24),
            "block_size_tokens": rng.choice((1, 2, 4, 8)),
            "auto_evict": bool(rng.getrandbits(1)),
        }
        events, tick = [], 0
        for _ in range(rng.randint(1, 50)):
            tick += rng.choice((0, 1, 1, 2))
            rid = f"r{rng.randint(0, 12)}"
            action = rng.choice(("admit", "admit", "release", "evict", "touch", "touch"))
            if action == "admit":
                tokens = rng.randint(1, 40)
                events.append(KVEvent(tick, action, rid, tokens, rng.choice([None, tokens + rng.randint(0, 20)])))
            else:
                events.append(KVEvent(tick, action, rid))
        results = {
            mode.value: simulate_kv(events, KVSimulationConfig(allocation_mode=mode, **config)).to_dict()
            for mode in AllocationMode
        }
        cases.append({"events": [e.to_dict() for e in events], "config": config, "results": results})
    return cases


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    for name, cases in (("batching", batching_cases(40, 43)), ("kv", kv_cases(60, 43))):
        path = OUT / f"ie-random-{name}.json"
        path.write_text(json.dumps(cases, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"{path}: {len(cases)} cases")


if __name__ == "__main__":
    main()
