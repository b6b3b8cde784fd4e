"""Experiment records: record new, record check, records (declared in `options.py`)."""

from __future__ import annotations

import typer

from invmap import query
from invmap import records as experiment
from invmap.cli.build import Args, implements
from invmap.cli.shared import emit, index, notice, output, say, write
from invmap.errors import UsageError
from invmap.render import Result
from invmap.safe import escape


@implements("record")
def record(ctx: typer.Context, args: Args) -> None:  # pragma: no cover - a group: its subcommands run
    pass


@implements("record new")
def record_new(ctx: typer.Context, args: Args) -> None:
    """A draft record citing one source and carrying its open question; fill it in, then 'record check'.
    The folder of FILE is created if it does not exist."""
    import datetime as dt

    from invmap.render.machine import to_json

    if args.result_type not in experiment.RESULT_TYPES:
        raise UsageError(f"unknown result type '{args.result_type}' (valid: {', '.join(experiment.RESULT_TYPES)})")
    source = query.resolve(index(ctx), args.name)
    rid = args.record_id if args.record_id is not None else f"{source['id']}-{dt.date.today().isoformat()}"
    if not rid.strip():
        raise UsageError("--id needs a value")
    text = to_json(experiment.draft(source, args.result_type, rid))
    target = args.output_path
    if target is None or target == "-":
        write(text)
        return
    experiment.write_file(target, text, rid, force=args.force)
    shown = escape(target)
    write(f"Wrote {shown}: a draft for {source['id']}; fill it in, then 'invmap record check {shown}'\n")


@implements("record check")
def record_check(ctx: typer.Context, args: Args) -> None:
    """Validate experiment records; every problem with its JSON path (exit 0 when all valid, 3 when not).
    For a person, each problem on stderr and `PATH: ok` on stdout for each valid record."""
    out = output(ctx, args)
    results = []
    for path in args.files:
        _, problems = experiment.check_file(path)
        results.append({"path": path, "valid": not problems, "problems": problems})
    if not out.machine:
        for r in results:
            for problem in r["problems"]:
                say(f"{r['path']}: {problem}")
    ok = "".join(f"{escape(r['path'])}: ok\n" for r in results if r["valid"])
    emit(out, Result(results, ["path", "valid", "problems"], data=results, draw=lambda w, c: ok))
    if any(not r["valid"] for r in results):
        raise typer.Exit(3)


@implements("records")
def records_cmd(ctx: typer.Context, args: Args) -> None:
    """List experiment records: id, title, result type, whether valid, and the sources each addresses."""
    out = output(ctx, args)
    where = experiment.records_folder(args.folder, default=experiment.DEFAULT_FOLDER)
    found, skipped = experiment.scan(index(ctx), where) if where is not None else ([], [])
    for path, why in skipped:
        say(f"note: skipped {path}: {why}")
    if not found:
        notice(f"no records in {where or experiment.DEFAULT_FOLDER}")
    # The file tells apart two drafts sharing an id; an invalid record says why (its first problem).
    fields = ["path", "record_id", "title", "result_type", "valid", "problem", "addresses"]
    if out.machine:
        fields = ["path", "record_id", "title", "result_type", "valid", "problems", "addresses", "sources"]
    emit(out, Result(found, fields))
