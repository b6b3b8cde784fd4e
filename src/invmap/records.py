"""Experiment records, format 1.0 as the Inference Engineering field guide defines it: models and
validation. No I/O beyond parsing bytes the CLI hands over.

A record is a JSON object; every problem is reported with its JSON path
(`raw_measurements[0].evidence must match result_type 'estimated'`). Numbers must be finite JSON
numbers: the parser refuses `NaN` and `Infinity`, as the field guide's own validator does.

Also here: reading record files (with a size cap, and only regular files when walking a folder),
finding the records folder, and which catalog sources each record addresses.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from invmap.errors import CatalogError, FileAccessError, UsageError

if TYPE_CHECKING:
    from invmap.index import Index

RECORDS_VAR = "INVMAP_RECORDS"
DEFAULT_FOLDER = "experiments"
MAX_RECORD_VAR = "INVMAP_MAX_RECORD"
DEFAULT_MAX_RECORD = 64 * 1024**2  # bytes; a record is a page of JSON, not a data set
DRAFT_PROMPT = "REPLACE: "  # what `record new` puts before the prompts a record must not keep

SCHEMA_VERSION = "1.0"
RESULT_TYPES: tuple[str, ...] = ("measured", "simulated", "estimated", "reported")
ResultType = Literal["measured", "simulated", "estimated", "reported"]
# The field guide's own rules, with Python's idea of white space (its validator and its JSON Schema
# both use it: U+001C..U+001F count as space there, as they do not in Rust's regex engine).
SOURCE_URL = re.compile(r"^(?![\s\S]*\s)https?://[^/?#\s][^\s]*$")


def _non_empty(text: str) -> str:
    if not text.strip():
        raise PydanticCustomError("record_rule", "must not be empty")
    if text.startswith(DRAFT_PROMPT):  # checked with the other fields, so one run names every problem
        raise PydanticCustomError(
            "record_rule", f"still holds the draft's prompt ({DRAFT_PROMPT.strip()} ...): write your own"
        )
    return text


def _source_url(text: str) -> str:
    if not SOURCE_URL.fullmatch(text):
        raise PydanticCustomError("record_rule", "must be an absolute http(s) URL without spaces")
    return text


NonEmpty = Annotated[str, AfterValidator(_non_empty)]
HttpUrl = Annotated[str, AfterValidator(_source_url)]


class Value(BaseModel):
    """One measurement or derived metric."""

    model_config = ConfigDict(extra="allow", strict=True)

    name: NonEmpty
    value: Union[StrictInt, Annotated[StrictFloat, Field(allow_inf_nan=False)]]
    unit: NonEmpty
    evidence: ResultType
    note: str = ""  # optional, but a string when present (null is refused, as the field guide does)


class Record(BaseModel):
    """An experiment record; keys beyond these are allowed and kept."""

    model_config = ConfigDict(extra="allow", strict=True)

    schema_version: Literal["1.0"]
    record_id: NonEmpty
    title: NonEmpty
    hypothesis: NonEmpty
    result_type: ResultType
    workload: dict[str, Any]
    environment: dict[str, Any]
    configuration: dict[str, Any]
    raw_measurements: Annotated[list[Value], Field(min_length=1)]
    derived_metrics: Annotated[list[Value], Field(min_length=1)]
    conclusion: NonEmpty
    limitations: Annotated[list[NonEmpty], Field(min_length=1)]
    artifacts: dict[str, Any]
    sources: list[HttpUrl]

    @model_validator(mode="after")
    def _consistent(self) -> Record:
        problems = []
        for group in ("raw_measurements", "derived_metrics"):
            for i, value in enumerate(getattr(self, group)):
                if value.evidence != self.result_type:
                    problems.append(f"{group}[{i}].evidence must match result_type '{self.result_type}'")
        if self.result_type == "reported" and not self.sources:
            problems.append("sources needs at least one URL for a 'reported' record")
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse(data: bytes) -> tuple[Any, list[str]]:
    """Bytes -> (the JSON value, problems); problems when it is not UTF-8 JSON."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, [f"not UTF-8 text (invalid byte at offset {exc.start})"]
    if not text.strip():
        return None, ["is empty: a record is a JSON object"]
    try:
        return json.loads(text, parse_constant=_refuse_constant), []
    except json.JSONDecodeError as exc:
        return None, [f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"]
    except (ValueError, RecursionError) as exc:
        return None, [f"invalid JSON: {exc}"]


_MESSAGES = {
    "missing": "is required",
    "string_type": "must be a string",
    "dict_type": "must be a JSON object",
    "list_type": "must be an array",
    "int_type": "must be a JSON number",
    "float_type": "must be a JSON number",
    "finite_number": "must be a finite number",
    "literal_error": None,
    "too_short": "must not be empty",
    "model_type": "must be a JSON object",
}


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and ("[" in part or part in ("int", "float", "constrained-float")):
            continue  # union branch names, not keys
        else:
            out += f".{part}" if out else str(part)
    return out


def problems_of(value: Any) -> list[str]:
    """Every problem of a parsed record, each with its JSON path; [] when valid."""
    if not isinstance(value, dict):
        return [f"must be a JSON object, not {type(value).__name__ if value is not None else 'null'}"]
    try:
        Record.model_validate(value)
    except ValidationError as exc:
        return _describe(exc)
    return []


def _describe(exc: ValidationError) -> list[str]:
    out: list[str] = []
    seen_value_paths: set[str] = set()
    for err in exc.errors(include_url=False):
        path = _path(err["loc"])
        kind = err["type"]
        if kind == "value_error":
            out.extend(str(err["msg"]).removeprefix("Value error, ").split("; "))
            continue
        if kind == "missing" and (path.endswith(".value") or ".value." in path):
            if path not in seen_value_paths:
                seen_value_paths.add(path)
                out.append(f"{path} is missing (a JSON number is required)")
            continue
        if path.endswith(".value") or ".value." in path:
            if path in seen_value_paths:
                continue  # one line for a value that fails both number types
            seen_value_paths.add(path)
            value = err.get("input")
            if isinstance(value, float) and not math.isfinite(value):
                out.append(f"{path} must be a finite number")
            else:
                out.append(f"{path} must be a JSON number, not {_kind(value)}")
            continue
        if kind == "literal_error":
            expected = (err.get("ctx") or {}).get("expected", "")
            out.append(f"{path} must be one of {expected}, not {json.dumps(err.get('input'))[:40]}")
        elif kind == "record_rule":  # _non_empty, _source_url: the message is the rule
            out.append(f"{path} {err['msg']}")
        elif kind in _MESSAGES and _MESSAGES[kind]:
            out.append(f"{path} {_MESSAGES[kind]}")
        else:
            out.append(f"{path}: {err['msg']}")
    return out


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return type(value).__name__


def draft(source: dict[str, Any], result_type: str, record_id: str) -> dict[str, Any]:
    """A deliberately incomplete record citing `source`: `record check` fails until it is filled in."""
    return {
        "schema_version": SCHEMA_VERSION,
        "record_id": record_id,
        "title": f"{source['name']}: {source['question']}",
        "hypothesis": f"{DRAFT_PROMPT}what you expect to observe, testing the open question: {source['question']}",
        "result_type": result_type,
        "workload": {},
        "environment": {},
        "configuration": {},
        "raw_measurements": [],
        "derived_metrics": [],
        "conclusion": "",
        "limitations": [],
        "artifacts": {"source_id": source["id"], "question": source["question"]},
        "sources": [source["url"]] if source.get("url") else [],
    }


# --- files and folders ---------------------------------------------------------------------------


def max_record() -> int:
    """`$INVMAP_MAX_RECORD` in bytes (an optional K, M or G), else 64 MiB."""
    from invmap.location import parse_size

    return parse_size(os.environ.get(MAX_RECORD_VAR, ""), DEFAULT_MAX_RECORD)


def read(path: str) -> bytes:
    """A record file's bytes (stdin for `-`), at most `max_record()` of them: a path the user names is
    read as given (a FIFO too), within the cap. CatalogError (exit 3) when it cannot be read."""
    from invmap.inputfile import named_failures
    from invmap.location import read_capped
    from invmap.reading import read_stdin

    limit = max_record()
    if path == "-":
        data = read_stdin("a record", limit)
    else:
        with (
            named_failures(path, "is a directory, not a record file", _unreadable_record(path)),
            open(path, "rb") as handle,
        ):
            if stat.S_ISDIR(os.fstat(handle.fileno()).st_mode):
                raise IsADirectoryError
            data = read_capped(handle, limit)
    if len(data) > limit:
        raise CatalogError(path, [f"larger than {limit:,} bytes (${MAX_RECORD_VAR} sets the limit)"])
    return data


def _unreadable_record(path: str) -> Callable[[OSError], CatalogError]:
    return lambda exc: CatalogError(path, [f"cannot be read: {exc.strerror or exc}"])


def check_file(path: str) -> tuple[Any, list[str]]:
    """(the parsed record, its problems) of one file."""
    try:
        value, problems = parse(read(path))
    except CatalogError as exc:
        return None, exc.problems
    return value, problems or problems_of(value)


def records_folder(named: str | None, default: str | None = None) -> Path | None:
    """The records folder in effect: named (must exist), else $INVMAP_RECORDS (must exist), else
    `default` if it exists, else None."""
    for value, source in ((named, "records folder"), (os.environ.get(RECORDS_VAR) or None, f"${RECORDS_VAR}")):
        if value is not None:
            folder = Path(value)
            try:
                is_dir = folder.is_dir()
            except OSError as exc:
                raise FileAccessError(f"cannot read {value} ({source}): {exc.strerror or exc}") from None
            if not is_dir:
                raise UsageError(f"no such folder: {value} ({source})")
            return folder
    if default is not None and Path(default).is_dir():
        return Path(default)
    return None


def walk(folder: Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Every `*.json` regular file under `folder`, sorted, and what was skipped (a FIFO, a device, a
    link to one, a folder that cannot be read) with why. Iterative: no depth is too deep, and linked
    folders are not followed (no loops)."""
    found: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    pending = [str(folder)]
    while pending:
        where = pending.pop()
        try:
            entries = list(os.scandir(where))
        except OSError as exc:
            skipped.append((Path(where), f"cannot be read: {exc.strerror or exc}"))
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                    continue
                if not entry.name.endswith(".json"):
                    continue
                info = os.stat(entry.path)  # through a link: what it points to
            except OSError as exc:
                skipped.append((Path(entry.path), f"cannot be read: {exc.strerror or exc}"))
                continue
            if stat.S_ISREG(info.st_mode):
                found.append(Path(entry.path))
            else:
                skipped.append((Path(entry.path), "not a regular file (a FIFO, a device or a folder)"))
    return sorted(found), sorted(skipped)


def scan(idx: Index, folder: Path) -> tuple[list[dict[str, Any]], list[tuple[Path, str]]]:
    """Every record under `folder`: its id, title, type, validity and the catalog sources its `sources`
    URLs identify, as `show URL` would; and what was skipped."""
    from invmap.identifiers import keys_for_query

    paths, skipped = walk(folder)
    found = []
    for path in paths:
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
                "problem": problems[0] if problems else None,  # the first: a table's cell
                "problems": problems,
                "addresses": list(dict.fromkeys(addresses)),
                "sources": [u for u in urls if isinstance(u, str)],
            }
        )
    return found, skipped


# Result types that address a question without closing it: an estimate or a simulation recreates the
# mechanism under declared assumptions, and is not a measurement of it (each marked so in a table).
OPEN_TYPES: dict[str, str] = {"estimated": "estimate", "simulated": "simulated"}


def addressing(
    idx: Index, folder: Path
) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, dict[str, list[str]]]]:
    """(source id -> the record_ids of the valid records that cite it, source id -> the invalid ones,
    result type -> source id -> the valid records among them of that type, for each of `OPEN_TYPES`).
    Only a valid record addresses a question; an estimate or a simulation addresses it but is not a
    measurement, so it leaves it open."""
    valid: dict[str, list[str]] = {}
    invalid: dict[str, list[str]] = {}
    leaving_open: dict[str, dict[str, list[str]]] = {kind: {} for kind in OPEN_TYPES}
    for r in scan(idx, folder)[0]:
        rid = r["record_id"] or Path(r["path"]).stem
        for source_id in r["addresses"]:
            (valid if r["valid"] else invalid).setdefault(source_id, []).append(rid)
            if r["valid"] and r["result_type"] in OPEN_TYPES:
                leaving_open[r["result_type"]].setdefault(source_id, []).append(rid)
    return valid, invalid, leaving_open


def with_records(
    rows: list[dict[str, Any]], idx: Index, folder: Path | None, *, open_only: bool = False, marked: bool = False
) -> list[dict[str, Any]]:
    """Source rows (`questions`) joined to the records of `folder` that address them: each row gains
    `records` (the valid ones' ids), `invalid_records`, `estimated_records` and `simulated_records`
    (no folder: none). `open_only` keeps the rows no measurement addresses (an estimate or a
    simulation is not one: the question stays open); `marked` writes `records` for a person:
    estimates, simulations and invalid records said after the id."""
    valid, invalid, leaving_open = (
        addressing(idx, folder) if folder is not None else ({}, {}, {k: {} for k in OPEN_TYPES})
    )
    for r in rows:
        r["records"] = valid.get(r["id"], [])
        r["invalid_records"] = invalid.get(r["id"], [])
        for kind in OPEN_TYPES:
            r[f"{kind}_records"] = leaving_open[kind].get(r["id"], [])
    if open_only:
        rows = [r for r in rows if not set(r["records"]).difference(*(r[f"{k}_records"] for k in OPEN_TYPES))]
    if marked:
        for r in rows:
            mark = {rid: f"{rid} ({word})" for kind, word in OPEN_TYPES.items() for rid in r[f"{kind}_records"]}
            r["records"] = [mark.get(rid, rid) for rid in r["records"]] + [
                f"{rid} (invalid)" for rid in r["invalid_records"]
            ]
    return rows


def write_file(target: str, text: str, record_id: str, *, force: bool = False) -> None:
    """A record's JSON written to `target` (a file path, never a folder); a missing folder is refused
    as every writer refuses it (exit 2, saying how to make it); an existing file only with `force`."""
    import shlex

    from invmap import writers

    parent = Path(target).parent
    if target.endswith("/") or Path(target).is_dir():
        raise UsageError(f"{target} is a folder: give a file path such as {Path(target) / (record_id + '.json')}")
    if not parent.is_dir() and not parent.is_symlink():
        raise UsageError(f"no such directory: {parent}", hint=f"make it first: mkdir -p {shlex.quote(str(parent))}")
    writers.write_output(target, text, force=force)
