"""Simulations that recreate a mechanism the map's sources describe: the field guide's (`ie simulate
batching`, `ie simulate kv`) tick model of batching strategies and its KV block allocator, number for
number, on its built-in traces or on the user's own.

knobs.py declares every option with its default and bounds; workload.py the request and KV-event
records, their checks and the built-in traces; traces.py reads a trace file in the four forms;
batching.py and kv.py are the pure simulations (no I/O, no clock); experiment.py writes a result as an
experiment record. Submodules are imported by their own names: this face re-exports nothing.
"""
