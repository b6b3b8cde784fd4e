"""Experiment records: record new, record check, records; and which records address which source."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from invmap import query
from invmap.cli.querying import examples
from invmap.cli.shared import (
    ColorOpt,
    FormatOpt,
    JsonOpt,
    NoPagerOpt,
    SourceArg,
    emit,
    index,
    notice,
    output,
    say,
    write,
)
from invmap.errors import CatalogError, UsageError, WriteError
from invmap.render import Result

if TYPE_CHECKING:
    from invmap.index import Index

RECORDS_VAR = "INVMAP_RECORDS"
DEFAULT_FOLDER = "experiments"

commands = typer.Typer()
record = typer.Typer(help="Draft and check experiment records (format 1.0).", no_args_is_help=True)
commands.add_typer(record, name="record")


def _complete_result_type(incomplete: str) -> list[tuple[str, str]]:
    from invmap import complete
    from invmap.records import RESULT_TYPES

    return complete.choices(RESULT_TYPES, incomplete)


@record.command(
    "new",
    epilog=examples(
        "invmap record new pagedattention -o experiments/paged-kv.json",
        "invmap record new mooncake --result-type simulated",
    ),
)
def record_new(
    ctx: typer.Context,
    name: SourceArg,
    output_path: Annotated[
        Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout.")
    ] = None,
    result_type: Annotated[
        str,
        typer.Option(
            "--result-type",
            metavar="TYPE",
            autocompletion=_complete_result_type,
            help="measured, simulated, estimated or reported.",
        ),
    ] = "measured",
    record_id: Annotated[
        Optional[str], typer.Option("--id", metavar="ID", help="The record_id. Default: SOURCE-ID-YYYY-MM-DD.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite FILE if it exists.")] = False,
) -> None:
    """A draft record citing one source and carrying its open question; fill it in, then 'record check'.
    The folder of FILE is created if it does not exist."""
    import datetime as dt

    from invmap import catalog as catalog_io
    from invmap.records import RESULT_TYPES, draft
    from invmap.render import to_json

    if result_type not in RESULT_TYPES:
        raise UsageError(f"unknown result type '{result_type}' (valid: {', '.join(RESULT_TYPES)})")
    source = query.resolve(index(ctx), name)
    rid = record_id if record_id is not None else f"{source['id']}-{dt.date.today().isoformat()}"
    if not rid.strip():
        raise UsageError("--id needs a value")
    text = to_json(draft(source, result_type, rid))
    if output_path is None or output_path == "-":
        write(text)
        return
    parent = Path(output_path).parent
    if not parent.exists():  # `-o experiments/x.json` in a fresh project: the records folder is made
        try:
            parent.mkdir(parents=True)
        except OSError as exc:
            raise WriteError(f"cannot create {parent}: {exc.strerror or exc}") from None
    catalog_io.write_output(output_path, text, force=force)
    write(f"Wrote {output_path}: a draft for {source['id']}; fill it in, then 'invmap record check {output_path}'\n")


def _read(path: str) -> bytes:
    import sys

    if path == "-":
        try:
            return sys.stdin.buffer.read()
        except (OSError, ValueError, AttributeError) as exc:
            raise WriteError(f"cannot read a record from stdin: {exc}") from None
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise CatalogError(path, ["no such file"]) from None
    except IsADirectoryError:
        raise CatalogError(path, ["is a directory, not a record file"]) from None
    except OSError as exc:
        raise CatalogError(path, [f"cannot be read: {exc.strerror or exc}"]) from None


def check_file(path: str) -> tuple[Any, list[str]]:
    from invmap import records

    try:
        value, problems = records.parse(_read(path))
    except CatalogError as exc:
        return None, exc.problems
    return value, problems or records.problems_of(value)


@record.command(
    "check", epilog=examples("invmap record check experiments/*.json", "invmap record check - < draft.json --json")
)
def record_check(
    files: Annotated[list[str], typer.Argument(metavar="FILE...", help="Record files ('-' reads stdin).")],
    json_flag: JsonOpt = False,
) -> None:
    """Validate experiment records; every problem with its JSON path (exit 0 when all valid, 3 when not)."""
    from invmap.render import to_json
    from invmap.safe import escape

    results = []
    for path in files:
        _, problems = check_file(path)
        results.append({"path": path, "valid": not problems, "problems": problems})
    if json_flag:
        write(to_json(results))
    else:
        for r in results:
            if r["valid"]:
                write(f"{escape(r['path'])}: ok\n")
            else:
                for problem in r["problems"]:
                    say(f"{r['path']}: {problem}")
    if any(not r["valid"] for r in results):
        raise typer.Exit(3)


def records_folder(named: str | None, default: str | None = None) -> Path | None:
    """The records folder in effect: named (must exist), else $INVMAP_RECORDS (must exist), else
    `default` if it exists, else None."""
    for value, source in ((named, "records folder"), (os.environ.get(RECORDS_VAR) or None, f"${RECORDS_VAR}")):
        if value is not None:
            folder = Path(value)
            if not folder.is_dir():
                raise UsageError(f"no such folder: {value} ({source})")
            return folder
    if default is not None and Path(default).is_dir():
        return Path(default)
    return None


def scan(idx: Index, folder: Path) -> list[dict[str, Any]]:
    """Every `*.json` under `folder` (recursively, sorted): its id, title, type, validity and the
    catalog sources its `sources` URLs identify, as `show URL` would."""
    from invmap.identifiers import keys_for_query

    found = []
    for path in sorted(folder.rglob("*.json")):
        value, problems = check_file(str(path))
        data = value if isinstance(value, dict) else {}
        addresses: list[str] = []
        urls = data.get("sources") if isinstance(data.get("sources"), list) else []
        for url in urls:
            keys = keys_for_query(url) if isinstance(url, str) else None
            if keys:
                addresses += [r["id"] for r in idx.at(idx.lookup(keys))]
        found.append(
            {
                "path": str(path),
                "record_id": data.get("record_id") if isinstance(data.get("record_id"), str) else None,
                "title": data.get("title") if isinstance(data.get("title"), str) else None,
                "result_type": data.get("result_type") if isinstance(data.get("result_type"), str) else None,
                "valid": not problems,
                "addresses": list(dict.fromkeys(addresses)),
                "sources": [u for u in urls if isinstance(u, str)],
            }
        )
    return found


def addressed_by(idx: Index, folder: Path) -> dict[str, list[str]]:
    """source id -> the record_ids of the records that address it."""
    out: dict[str, list[str]] = {}
    for r in scan(idx, folder):
        for source_id in r["addresses"]:
            out.setdefault(source_id, []).append(r["record_id"] or Path(r["path"]).stem)
    return out


@commands.command(
    "records", epilog=examples("invmap records", "invmap records experiments --json | jq '.[].addresses'")
)
def records_cmd(
    ctx: typer.Context,
    folder: Annotated[
        Optional[str], typer.Argument(metavar="DIR", help=f"Default: ${RECORDS_VAR}, else ./{DEFAULT_FOLDER}.")
    ] = None,
    fmt: FormatOpt = None,
    json_flag: JsonOpt = False,
    color: ColorOpt = None,
    no_pager: NoPagerOpt = False,
) -> None:
    """List experiment records: id, title, result type, whether valid, and the sources each addresses."""
    out = output(ctx, fmt, json_flag, None, color, allowed=(), no_pager=no_pager)
    where = records_folder(folder, default=DEFAULT_FOLDER)
    found = scan(index(ctx), where) if where is not None else []
    if not found:
        notice(f"no records in {where or DEFAULT_FOLDER}")
    fields = ["record_id", "title", "result_type", "valid", "addresses"]
    if out.fmt in ("json", "jsonl", "csv", "tsv"):
        fields = ["path", "record_id", "title", "result_type", "valid", "addresses", "sources"]
    emit(out, Result(found, fields))
