"""Query commands: triage, list, show, questions, search, define, fields (declared in `options.py`)."""

from __future__ import annotations

from typing import Any

import typer

from invmap import query
from invmap.cli.build import Args, implements
from invmap.cli.shared import emit, empty_notice, filters, index, notice, output, say, state
from invmap.errors import NotFoundError
from invmap.fields import SEARCH_RESULT_FIELDS, SOURCE_FIELDS
from invmap.render import Result
from invmap.text import plural


@implements("list")
def list_(ctx: typer.Context, args: Args) -> None:
    out = output(ctx, args)
    chosen = filters(ctx, args)
    fields = out.pick(("id", "name", "year", "layer", "mechanism"), SOURCE_FIELDS)
    columns = [*fields, "url"] if out.links and "url" not in fields else fields  # a table links each name
    records = query.lazy_selection(index(ctx), chosen, columns, args.sort, args.reverse, args.limit)
    _layer_gaps(ctx, args.layer)
    if not records:
        empty_notice(out, chosen)
    emit(out, Result(records, fields), show_all=args.show_all)


def _layer_gaps(ctx: typer.Context, values: list[str] | None) -> None:
    """`--layer quantization`: the level whose scope names it is listed, and stderr says that no source
    in the map is about it (the level's `not_covered`) and what that level's sources are about."""
    from invmap import covering
    from invmap.vocabulary import LAYER_CODES

    for value in values or ():
        if value.strip().upper() not in LAYER_CODES and not value.strip().isdigit():
            for line in covering.named_gaps(index(ctx), value):
                say(line)


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
    out = output(ctx, args)
    chosen = filters(ctx, args)
    idx = index(ctx)
    human = ["id", "name", "layer", "question"]
    machine = ["id", "name", "layer", "layers", "question"]
    # experiment records (and pydantic) only when asked for
    if args.records_dir or args.open_only or state(ctx).env.get("INVMAP_RECORDS"):
        from invmap import records as experiment

        folder = experiment.records_folder(
            args.records_dir, default=experiment.DEFAULT_FOLDER if args.open_only else None
        )
    else:
        folder = None
    if folder is not None or args.open_only:
        rows = list(query.lazy_selection(idx, chosen, SOURCE_FIELDS, args.sort, args.reverse))
        marked = folder is not None and not out.machine  # the table and plain lines mark them, and invalid ones
        records: Any = experiment.with_records(rows, idx, folder, open_only=args.open_only, marked=marked)[: args.limit]
        if folder is not None:
            human.append("records")
            machine += ["records", "invalid_records", "estimated_records", "simulated_records"]
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
    if fixes and state(ctx).env.stdout_isatty and not out.machine:
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


def _expanded(entry: dict) -> str:
    """A definition led by the term's expansion, when it has one (`time to first token: Delay ...`)."""
    expansion = entry.get("expansion")
    return f"{expansion}: {entry['definition']}" if expansion else entry["definition"]


@implements("define")
def define(ctx: typer.Context, args: Args) -> None:
    from invmap import glossary

    out = output(ctx, args)
    entries = index(ctx).glossary()
    chosen = glossary.lookup(entries, args.terms) if args.terms else entries
    if not entries and not out.machine:
        notice("this catalog has no [glossary]")
    fields = ["term", "expansion", "definition"] if not out.machine else ["term", "expansion", "aliases", "definition"]
    if out.fmt == "table" and state(ctx).env.stdout_isatty:  # few terms have one: no column for expansions
        chosen = [{**e, "definition": _expanded(e)} for e in chosen]
        fields = ["term", "definition"]
    emit(out, Result(chosen, fields))


@implements("reports")
def reports_cmd(ctx: typer.Context, args: Args) -> None:
    from invmap import query as selection

    out = output(ctx, args)
    from invmap.query.symptom_reports import level_shown

    chosen = selection.reports(index(ctx), args.layer, args.engine, args.source)
    to_person = state(ctx).env.stdout_isatty and not out.machine
    if not chosen and to_person:
        notice("no report matches")
    fields = list(selection.REPORT_KEYS if out.machine else selection.REPORT_SHOWN)
    if not out.machine:
        chosen = [{**r, "level": level_shown(r)} for r in chosen]
    if to_person:
        fields.remove("url")  # the table keeps titles whole; `--format plain` or `--json` give the links
    emit(out, Result(chosen, fields))


@implements("settings")
def settings(ctx: typer.Context, args: Args) -> None:
    """Every name is resolved first (a miss fails the whole command); no name: every source."""
    from invmap.engines import SETTING_FIELDS, SETTING_SHOWN, engines_in, settings_of

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
    shown = [c for c in SETTING_SHOWN if c in ("engine", "flag", "version", "note") or any(r.get(c) for r in rows)]
    human = ["id", *shown] if not args.names or len(chosen) > 1 else shown
    fields = out.pick(human, list(SETTING_FIELDS))
    emit(out, Result(rows, fields, draw=_settings_draw(out, rows, fields)))


def _settings_draw(out: Any, rows: list[dict[str, Any]], fields: list[str]) -> Any:
    """`settings` on a terminal: grouped by source and engine (render.settings); none for a machine
    format or fields of one's own."""
    if out.machine or out.fields is not None:
        return None

    def draw(width: int, color: bool) -> str:
        from invmap.render.settings import settings_text

        return settings_text(rows, fields, width)

    return draw


@implements("fields")
def fields_cmd(ctx: typer.Context, args: Args) -> None:
    """List the field names that --fields accepts, with their meanings, wrapped to the terminal."""
    from invmap.fields import EXTRA, FIELDS, SORT_KEYS, TEXT_FIELDS
    from invmap.render.documents import fields_text

    out = output(ctx, args)
    rows = [
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
    names = (*SOURCE_FIELDS, *(f.name for f in EXTRA))
    wrapped = state(ctx).env.stdout_isatty  # a terminal's width; a pipe gets whole lines
    emit(out, Result(rows, list(rows[0]), data=rows, draw=lambda w, c: fields_text(names, w if wrapped else None)))


@implements("triage")
def triage(ctx: typer.Context, args: Args) -> None:
    from invmap import diagnose

    run = state(ctx)
    opts = diagnose.TriageOptions(
        words=list(args.symptom or []),
        metrics=list(args.metrics or []),
        bench=list(args.bench or []),
        interval=args.interval,
        model=args.model,
        gpu=args.gpu,
        bandwidth=args.bandwidth,
        efficiency=args.efficiency,
        limit=args.limit,
        every=args.every,
        verbose=args.verbose,
        catalog_on_stdin=run.location.is_stdin,
    )
    measured = diagnose.measure_of(opts, run.env.stdin)  # bad input fails first
    out = output(ctx, args)
    idx = index(ctx)
    found = diagnose.run(idx, filters(ctx, args), opts, measured)
    if found.notes.get("vague") and found.found and measured is None:
        from invmap.covering import VAGUE

        say(f"a vague symptom, so every level is a guess: {VAGUE}")
    if found.notes.get("unplaced") and found.found and measured is None:
        from invmap.covering import UNPLACED

        say(f"a failure with no component named, so every level is a guess: {UNPLACED}")
    to_person = run.env.stdout_isatty and not out.machine
    if to_person:
        for typed, used in found.notes["corrected"].items():
            notice(f"read '{typed}' as '{used}'")
        if found.notes["excluded"]:
            notice("ruled out by the report: " + ", ".join(f"'{x}'" for x in found.notes["excluded"]))
    if measured is not None:
        _triage_measured(out, found)
    else:
        _triage_words(out, found, opts.words, to_person)
    if to_person and (measured is not None or found.found):
        _triage_footer(found)


def _triage_footer(found: Any) -> None:
    """After the levels, for a person: how many more scored lower (what the map lacks for the words
    is each level's `gap` line)."""
    if found.notes["hidden"]:
        more = found.notes["hidden"]
        notice(f"{plural(more, 'more level')} scored lower (--all)")


def _coverage_cells(level: dict[str, Any]) -> dict[str, Any]:
    """A level's coverage as two cells of a table, TSV or CSV row: its status and uncovered terms."""
    covered = level.get("coverage") or {"status": "none", "uncovered": []}
    return {"coverage": covered["status"], "uncovered": list(covered["uncovered"])}


def _triage_words(out: Any, found: Any, words: list[str], to_person: bool) -> None:
    """Levels from words: the level items on stdout; no level, a notice on a terminal."""
    from invmap import triage as levels
    from invmap.render.triage import triage_view

    columns = ["code", "title", "score", "confidence", "matched", "coverage", "uncovered"]
    if not found.found:
        if to_person:
            notice(f"no level's symptoms, metrics or reports match '{' '.join(words)}'; see 'invmap layers'")
        emit(out, Result([], columns, data=[] if out.fmt in ("json", "jsonl") else None))
        return
    rows = [{**{k: t[k] for k in columns[:5]}, **_coverage_cells(t)} for t in found.found]
    draw = lambda w, c: triage_view(found.found, found.notes, w, c)  # noqa: E731
    emit(out, Result(rows, columns, data=levels.public(found.found), draw=draw))


def _triage_measured(out: Any, found: Any) -> None:
    """Levels from measurements (and words): every note on stderr, the level items on stdout."""
    from invmap import triage as levels
    from invmap.render.triage import triage_view

    for line in [*found.measured.warnings, *found.measured.notes, *found.said]:
        say(line)
    items = found.items
    # The evidence keeps its place (the sixth cell) from before coverage was added after it.
    columns = ["code", "title", "score", "confidence", "matched", "evidence", "coverage", "uncovered"]
    rows = [
        {**{k: t[k] for k in columns[:5]}, "evidence": [e["text"] for e in t["evidence"]], **_coverage_cells(t)}
        for t in items
    ]
    data = levels.public(items) if items or out.fmt in ("json", "jsonl") else None
    emit(out, Result(rows, columns, data=data, draw=lambda w, c: triage_view(items, found.notes, w, c)))
