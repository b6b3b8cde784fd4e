"""The rules' tests, a module a level (or family): each test reads a scrape's `View` (one scrape, or
the window between two) or one benchmark run and returns a `Finding`, `Missing` or None; data/rules.toml
names each test by its function. A rule carrying both a scrape test and a benchmark test keeps both in
its level's module. None fires on an absent or zero signal, or divides by a number it has not checked.

- kernels: L1 (prefill slower than decode, decode at the bandwidth bound, one request at a time)
- scheduling: L2 (queueing with room, queue time in TTFT, token-gap tails)
- cache: L3 (a full KV cache, preemptions)
- pooling: L4 (several models or adapters on one engine)
- cluster: L5 (KV transfers, data-parallel rank imbalance)
- control: L2 and L6 (requests aborted or failed under load)
- levers: RL (speculative acceptance)
"""
