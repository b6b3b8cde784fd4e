"""Simulations: simulate batching, simulate kv (declared in `options.py`).

Each command reads its options, hands them to the core (`invmap.simulate.runs`), and sends the
simulation out through `emit` like every other command's result: the runs side by side at a
terminal and in a pipe, `ie`'s JSON with `--json`. `--record SOURCE -o FILE` also writes it as an
experiment record (simulated) addressing SOURCE's open question.
"""

from __future__ import annotations

from typing import Any

import typer

from invmap.cli.build import Args, implements
from invmap.cli.shared import emit, index, output, say
from invmap.errors import UsageError
from invmap.render import Result


@implements("simulate")
def simulate_group(ctx: typer.Context, args: Args) -> None:  # pragma: no cover - a group: its subcommands run
    pass


def _checked(args: Args) -> None:
    if args.record is None and (args.output_path is not None or args.force):
        raise UsageError("-o/--output and --force go with --record SOURCE (the record's file)")
    if args.record is not None and args.output_path is None:
        raise UsageError("--record SOURCE needs -o FILE: where to write the record")


def _emit(ctx: typer.Context, args: Args, out: Any, sim: Any) -> None:
    if args.record is not None:
        _write_record(ctx, args, sim)
    from invmap.render.simulate import text
    from invmap.safe import data_text

    events = bool(args.events)
    emit(out, Result([], [], data=(sim, events), draw=lambda width, color: data_text(text(sim, width, events))))


def _write_record(ctx: typer.Context, args: Args, sim: Any) -> None:
    """The simulation as an experiment record addressing the source's question, checked, then written."""
    import datetime as dt

    from invmap import __version__, query
    from invmap import records as experiment
    from invmap.render.machine import to_json
    from invmap.safe import escape
    from invmap.simulate.experiment import record

    source = query.resolve(index(ctx), args.record)
    record_id = f"{source['id']}-{sim.kind}-simulation-{dt.date.today().isoformat()}"
    document = record(sim, source, record_id, __version__)
    problems = experiment.problems_of(document)
    assert not problems, problems  # the simulation's record is valid by construction (tests check it)
    target = args.output_path
    experiment.write_file(target, to_json(document), record_id, force=args.force)
    shown = escape(target)
    say(f"Wrote {shown}: a simulated record addressing {source['id']}; 'invmap record check {shown}' checks it")


@implements("simulate batching")
def simulate_batching(ctx: typer.Context, args: Args) -> None:
    """The field guide's tick model of static, continuous and chunked batching, on its built-in trace
    (r1..r8) or --trace FILE; each option is its BatchingConfig field, with its default."""
    from invmap.simulate import runs
    from invmap.simulate.knobs import BATCHING

    out = output(ctx, args)
    _checked(args)
    values = {k.name: getattr(args, k.name) for k in BATCHING}
    engine = {name: getattr(args, name) for name in ("model", "gpu", *runs.ENGINE_ONLY)}
    sim = runs.run_batching(values, args.strategy, args.trace, args.tick_ms, engine)
    _emit(ctx, args, out, sim)


@implements("simulate kv")
def simulate_kv(ctx: typer.Context, args: Args) -> None:
    """The field guide's KV block allocator, paged and contiguous, on its built-in trace (alpha..zeta)
    or --trace FILE (its KV events form)."""
    from invmap.simulate import runs
    from invmap.simulate.knobs import KV

    out = output(ctx, args)
    _checked(args)
    values = {k.name: getattr(args, k.name) for k in KV}
    sim = runs.run_kv(values, args.allocation, not args.no_auto_evict, args.trace)
    _emit(ctx, args, out, sim)
