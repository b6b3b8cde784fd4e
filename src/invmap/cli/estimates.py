"""Estimates: estimate kv, estimate memory, estimate roofline, models, gpus (declared in `options.py`).

Each command reads its options, resolves `--model` and `--gpu`, and hands the numbers to the core
(`invmap.estimate`); the result goes out through `emit` like every other command's, so `--json` and
`--format` work the same. `--record SOURCE -o FILE` also writes the estimate as an experiment record
that addresses SOURCE's open question.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from invmap.cli.build import Args, implements
from invmap.cli.shared import emit, index, output, say
from invmap.errors import UsageError
from invmap.render import Result


@implements("estimate")
def estimate_group(ctx: typer.Context, args: Args) -> None:  # pragma: no cover - a group: its subcommands run
    pass


def scenario_of(args: Args, kind: str) -> Any:
    """The estimate's scenario from the command's values: every declared input given (plain data)."""
    from invmap import estimate as core
    from invmap.quantities import flags_of

    flags = {name: getattr(args, name) for name in flags_of(kind) if getattr(args, name, None) is not None}
    return core.Scenario(kind, model=args.model, gpu=getattr(args, "gpu", None), flags=flags)


def _run(ctx: typer.Context, args: Args, kind: str) -> None:
    # The core is imported here: --help and completion never need it.
    from invmap import estimate as core

    out = output(ctx, args)
    if args.record is None and (args.output_path is not None or args.force):
        raise UsageError("-o/--output and --force go with --record SOURCE (the record's file)")
    if args.record is not None and args.output_path is None:
        raise UsageError("--record SOURCE needs -o FILE: where to write the record")
    outcome = core.run(scenario_of(args, kind))
    if outcome.refusal is not None:
        raise outcome.refusal.raised()
    result = outcome.estimate.as_json()
    if args.record is not None:
        _write_record(ctx, args, result)
    from invmap.render.estimate import text as estimate_text
    from invmap.render.estimate import wrapped_text
    from invmap.safe import data_text  # a config's folder name may hold anything: shown, never interpreted

    # On a terminal, lines wrapped to its width at spaces (never inside a word); a pipe's whole.
    emit(
        out,
        Result([], [], data=result, draw=lambda width, color: wrapped_text(data_text(estimate_text(result)), width)),
    )


def _write_record(ctx: typer.Context, args: Args, result: dict[str, Any]) -> None:
    """The estimate as an experiment record addressing the source's question, checked, then written."""
    import datetime as dt

    from invmap import __version__, query
    from invmap import estimate as core
    from invmap import records as experiment
    from invmap.render.machine import to_json
    from invmap.safe import escape

    source = query.resolve(index(ctx), args.record)
    record_id = f"{source['id']}-{result['estimate']}-estimate-{dt.date.today().isoformat()}"
    record = core.record(result, source, record_id, __version__)
    problems = experiment.problems_of(record)
    assert not problems, problems  # the estimate's record is valid by construction (tests check it)
    target = args.output_path
    experiment.write_file(target, to_json(record), record_id, force=args.force)
    shown = escape(target)
    say(f"Wrote {shown}: an estimated record addressing {source['id']}; 'invmap record check {shown}' checks it")


@implements("estimate kv")
def estimate_kv(ctx: typer.Context, args: Args) -> None:
    """KV-cache bytes per token, per sequence and in total: layers x kv_heads x head_dim x 2 x bytes
    (latent attention: layers x (kv_lora_rank + qk_rope_head_dim) x bytes). Options win over --model's
    config; without either, the field guide's made-up model."""
    _run(ctx, args, "kv")


@implements("estimate memory")
def estimate_memory(ctx: typer.Context, args: Args) -> None:
    """Weights and the activation working set; with --gpu or --memory, what is left for the KV pool at
    --gpu-memory-utilization, the pool in tokens and the maximum concurrency (as vLLM logs them)."""
    _run(ctx, args, "memory")


@implements("estimate roofline")
def estimate_roofline(ctx: typer.Context, args: Args) -> None:
    """Arithmetic intensity, ridge point, the lower roof and the upper bound, from --operations and
    --bytes-moved or from a model's prefill or decode step."""
    _run(ctx, args, "roofline")


@implements("estimate fit")
def estimate_fit(ctx: typer.Context, args: Args) -> None:
    """The engine's start-up at tensor-parallel sizes 1, 2, 4 and 8 (a size whose query heads do not
    divide is refused with the engine's reason), and the smallest that holds --concurrency requests of
    --max-model-len tokens: one table, --json as data."""
    from invmap import estimate as core
    from invmap.quantities import flags_of
    from invmap.render import sweep
    from invmap.render.lines import wrapped
    from invmap.safe import data_text

    out = output(ctx, args)
    flags = {name: getattr(args, name) for name in flags_of("fit")}
    found = core.fit(args.model, args.gpu, flags)
    table = sweep.result(found.outcomes)

    def draw(width: int, color: bool) -> str:
        return data_text("\n".join(wrapped(found.sentence, width)) + "\n\n" + sweep.text(found.outcomes, width))

    emit(out, Result(table.rows, table.fields, data=found.as_json(), draw=draw, single=True))


@implements("models")
def models_cmd(ctx: typer.Context, args: Args) -> None:
    """The shipped models, each with its KV layout and the config.json it was read from."""
    from invmap import estimate as core

    def shown(r: dict[str, Any]) -> dict[str, Any]:
        cache_shape = (
            f"{r['num_hidden_layers']} x ({r['kv_lora_rank']} + {r['qk_rope_head_dim']})"
            if r["attention"] == "latent"
            else f"{r['num_hidden_layers']} x {r['kv_heads']} x {r['head_dim']} x 2"
        )
        per_token = f"{r['kv_bytes_per_token']:,} ({core.human_bytes(r['kv_bytes_per_token'])})"
        return {
            "name": r["name"],
            "attention": r["attention"],
            "cache_shape": cache_shape,
            "bytes_per_token": per_token,
            "dtype": r["dtype"],
        }

    _shipped_table(ctx, args, core.model_rows, shown)


@implements("gpus")
def gpus_cmd(ctx: typer.Context, args: Args) -> None:
    """The shipped GPUs: memory, bandwidth, dense peaks and links, each figure with where it was read
    (empty, null in JSON, where no source invmap accepts gives it); with NAME, one GPU's figures."""
    from invmap import estimate as core

    if args.gpu is not None:
        _one_gpu(ctx, args, core.find_gpu(args.gpu, positional=True))
        return
    out = output(ctx, args)
    if out.fmt in ("json", "jsonl"):
        rows = core.gpu_rows()
    elif out.machine:  # csv, tsv: a column each for a figure's value, unit, source and note
        rows = core.gpu_flat_rows()
    else:
        from invmap.estimate.gpus import BY_KEY

        def one_unit(g: Any, key: str) -> str:  # a column in one unit: 1.555 TB/s beside 3.35 TB/s
            return g.reading(key).shown_in_first_unit(BY_KEY[key])

        rows = [
            {
                "name": g.name,
                "memory": g.reading("memory").shown(),
                "type": g.reading("memory_type").shown(),
                "bandwidth": one_unit(g, "bandwidth"),
                "bf16_dense": one_unit(g, "bf16_dense"),
                "fp8_dense": one_unit(g, "fp8_dense"),
            }
            for g in core.gpus()
        ]
    emit(out, Result(rows, list(rows[0])))


def _one_gpu(ctx: typer.Context, args: Args, gpu: Any) -> None:
    """`invmap gpus NAME`: a row a figure (value, source, note); JSON is the GPU's object."""
    from invmap.estimate.gpus import FIGURES

    out = output(ctx, args)
    rows = [
        {"figure": f.key, "value": r.shown(), "source": r.source or "", "note": r.note or ""}
        for f in FIGURES
        for r in (gpu.reading(f.key),)
    ]
    emit(out, Result(rows, list(rows[0]), data=gpu.summary() if out.fmt == "json" else None))


def _shipped_table(
    ctx: typer.Context,
    args: Args,
    rows_of: Callable[[], list[dict[str, Any]]],
    shown: Callable[[dict[str, Any]], dict[str, Any]],
) -> None:
    """One of the shipped tables: every column in a machine format; for a person, as `shown` puts a row."""
    out = output(ctx, args)
    rows = rows_of()
    if not out.machine:
        rows = [shown(r) for r in rows]
    emit(out, Result(rows, list(rows[0])))
