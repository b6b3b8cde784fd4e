"""One estimate's result: the dictionary that is the `--json` object and what the text and the
experiment record are drawn from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from invmap.estimate.config import Model
from invmap.estimate.defaults import LABEL
from invmap.estimate.gpus import Gpu
from invmap.estimate.inputs import Inputs
from invmap.estimate.units import human


@dataclass
class Said:
    """An estimate's words: its formulas with the numbers put in, what it assumes, what it leaves out,
    and notes."""

    formulas: list[str]
    assumptions: list[str]
    limitations: list[str]
    notes: list[str]


def estimate_result(
    kind: str,
    inputs: Inputs,
    model: Model | None,
    gpu: Gpu | None,
    results: dict[str, Any],
    units: dict[str, str],
    said: Said,
    workload: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The result of estimate `kind`: results with their units and readable forms, every input with
    where it came from, and what is said of them (a note first when a field guide default was used)."""
    defaults = inputs.defaults_used
    notes = said.notes
    if defaults:
        notes = [
            "Some inputs are the field guide's defaults (marked 'from default'), which describe a made-up model, "
            "device and workload: give --model and --gpu, or the options, for a real one.",
            *notes,
        ]
    return {
        "estimate": kind,
        "evidence": LABEL,
        "model": model.summary() if model is not None else None,
        "gpu": gpu.summary() if gpu is not None else None,
        "configuration": {i["name"]: i["value"] for i in inputs.items},
        "inputs": inputs.items,
        "workload": workload,
        "results": results,
        "units": units,
        "human": {name: human(value, units[name]) for name, value in results.items()},
        **(extra or {}),
        "formulas": said.formulas,
        "assumptions": said.assumptions,
        "limitations": said.limitations,
        "notes": notes,
        "defaults_used": defaults,
    }
