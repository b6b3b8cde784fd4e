"""Experiment records, format 1.0 as the Inference Engineering field guide defines it: models and
validation. No I/O beyond parsing bytes the CLI hands over.

A record is a JSON object; every problem is reported with its JSON path
(`raw_measurements[0].evidence must match result_type 'estimated'`). Numbers must be finite JSON
numbers: the parser refuses `NaN` and `Infinity`, as the field guide's own validator does.
"""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any, Literal, Union

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

SCHEMA_VERSION = "1.0"
RESULT_TYPES: tuple[str, ...] = ("measured", "simulated", "estimated", "reported")
ResultType = Literal["measured", "simulated", "estimated", "reported"]
# The field guide's own rules, with Python's idea of white space (its validator and its JSON Schema
# both use it: U+001C..U+001F count as space there, as they do not in Rust's regex engine).
SOURCE_URL = re.compile(r"^(?![\s\S]*\s)https?://[^/?#\s][^\s]*$")


def _non_empty(text: str) -> str:
    if not text.strip():
        raise PydanticCustomError("record_rule", "must not be empty")
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
        "hypothesis": f"REPLACE: what you expect to observe, testing the open question: {source['question']}",
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
