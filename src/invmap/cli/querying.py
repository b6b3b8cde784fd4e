"""Query commands: triage, list, show, questions, search, define, fields (declared in `options.py`)."""

from __future__ import annotations

from typing import Any

import typer

from invmap import query
from invmap.cli.build import Args, implements
from invmap.cli.shared import emit, empty_notice, filters, index, notice, output, say, stdout_is_terminal, write
from invmap.errors import NotFoundError
from invmap.fields import SEARCH_RESULT_FIELDS, SOURCE_FIELDS
from invmap.render import Result


@implements("list")
def list_(ctx: typer.Context, args: Args) -> None:
    out = output(ctx, args)
    chosen = filters(ctx, args)
    fields = out.pick(("id", "name", "year", "layer", "mechanism"), SOURCE_FIELDS)
    columns = [*fields, "url"] if out.links and "url" not in fields else fields  # a table links each name
    records = query.lazy_selection(index(ctx), chosen, columns, args.sort, args.reverse, args.limit)
    if not records:
        empty_notice(out, chosen)
    emit(out, Result(records, fields), show_all=args.show_all)


@implements("show")
def show(ctx: typer.Context, args: Args) -> None:
    """Every name is resolved first; any miss fails the whole command."""
    out = output(ctx, args)
    idx = index(ctx)
    records = query.resolve_all(idx, args.names)
    fields = out.fields or [*SOURCE_FIELDS, "reports"]
    if "reports" in fields:
        addressed = query.reports_by_source(idx)
        records = [{**r, "reports": addressed.get(r["id"], [])} for r in records]
    shown = [query.reports_in_brief(r) if "reports" in fields and not out.machine else r for r in records]
    if len(records) == 1:
        result = Result(shown, fields, single=True, draw=_record_drawing(shown[0], fields, out.links))
    else:
        result = Result(shown, fields, blocks=True, draw=_records_drawing(shown, fields, out.links))
    emit(out, result)


def _record_drawing(record: dict[str, Any], fields: list[str], links: bool = False) -> Any:
    from invmap.render.blocks import record_view

    return lambda width, color: record_view(record, fields, width, color, links)


def _records_drawing(records: list[dict[str, Any]], fields: list[str], links: bool = False) -> Any:
    from invmap.render.blocks import records_view

    return lambda width, color: records_view(records, fields, width, color, links)


@implements("questions")
def questions(ctx: typer.Context, args: Args) -> None:
    import os

    out = output(ctx, args)
    chosen = filters(ctx, args)
    idx = index(ctx)
    folder = None
    if args.records_dir or args.open_only or os.environ.get("INVMAP_RECORDS"):  # records (and pydantic) only then
        from invmap import records as experiment

        folder = experiment.records_folder(
            args.records_dir, default=experiment.DEFAULT_FOLDER if args.open_only else None
        )
    human = ["id", "name", "layer", "question"]
    machine = ["id", "name", "layer", "layers", "question"]
    if folder is not None or args.open_only:
        valid, invalid, estimated = (
            experiment.addressing(idx, folder) if folder is not None else ({}, {}, {})  # type: ignore[possibly-undefined]
        )
        records: Any = list(query.lazy_selection(idx, chosen, SOURCE_FIELDS, args.sort, args.reverse))
        for r in records:
            r["records"] = valid.get(r["id"], [])
            r["invalid_records"] = invalid.get(r["id"], [])
            r["estimated_records"] = estimated.get(r["id"], [])
        if args.open_only:  # an estimate is not a measurement: the question stays open
            records = [r for r in records if not set(r["records"]) - set(r["estimated_records"])]
        if folder is not None:
            human.append("records")
            machine += ["records", "invalid_records", "estimated_records"]
            for r in records:  # the table and plain lines mark the estimates and the invalid ones
                r["records"] = (
                    [f"{rid} (estimate)" if rid in r["estimated_records"] else rid for rid in r["records"]]
                    + [f"{rid} (invalid)" for rid in r["invalid_records"]]
                    if not out.machine
                    else r["records"]
                )
        records = records[: args.limit]
    else:
        records = query.lazy_selection(idx, chosen, SOURCE_FIELDS, args.sort, args.reverse, args.limit)
    if not records:
        empty_notice(out, chosen, prefix="no open questions match" if args.open_only else "no sources match")
    emit(out, Result(records, out.pick(human, machine)), show_all=args.show_all)


@implements("search")
def search(ctx: typer.Context, args: Args) -> None:
    from invmap.errors import UsageError

    if not 0 <= args.min_score <= 100:
        raise UsageError(f"--min-score must be between 0 and 100, not {args.min_score:g}")
    out = output(ctx, args)
    searched = query.search_fields(args.within)
    chosen = filters(ctx, args)
    hits, parsed = query.search(index(ctx), chosen, args.text, searched, args.limit, args.min_score, args.exact)
    fixes = [(old, new) for old, new in parsed.corrections() if not old.startswith('"')]
    for phrase in parsed.unquoted:  # said wherever stdout goes: the words were searched, not the phrase
        say(f'no source holds the phrase "{phrase.strip()}"; searched for its words')
    if fixes and stdout_is_terminal() and not out.machine:
        notice("searched for " + ", ".join(f"'{new}' (for '{old}')" for old, new in fixes))
    if not hits:
        words = " ".join(args.text)
        hint = (
            f"search looked at {', '.join(searched)}; try --in all"
            if searched
            else "try fewer words, or 'invmap define'"
        )
        empty_notice(out, None, hint=hint, prefix=f"nothing matches '{words}'")
    emit(out, Result(hits, out.pick(["score", "id", "name", "layer", "why"], SEARCH_RESULT_FIELDS[:-1])))


@implements("define")
def define(ctx: typer.Context, args: Args) -> None:
    from invmap import glossary

    out = output(ctx, args)
    entries = index(ctx).glossary()
    chosen = glossary.lookup(entries, args.terms) if args.terms else entries
    if not entries and not out.machine:
        notice("this catalog has no [glossary]")
    fields = ["term", "expansion", "definition"] if not out.machine else ["term", "expansion", "aliases", "definition"]
    emit(out, Result(chosen, fields))


@implements("reports")
def reports_cmd(ctx: typer.Context, args: Args) -> None:
    from invmap import query as selection

    out = output(ctx, args)
    chosen = selection.reports(index(ctx), args.level, args.engine, args.source)
    if not chosen and not out.machine and stdout_is_terminal():
        notice("no report matches")
    fields = list(selection.REPORT_KEYS if out.machine else selection.REPORT_SHOWN)
    if stdout_is_terminal() and not out.machine:
        fields.remove("url")  # the table keeps titles whole; `--format plain` or `--json` give the links
    emit(out, Result(chosen, fields))


@implements("settings")
def settings(ctx: typer.Context, args: Args) -> None:
    """Every name is resolved first (a miss fails the whole command); no name: every source."""
    from invmap.engines import SETTING_FIELDS, engines_in, settings_of
    from invmap.errors import NotFoundError

    out = output(ctx, args)
    idx = index(ctx)
    columns = ("id", "name", "settings")
    if args.names:
        chosen = [{k: r.get(k) for k in columns} for r in query.resolve_all(idx, args.names)]
    else:
        chosen = idx.records("settings IS NOT NULL", (), columns)
    engines = [e for value in args.engine or () for e in value.split(",") if e.strip()]
    rows = settings_of(chosen, engines)
    if not rows:
        which = ", ".join(r["id"] for r in chosen) if args.names else "this catalog"
        if engines:
            known = engines_in(chosen)
            hint = f" (engines named: {', '.join(known)})" if known else ""
            raise NotFoundError(f"no {', '.join(engines)} settings for {which}{hint}")
        raise NotFoundError(f"no settings for {which}: the catalog names no engine flag for it")
    human = ["id", "engine", "flag", "note"] if not args.names or len(chosen) > 1 else ["engine", "flag", "note"]
    emit(out, Result(rows, out.pick(human, list(SETTING_FIELDS))))


@implements("fields")
def fields_cmd(ctx: typer.Context, args: Args) -> None:
    """List the field names that --fields accepts, with their meanings, wrapped to the terminal."""
    from invmap.fields import EXTRA, FIELDS, SORT_KEYS, TEXT_FIELDS
    from invmap.render.documents import fields_text

    if args.json_flag:
        from invmap.render.machine import to_json

        write(
            to_json(
                [
                    {
                        "name": f.name,
                        "header": f.header,
                        "kind": f.kind.name,
                        "help": f.help,
                        "stored": f.stored and f in FIELDS,
                        "sortable": f.name in SORT_KEYS,
                        "searchable": f.name in TEXT_FIELDS,
                    }
                    for f in (*FIELDS, *EXTRA)
                ]
            )
        )
        return
    width = None
    if stdout_is_terminal():
        from invmap.cli.shared import terminal_size

        width = terminal_size().columns
    write(fields_text((*SOURCE_FIELDS, *(f.name for f in EXTRA)), width))


@implements("triage")
def triage(ctx: typer.Context, args: Args) -> None:
    from invmap import triage as levels
    from invmap.render.triage import triage_view

    words = list(args.symptom or [])
    if not words and not (args.metrics or args.bench):
        from invmap.errors import UsageError

        raise UsageError("triage needs a SYMPTOM, --metrics SOURCE or --bench FILE", hint="invmap triage --help")
    measured = _measure(ctx, args) if args.metrics or args.bench else None  # bad input fails first
    out = output(ctx, args)
    idx = index(ctx)
    if not idx.level_details():
        raise NotFoundError("this catalog has no level data (see 'invmap layers')")
    chosen = filters(ctx, args)
    if words:
        found, notes = levels.triage(idx, words, chosen, args.limit, args.every)
    else:
        found, notes = [], {"excluded": [], "corrected": {}, "hidden": 0, "unmatched": None}
    if stdout_is_terminal() and not out.machine:
        for typed, used in notes["corrected"].items():
            notice(f"read '{typed}' as '{used}'")
        if notes["excluded"]:
            notice("ruled out by the report: " + ", ".join(f"'{x}'" for x in notes["excluded"]))
    if measured is not None:
        _triage_measured(out, idx, chosen, measured, found, notes, words, None if args.every else args.limit)
        return
    columns = ["code", "title", "score", "confidence", "matched"]
    if not found:
        if stdout_is_terminal() and not out.machine:
            notice(f"no level's symptoms, metrics or reports match '{' '.join(args.symptom)}'; see 'invmap layers'")
        emit(out, Result([], columns, data=[] if out.fmt in ("json", "jsonl") else None))
        return
    rows = [{k: t[k] for k in columns} for t in found]
    data = levels.public(found)
    emit(out, Result(rows, columns, data=data, draw=lambda w, c: triage_view(found, notes, w, c)))
    _hidden_footer(out, notes)
    first = found[0]
    if first["sources"] and not any(s["matched"] for s in first["sources"]) and stdout_is_terminal():
        if not out.machine:  # the level fits, but none of its sources speaks of these words
            notice(
                f"no source in the map addresses '{' '.join(words)}' at {first['code']}; "
                "its sources are listed for their questions"
            )


def _hidden_footer(out: Any, notes: dict[str, Any]) -> None:
    if notes["hidden"] and stdout_is_terminal() and not out.machine:
        more = notes["hidden"]
        notice(f"{more} more level{'s' if more > 1 else ''} scored lower (--all)")


def _measure(ctx: typer.Context, args: Args) -> Any:
    """The assessment of --metrics (one or two scrapes) or --bench; usage errors first (exit 2)."""
    from invmap import measure
    from invmap.cli.shared import state
    from invmap.errors import UsageError
    from invmap.measure import view

    sources = list(args.metrics or [])
    if args.metrics and args.bench:
        raise UsageError("give --metrics or --bench, not both (a scrape and a benchmark are read apart)")
    if len(sources) > 2:
        raise UsageError(f"--metrics takes at most two scrapes (before and after), not {len(sources)}")
    if sources.count("-") > 1:
        raise UsageError("--metrics - reads stdin once: give the second scrape as a file or URL")
    if (("-" in sources) or args.bench == "-") and state(ctx).location.is_stdin:
        raise UsageError("stdin is the catalog (--catalog -): the scrape cannot be read from it too")
    seconds = None
    if args.interval is not None:
        try:
            seconds = view.duration(args.interval)
        except ValueError as exc:
            raise UsageError(f"--interval {exc}") from None
        if args.bench or len(sources) == 0:
            raise UsageError("--interval goes with --metrics: one URL to scrape twice, or two scrapes")
        if len(sources) == 1 and not _is_url(sources[0]):
            raise UsageError("--interval with one --metrics needs a URL to scrape twice (a file is one scrape)")
        if seconds > 3600:
            raise UsageError(f"--interval {args.interval} is longer than an hour: scrape twice yourself and give both")
    bound = None
    if args.model is not None or args.gpu is not None or args.bandwidth is not None:
        from invmap import estimate

        if args.model is None:
            raise UsageError("--gpu and --bandwidth go with --model: the bandwidth bound needs the model's bytes")
        if args.bandwidth is not None:
            estimate.check("bandwidth_bytes_per_second", args.bandwidth)
        gpu = estimate.find_gpu(args.gpu) if args.gpu is not None else None
        if args.bandwidth is None and (gpu is None or gpu.bandwidth is None):
            which = f"invmap's table has no confirmed HBM bandwidth for {gpu.display}" if gpu else "no GPU given"
            raise UsageError(f"--model needs a memory bandwidth: {which}; give --bandwidth (bytes per second)")
        bound = measure.DecodeBound(estimate.load_model(args.model), gpu, args.bandwidth)
    if args.bench:
        from invmap.measure import bench

        return measure.assess_bench(bench.read_path(args.bench) if args.bench != "-" else _stdin_bench(), bound)
    scrapes = [_scrape(source) for source in sources]
    if len(sources) == 1 and seconds is not None:  # one URL, scraped again `seconds` later
        import time

        time.sleep(seconds)
        scrapes.append(_scrape(sources[0]))
    return measure.assess_scrapes(scrapes, seconds, bound)


def _is_url(source: str) -> bool:
    return source.lower().startswith(("http://", "https://"))


def _scrape(source: str) -> Any:
    from invmap import measure
    from invmap.measure import scrape

    if _is_url(source):
        return measure.scrape_url(source)
    if source == "-":
        import sys

        from invmap.errors import FileAccessError

        if sys.stdin is None or sys.stdin.closed:
            raise FileAccessError("cannot read the scrape from stdin: it is closed")
        return scrape.read(sys.stdin.buffer, "stdin")
    return scrape.read_path(source)


def _stdin_bench() -> Any:
    import sys

    from invmap.errors import FileAccessError
    from invmap.measure import bench

    if sys.stdin is None or sys.stdin.closed:
        raise FileAccessError("cannot read the benchmark from stdin: it is closed")
    return bench.read(sys.stdin.buffer.read(bench.MAX_BYTES + 1), "stdin")


def _triage_measured(
    out: Any,
    idx: Any,
    chosen: Any,
    measured: Any,
    found: list[Any],
    notes: dict[str, Any],
    words: list[str],
    limit: int | None,
) -> None:
    """Levels from measurements (and words): every note on stderr, the level items on stdout."""
    from invmap import measure
    from invmap import triage as levels
    from invmap.cli.shared import say
    from invmap.render.triage import triage_view

    items, said = measure.combine(idx, measured, found, words, chosen, limit)
    for line in [*measured.warnings, *measured.notes, *said]:
        say(line)
    columns = ["code", "title", "score", "confidence", "matched", "evidence"]
    rows = [{**{k: t[k] for k in columns[:-1]}, "evidence": [e["text"] for e in t["evidence"]]} for t in items]
    data = levels.public(items)
    emit(
        out,
        Result(
            rows,
            columns,
            data=data if items or out.fmt in ("json", "jsonl") else None,
            draw=lambda w, c: triage_view(items, notes, w, c),
        ),
    )
    _hidden_footer(out, notes)
