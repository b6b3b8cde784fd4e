"""The rules that point from numbers to a level, declared as data beside the levels.

A rule names the signals it reads, the level (or levels) it points to, a sentence saying why, its
weight (1.0 where the engine counts the mechanism itself, such as a preemption or a failed KV
transfer; 0.9 where a latency's shape implies it; 0.8 for a gauge read at one moment), and each
threshold with its rationale: an engine's documentation, a level's own symptom in the catalog
(`[layers]`), or "our judgement" where neither fixes a number. Its `test` (on_scrapes.py,
on_benchmarks.py; what a test returns is findings.py, how its sentences say numbers wording.py) reads a `View` (a scrape)
or a benchmark run and returns what it saw: a `Finding` (the numbers that fired it), `Missing` (the
signal it needs is absent) or None (it looked and nothing is wrong). A rule never fires on an absent
or zero signal, and no test divides by a number it has not checked.
"""

from __future__ import annotations

from invmap.measure import on_benchmarks as bench
from invmap.measure import on_scrapes as scrape
from invmap.measure.findings import JUDGEMENT, Finding, Missing, Rule, Threshold

__all__ = ["BY_ID", "RULES", "Finding", "Missing", "Rule", "Threshold"]

# --- the declaration ---------------------------------------------------------------------------

L3_PREEMPT = (
    "L3 symptom: 'requests are preempted or swapped out because the KV cache is full'; vLLM preempts and "
    "SGLang retracts a running request only when KV blocks run out"
)

# Said the same of a scrape's and a benchmark's numbers.
BANDWIDTH_WHY = (
    "Per-token decode time near the time to read the weights and KV once from memory means decode is "
    "memory-bandwidth bound (L1 symptom: 'decode steps are memory-bandwidth bound')."
)
BANDWIDTH_THRESHOLDS = (
    Threshold("bound", 1.2, JUDGEMENT + ": within 1.2x of the bandwidth bound"),
    Threshold("faster", 0.8, JUDGEMENT + ": well under the bound, the model or bandwidth given is not the one"),
)
SPEC_WHY = "Speculative decoding accepts too few draft tokens to pay for drafting and verifying them."
SPEC_RATE = Threshold(
    "rate",
    0.50,
    "symptom in the map: 'speculative decoding's acceptance rate is too low to pay for verification'; 0.5 is "
    + JUDGEMENT,
)

RULES: tuple[Rule, ...] = (
    Rule(
        "kv-full-preempting",
        ("L3",),
        "metrics",
        ("kv_usage", "preemptions"),
        "The KV cache is nearly full and the engine is evicting running requests to make room: capacity is lost "
        "to KV management.",
        (
            Threshold("kv_usage", 0.90, JUDGEMENT + ": at 0.90 a few long requests' blocks are all that is left"),
            Threshold("preemptions", 1, L3_PREEMPT),
        ),
        scrape.kv_full_preempting,
        weight=1.0,
    ),
    Rule(
        "preempting",
        ("L3",),
        "metrics",
        ("preemptions",),
        "Requests were evicted for lack of KV blocks although the usage gauge, read at the scrape, is lower.",
        (Threshold("preemptions", 1, L3_PREEMPT), Threshold("kv_usage", 0.90, "the rule above covers a full cache")),
        scrape.preempting,
        weight=0.8,
    ),
    Rule(
        "waiting-with-room",
        ("L2",),
        "metrics",
        ("waiting", "kv_usage"),
        "Requests queue while most of the KV cache is free: batch size is limited by the scheduler "
        "(max running requests, token budget), not by memory.",
        (
            Threshold("waiting", 1, "L2 symptom: 'queueing delay grows with load while the GPU has room'"),
            Threshold("kv_usage", 0.50, JUDGEMENT + ": with half the KV pool free, memory does not hold requests back"),
            Threshold("queue_s", 0.1, JUDGEMENT + ": a mean wait under 0.1 s is the next engine step, not a queue"),
        ),
        scrape.waiting_with_room,
        weight=0.8,
    ),
    Rule(
        "queue-in-ttft",
        ("L2",),
        "metrics",
        ("queue", "ttft"),
        "Most of the time to first token is spent waiting to be scheduled, not computing the prefill (with the KV "
        "cache full and requests preempted, the wait is for KV blocks: L3).",
        (
            Threshold(
                "share",
                0.50,
                JUDGEMENT + " ('the largest part'); vLLM's TTFT includes queueing (L2 metric: 'queue time')",
            ),
        ),
        scrape.queue_in_ttft,
    ),
    Rule(
        "itl-tail-with-prefill",
        ("L2",),
        "metrics",
        ("itl", "prompt_tokens"),
        "Token gaps have a long tail while prompts are being prefilled: decodes stall behind prefills in the same "
        "batches.",
        (
            Threshold(
                "ratio",
                5,
                "L2 symptom: 'inter-token latency spikes while other requests are in prefill'; 5x is " + JUDGEMENT,
            ),
            Threshold("observations", 100, JUDGEMENT + ": a p99 of fewer than 100 gaps is the maximum"),
        ),
        scrape.itl_tail_with_prefill,
    ),
    Rule(
        "prefill-slower-than-decode",
        ("L1",),
        "metrics",
        ("prefill_time", "decode_time", "prompt_len", "gen_len"),
        "A prompt's tokens are processed in one batched pass, so per token prefill should cost a fraction of a "
        "decode step; when it does not, the prefill (attention) kernels are suspect.",
        (
            Threshold(
                "ratio",
                1.0,
                "L1 symptom: 'attention kernel time grows steeply with sequence length'; 1x is " + JUDGEMENT,
            ),
            Threshold("tokens", 100, JUDGEMENT + ": fewer tokens make a per-token time noise"),
            Threshold("prompt", 128, JUDGEMENT + ": a prompt shorter than this (on average) is one forward step"),
        ),
        scrape.prefill_slower_than_decode,
    ),
    Rule(
        "decode-near-bandwidth",
        ("L1",),
        "metrics",
        ("tpot",),
        BANDWIDTH_WHY,
        BANDWIDTH_THRESHOLDS,
        scrape.decode_near_bandwidth,
    ),
    Rule(
        "multiplexed",
        ("L4",),
        "metrics",
        ("lora_info", "lora_pool_use", "waiting"),
        "Several adapters or models share one engine and queue separately: capacity is divided between them.",
        (Threshold("tenants", 2, "L4 symptom: 'a burst for one model starves the others sharing its GPU'"),),
        scrape.multiplexed,
        weight=0.8,
    ),
    Rule(
        "kv-transfer",
        ("L5",),
        "metrics",
        ("kv_transfer_failures", "kv_transfer_ms", "ttft"),
        "The KV hand-off between prefill and decode servers fails or takes a large part of the first token's time.",
        (
            Threshold("failures", 1, "L5 symptom: 'KV transfers fail or time out between instances'"),
            Threshold(
                "share",
                0.25,
                "L5 symptom: 'first-token delay includes a long network wait after prefill finishes'; 0.25 is "
                + JUDGEMENT,
            ),
        ),
        scrape.kv_transfer,
        weight=1.0,
    ),
    Rule(
        "rank-imbalance",
        ("L5",),
        "metrics",
        ("generation_tokens",),
        "Data-parallel ranks do very unequal work: placement or routing leaves some ranks idle.",
        (
            Threshold("ratio", 2.0, JUDGEMENT + ": one rank doing twice another's work"),
            Threshold("tokens", 1000, JUDGEMENT + ": enough tokens that the split is not chance"),
        ),
        scrape.rank_imbalance,
    ),
    Rule(
        "spec-acceptance",
        ("RL",),
        "metrics",
        ("spec_draft_tokens", "spec_accepted_tokens", "spec_accept_rate"),
        SPEC_WHY,
        (SPEC_RATE, Threshold("drafts", 100, JUDGEMENT + ": fewer draft tokens make a rate noise")),
        scrape.spec_acceptance,
        weight=1.0,
    ),
    Rule(
        "bench-ttft-spread",
        ("L2",),
        "bench",
        ("ttft_min", "ttft_median", "tpot_median", "tpot_p99"),
        "First tokens take many times the fastest one while per-token time stays flat: requests queue.",
        (
            Threshold("ratio", 5, "L2 symptom: 'bursts of arrivals make first tokens slow'; 5x is " + JUDGEMENT),
            Threshold("flat", 1.5, JUDGEMENT + ": TPOT p99 within 1.5x its median is flat"),
        ),
        bench.bench_ttft_spread,
    ),
    Rule(
        "bench-itl-tail",
        ("L2",),
        "bench",
        ("itl_median", "itl_p99"),
        "Per-token gaps have a long tail: decode steps stall behind prefills (prefill/decode interference).",
        (Threshold("ratio", 5, "L2 symptom: 'tail TTFT or TPOT far above the median'; 5x is " + JUDGEMENT),),
        bench.bench_itl_tail,
    ),
    Rule(
        "bench-single-stream",
        ("L1",),
        "bench",
        ("max_concurrency", "concurrency", "tpot_median", "tpot_p99"),
        "With one request at a time and no spread, per-token time is the kernels' own cost.",
        (
            Threshold("spread", 1.2, JUDGEMENT + ": p99 within 1.2x the median is no spread"),
            Threshold("one", 1.05, JUDGEMENT + ": a mean concurrency up to 1.05 is one request at a time"),
        ),
        bench.bench_single_stream,
    ),
    Rule(
        "bench-overload",
        ("L2", "L6"),
        "bench",
        ("completed", "failed", "request_rate"),
        "Many requests fail at an unbounded request rate: admission and scheduling (L2) and the controller that "
        "should shed or scale (L6) are overrun.",
        (Threshold("failed", 0.05, JUDGEMENT + ": 5% failed requests is not noise"),),
        bench.bench_overload,
    ),
    Rule(
        "bench-decode-near-bandwidth",
        ("L1",),
        "bench",
        ("tpot_median", "max_concurrency", "input_tokens", "output_tokens"),
        BANDWIDTH_WHY,
        BANDWIDTH_THRESHOLDS,
        bench.bench_decode_near_bandwidth,
    ),
    Rule(
        "bench-spec-acceptance",
        ("RL",),
        "bench",
        ("spec_acceptance",),
        SPEC_WHY,
        (SPEC_RATE,),
        bench.bench_spec_acceptance,
        weight=1.0,
    ),
)
BY_ID = {r.id: r for r in RULES}
